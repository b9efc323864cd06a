"""The Python API page's example (docs/api.md) runs as written."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api.md"


def page_example() -> str:
    """The page's Python example: the one ```python block before its first `##` section."""
    intro = PAGE.read_text(encoding="utf-8").split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", intro, flags=re.S)
    assert len(blocks) == 1, "the page opens with one Python example"
    return blocks[0]


def test_the_api_page_example_runs(tmp_path, monkeypatch, capsys):
    code = page_example().replace('"resources/', f'"{ROOT}/resources/')
    monkeypatch.chdir(tmp_path)                                  # its files land here
    exec(compile(code, str(PAGE), "exec"), {"__name__": "api_page"})
    out = capsys.readouterr().out
    assert "layer 9 does not exist" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"grid.png", "run.npz", "run.json"}
