"""Running a case as a person without privileges, so that a file's mode is obeyed even when the tests run as
root (as in a container, or CI), where chmod 000 does not stop a read.

Root keeps its uid, and so still owns the case's files, but gives up every capability: without
CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH the kernel checks a file's owner bits for root as for anyone, so a
folder of mode 000 cannot be read, searched or written. The bounding set is emptied first, so that a program
the case starts (pip, ffmpeg) cannot take the capabilities back. A process that is not root has none to
give up: its chmod already binds it. (Unlike a switch to `nobody`, the case's folders, made 0700 by pytest,
stay reachable, and it works in a forked child.)
"""
from __future__ import annotations

import ctypes
import os

_PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522
_LAST_CAPABILITY = 63


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


def drop_privileges() -> None:
    """Give up every capability (root) or do nothing (anyone else); raises OSError if the kernel refuses."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in range(_LAST_CAPABILITY + 1):
        # EINVAL: no such capability; EPERM: no CAP_SETPCAP to drop it with (a container that withholds it); then
        # only a program the case starts (pip) could take them back, and the store is checked before pip runs
        if libc.prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0) != 0 and ctypes.get_errno() not in (1, 22):
            raise OSError(ctypes.get_errno(), f"cannot drop capability {capability} from the bounding set")
    empty = (ctypes.c_uint32 * 6)()          # effective, permitted, inheritable: two 32-bit words each
    if libc.capset(ctypes.byref(_CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)), ctypes.byref(empty)) != 0:
        raise OSError(ctypes.get_errno(), "cannot give up root's capabilities")


def modes_obeyed() -> bool:
    """Whether this process is stopped by a file's mode (true after drop_privileges)."""
    with open("/proc/self/status", encoding="ascii") as status:
        effective = next(line for line in status if line.startswith("CapEff:"))
    return os.geteuid() != 0 or int(effective.split()[1], 16) == 0


def writable_again(folder) -> None:
    """Give the owner back its permissions under `folder` (a case chmods things; its folder must be removable).
    os.walk descends into a folder after it is yielded, so a folder opened here is then walked."""
    os.chmod(folder, 0o700)
    for root, folders, names in os.walk(folder):
        for name, mode in [(name, 0o700) for name in folders] + [(name, 0o600) for name in names]:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, mode)
