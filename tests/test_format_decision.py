"""The format decision is written once: only loaders.open_model (explorer/core/loaders/model_file.py) looks at a
path's suffix or folder-ness to say whether it is a Hugging Face folder or a .gguf file. Everything else asks
it (a grep, as the architecture page's module list is kept true by test_docs)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOOR = ROOT / "explorer" / "core" / "loaders" / "model_file.py"

# The shapes the decision took when it was written in many places: a suffix compared with a model file's,
# a folder recognised by its config.json, the .gguf files of a folder globbed.
DECISION = re.compile(r"""suffix[^\n]*["']\.(gguf|safetensors)["']"""
                      r"""|["']\.(gguf|safetensors)["'][^\n]*suffix"""
                      r"""|endswith\(\s*["']\.(gguf|safetensors)["']"""
                      r"""|["']config\.json["']\s*\)?\s*\.(is_file|exists)\("""
                      r"""|glob\(\s*["']\*\.gguf["']""", re.IGNORECASE)


def decisions() -> dict[str, list[str]]:
    found = {}
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if DECISION.search(line)]
        if lines:
            found[str(path.relative_to(ROOT))] = lines
    return found


def test_the_decision_pattern_finds_the_old_shapes():
    for line in ('if path.suffix.lower() == ".gguf":', 'p.suffix.lower() in (".gguf", ".safetensors")',
                 'if (snapshot / "config.json").is_file():', 'snapshot.glob("*.gguf")', 'path.endswith(".gguf")'):
        assert DECISION.search(line), line


def test_the_format_is_decided_only_by_the_door():
    assert set(decisions()) == {str(DOOR.relative_to(ROOT))}, decisions()


def test_the_door_is_one_function():
    defined = [path for path in sorted((ROOT / "explorer").rglob("*.py"))
               if re.search(r"^def open_model\(", path.read_text(encoding="utf-8"), flags=re.M)]
    assert defined == [DOOR]
