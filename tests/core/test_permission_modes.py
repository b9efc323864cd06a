"""Writes and reads that file modes forbid, in a process that the modes bind even under root (the tests run as
root in a container; tests/boundary/privileges.py gives up root's capabilities): a read-only file is never
replaced, a folder that cannot be searched or written is named, and the child really was stopped by a mode."""
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.boundary.privileges import drop_privileges

ROOT = Path(__file__).resolve().parents[2]


def _unprivileged(code: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, capture_output=True, text=True,
                          timeout=120, preexec_fn=drop_privileges, env={"PYTHONPATH": str(ROOT), "HOME": str(cwd)})


def test_the_child_is_stopped_by_a_mode_as_a_person_is(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("x")
    secret.chmod(0)
    done = _unprivileged("open('secret').read()", tmp_path)
    secret.chmod(0o600)
    assert done.returncode == 1 and "PermissionError" in done.stderr, done.stderr


def test_a_read_only_file_is_not_replaced_and_the_sentence_says_so(tmp_path):
    (tmp_path / "kept.json").write_text("the user's")
    (tmp_path / "kept.json").chmod(0o444)
    done = _unprivileged("""
        from explorer.core import files
        from explorer.core.errors import ExplorerError
        try:
            files.write_text_atomic('kept.json', 'new')
        except ExplorerError as error:
            print(error)
        """, tmp_path)
    assert done.stdout.strip() == "Cannot write kept.json: it is read-only.", done.stdout + done.stderr
    assert (tmp_path / "kept.json").read_text() == "the user's"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]


def test_a_folder_that_cannot_be_searched_is_named_not_taken_for_an_empty_one(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    folder.chmod(0o600)                              # read, but no search: its files cannot be reached
    done = _unprivileged("""
        from explorer.core.errors import ExplorerError
        from explorer.core.loaders.model_file import open_model
        from explorer.core import files
        for attempt in (lambda: open_model('model'), lambda: files.check_writable('model/out.npz')):
            try:
                attempt()
            except ExplorerError as error:
                print(error)
        """, tmp_path)
    folder.chmod(0o700)
    assert done.stdout.splitlines() == ["model cannot be read: permission denied.",
                                        "Cannot write model/out.npz: permission denied."], done.stdout + done.stderr
