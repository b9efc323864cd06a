"""packaging/check_system.py: installs the missing Qt packages where the user may (root, password-less sudo),
and only prints the apt-get line where not. dpkg-query, apt-get and sudo are small fakes on PATH."""
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "packaging" / "check_system.py"
FAKES = {
    "dpkg-query": 'grep -qx "$3" "$STATE" && printf "install ok installed"; exit 0',
    "apt-get": 'echo "apt-get $*" >> "$LOG"; if [ "$1" = install ]; then shift 4; '
               'for p in "$@"; do echo "$p" >> "$STATE"; done; fi',
    "sudo": 'if [ "$2" = true ]; then exit "$SUDO_OK"; fi; echo "sudo" >> "$LOG"; shift; exec "$@"',
}


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A Debian machine where only libgl1 is installed; returns (module, state file, log file)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text("#!/bin/sh\n" + body + "\n")
        (bin_dir / name).chmod(0o755)
    state, log = tmp_path / "installed", tmp_path / "log"
    state.write_text("libgl1\n")
    log.write_text("")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("STATE", str(state))
    monkeypatch.setenv("LOG", str(log))
    spec = importlib.util.spec_from_file_location("check_system", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module.sys, "platform", "linux")
    return module, state, log


def _wanted(module):
    return set(module.QT_IMPORT + module.QT_WINDOW)


def test_root_installs_what_is_missing(machine, monkeypatch, capsys):
    module, state, log = machine
    monkeypatch.setattr(module.os, "geteuid", lambda: 0)
    assert module.main() == 0
    assert set(state.read_text().split()) == _wanted(module)
    calls = log.read_text().splitlines()
    assert calls[0] == "apt-get update -qq" and "libgl1" not in calls[1].split() and "sudo" not in calls
    assert "fonts-wqy-microhei" in calls[1].split()


def test_password_less_sudo_installs_through_sudo(machine, monkeypatch):
    module, state, log = machine
    monkeypatch.setattr(module.os, "geteuid", lambda: 1000)
    monkeypatch.setenv("SUDO_OK", "0")
    assert module.main() == 0
    assert set(state.read_text().split()) == _wanted(module)
    assert log.read_text().splitlines().count("sudo") == 2


def test_a_user_who_cannot_install_is_told_the_line(machine, monkeypatch, capsys):
    module, state, log = machine
    monkeypatch.setattr(module.os, "geteuid", lambda: 1000)
    monkeypatch.setenv("SUDO_OK", "1")
    assert module.main() == 2
    assert log.read_text() == "" and state.read_text() == "libgl1\n"
    err = capsys.readouterr().err
    assert "sudo apt-get install -y libegl1 libxkbcommon0" in err and "fonts-wqy-microhei" in err


def test_nothing_missing_runs_nothing(machine, monkeypatch):
    module, state, log = machine
    state.write_text("\n".join(_wanted(module)) + "\n")
    monkeypatch.setattr(module.os, "geteuid", lambda: 0)
    assert module.main() == 0 and log.read_text() == ""


def test_the_app_names_a_missing_window_library_with_the_same_line_as_make_run(machine, monkeypatch, capsys):
    """`python -m explorer` without libxcb-cursor0: the apt line `make run` prints, exit 2, before Qt aborts."""
    from explorer import cli, system_check

    module, state, log = machine
    state.write_text("\n".join(set(module.QT_IMPORT + module.QT_WINDOW) - {"libxcb-cursor0"}) + "\n")
    monkeypatch.setattr(module.os, "geteuid", lambda: 1000)
    monkeypatch.setenv("SUDO_OK", "1")
    assert module.main() == 0
    make_run_line = capsys.readouterr().err.strip()
    assert make_run_line.endswith("sudo apt-get install -y libxcb-cursor0")

    # The same machine as the app sees it: every window library loads but libxcb-cursor's.
    monkeypatch.setattr(system_check, "_loads", lambda soname: soname != "libxcb-cursor.so.0")
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setenv("DISPLAY", ":0")
    assert cli.main([]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(make_run_line)


def test_offscreen_and_wayland_starts_need_no_xcb_library(monkeypatch):
    from explorer import system_check

    monkeypatch.setattr(system_check, "_loads", lambda soname: False)
    assert system_check.window_problem({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}) is None
    assert system_check.window_problem({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}) is None
    assert "libxcb-cursor0" in system_check.window_problem({"DISPLAY": ":0"})


def test_the_window_libraries_are_the_window_packages():
    from explorer import system_check

    assert list(system_check.WINDOW_LIBRARIES) == system_check.QT_WINDOW
