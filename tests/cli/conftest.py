"""Fixtures of the export command's tests: a tiny model on disk, and `export` run through cli.main."""
import pytest

from explorer import cli
from tests.app.tiny_model import make_tiny_llama


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture
def export_main(monkeypatch, qapp):
    """cli.main with only the export subcommand registered, so a test does not depend on the others."""
    monkeypatch.setattr(cli, "SUBCOMMANDS", {"export": cli.SUBCOMMANDS["export"]})
    return lambda *args: cli.main(["export", *map(str, args)])
