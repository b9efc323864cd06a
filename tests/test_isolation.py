"""The suite never touches the user's store or settings: its own HOME, store and QSettings scope."""
import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QSettings

from explorer.app.figures.figure_settings import APPLICATION, ORGANIZATION
from explorer.app.state import session_file
from explorer.core import store
from tests import isolation
from tests.conftest import ISOLATED

REPOSITORY = Path(__file__).resolve().parents[1]


def test_every_default_path_of_this_run_lies_in_its_own_folder():
    for path in (store.home(), session_file.app_home(), Path.home(),
                 Path(QSettings(ORGANIZATION, APPLICATION).fileName())):
        assert ISOLATED.root in path.parents
        assert not any(root == path or root in path.parents for root in ISOLATED.user_roots)


def _user_home(folder: Path) -> Path:
    """A user's home with a store (a recent list, a pulled model) and settings, as the app leaves them."""
    (folder / ".cache/transformer-explorer/models/tiny").mkdir(parents=True)
    (folder / ".cache/transformer-explorer/models/recent.json").write_text('["/somewhere"]')
    (folder / ".cache/transformer-explorer/models/tiny/pulled.json").write_text("{}")
    (folder / ".cache/transformer-explorer/models/tiny/weights.bin").write_bytes(b"w" * 64)
    (folder / ".config/transformer-explorer").mkdir(parents=True)
    (folder / ".config/transformer-explorer/explorer.conf").write_text("[view]\ntheme=dark\n")
    return folder


def test_a_run_leaves_the_users_store_and_settings_byte_identical(tmp_path):
    user = _user_home(tmp_path / "user")
    before = isolation.fingerprints(isolation.user_roots({"HOME": str(user)}))
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("TRANSFORMER_EXPLORER_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME")}
    environment.update(HOME=str(user), PROBE_USER_HOME=str(user),
                       TRANSFORMER_EXPLORER_TEST_MODELS=str(tmp_path / "none"))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/isolation_probe.py"],
                          cwd=REPOSITORY, env=environment, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert isolation.fingerprints(isolation.user_roots({"HOME": str(user)})) == before
    assert len(before) == 4


def test_pulled_models_are_copied_into_the_runs_store(tmp_path):
    source = tmp_path / "pulled"
    (source / "model-a").mkdir(parents=True)
    (source / "model-a" / "pulled.json").write_text("{}")
    (source / "model-a" / "weights.gguf").write_bytes(b"gguf")
    (source / "half-pulled").mkdir()                     # an interrupted pull: no pulled.json
    assert isolation.copy_models([source], tmp_path / "store") == ["model-a"]
    copied = tmp_path / "store" / "model-a" / "weights.gguf"
    assert not copied.is_symlink() and copied.read_bytes() == b"gguf"     # a float32 copy may be written beside it
    assert not (tmp_path / "store" / "half-pulled").exists()
