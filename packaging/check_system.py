"""Find the system packages Qt needs and install the missing ones where this user may.

Run by `make run` and `make test` before anything else; the package lists and the lines printed
are the app's own (explorer/system_check.py), so the app's start names a missing library the same
way. On Debian/Ubuntu it checks the packages with dpkg. When some are missing and the user is root,
or has password-less sudo (`sudo -n true` succeeds), it installs them with apt-get, as the README's
two commands promise; otherwise it prints the apt-get line to run and exits 2. Elsewhere it checks
the shared libraries.
"""
from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from explorer.system_check import QT_IMPORT, QT_WINDOW, install_line, window_line  # noqa: E402 (the app's own list)

# Library names to look for where dpkg is absent.
LIBRARIES = ["EGL", "GL", "xkbcommon", "fontconfig", "freetype", "dbus-1", "glib-2.0"]


def missing_debian_packages(packages: list[str]) -> list[str]:
    missing = []
    for name in packages:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Status}", name],
                             capture_output=True, text=True)
        if "install ok installed" not in out.stdout:
            missing.append(name)
    return missing


def installer_prefix() -> list[str] | None:
    """[] for root, ["sudo", "-n"] where sudo needs no password, None where this user cannot install."""
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n"]
    return None


def install(packages: list[str], prefix: list[str]) -> bool:
    """apt-get update, then install the packages without questions; True when apt-get succeeded."""
    print("Installing the system packages Qt needs: " + " ".join(packages), file=sys.stderr, flush=True)
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        if subprocess.run(prefix + command, env=environment).returncode != 0:
            print("apt-get failed: " + " ".join(prefix + command), file=sys.stderr)
            return False
    return True


def check_debian() -> int:
    needed, window = missing_debian_packages(QT_IMPORT), missing_debian_packages(QT_WINDOW)
    prefix = installer_prefix() if needed or window else None
    if prefix is not None and install(needed + window, prefix):
        needed, window = missing_debian_packages(QT_IMPORT), missing_debian_packages(QT_WINDOW)
    if window:
        print(window_line(window), file=sys.stderr)
    if needed:
        print("Qt needs system packages that are missing. Install them with:\n  " + install_line(needed),
              file=sys.stderr)
        return 2
    return 0


def main() -> int:
    if not sys.platform.startswith("linux"):
        return 0
    if shutil.which("dpkg-query"):
        return check_debian()
    absent = [lib for lib in LIBRARIES if ctypes.util.find_library(lib) is None]
    if absent:
        print("Qt needs these shared libraries, which were not found: " + ", ".join(absent)
              + " (on Debian: apt-get install " + " ".join(QT_IMPORT) + ")", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
