"""The README's "Use it from Python" example runs as written."""
from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    section = README.read_text(encoding="utf-8").split("## Use it from Python", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, "the section has one Python example"
    return blocks[0]


def test_the_readme_example_runs(tmp_path, monkeypatch, capsys):
    root = README.parent
    code = readme_example().replace('"resources/', f'"{root}/resources/')
    monkeypatch.chdir(tmp_path)                                  # its files land here
    exec(compile(code, str(README), "exec"), {"__name__": "readme"})
    out = capsys.readouterr().out
    assert "layer 9 does not exist" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"grid.png", "run.npz", "run.json"}
