"""The newcomer's promises: the README's two commands are the ones CI runs, and the pins hold."""
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    head = text[: text.index("\n## ", text.index("make run"))]
    return re.findall(r"^\s*(make \w+)\s*$", head, flags=re.M)


def test_readme_shows_the_two_commands_near_the_top():
    assert readme_commands()[:2] == ["make run", "make test"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    lines = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert readme_commands()[1] in lines                       # the README's test command, as written there
    assert lines[-1] == "make package"                         # then the bundle and its self-test
    assert lines.index(readme_commands()[1]) == len(lines) - 2


def test_makefile_has_both_targets():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run", "test"):
        assert re.search(rf"^{target}:", makefile, flags=re.M), target


def test_pyproject_declares_the_app_and_extras():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == "transformer-explorer"
    assert project["gui-scripts"]["transformer-explorer"] == "explorer.cli:main"
    assert {"test", "train"} <= set(project["optional-dependencies"])


def test_constraints_pin_the_versions_known_to_matter():
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["torch"] == "2.13.0"
    assert pins["PySide6_Essentials"] == "6.10.3"
    assert pins["pyqtgraph"] == "0.14.0"


def test_desktop_files_exist():
    assert (ROOT / "packaging" / "transformer-explorer.desktop").read_text().startswith("[Desktop Entry]")
    assert "<component" in (ROOT / "packaging" / "io.github.transformer_explorer.metainfo.xml").read_text()
    assert (ROOT / "resources" / "icons" / "transformer-explorer.svg").exists()


def test_the_top_level_holds_only_the_projects_own_files():
    """A scratch file a script or test wrote into the working folder was committed twice (one_err.txt, then
    never-written.npz and one_out.txt): the top level is the front door, and each new entry there is a decision."""
    import subprocess
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    top = {line.split("/")[0] for line in tracked.splitlines()}
    assert top <= {".ci", ".gitignore", "Makefile", "README.md", "bench", "constraints.txt", "docs", "explorer",
                   "packaging", "pyproject.toml", "resources", "tests"}, top
