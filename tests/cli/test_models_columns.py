"""`explorer models` keeps its columns aligned whatever the names: a long recent path does not push them."""
from pathlib import Path

from explorer import cli
from explorer.core import store
from explorer.core.model_summary import Summary


def _summary(name, family="llama"):
    return Summary(family=family, attention="gqa", layers=2, heads=4, kv_heads=2, params=1234,
                   size_bytes=5678, format="hf")


def test_columns_line_up_with_long_recent_paths(monkeypatch, capsys, tmp_path):
    deep = tmp_path / ("a-very-long-folder-name-" * 4) / "my-fine-tuned-llama-checkpoint-0001"
    entries = [store.ModelEntry("shakespeare-gqa", "bundled", Path("/r/shakespeare-gqa"), _summary("s")),
               store.ModelEntry(str(deep), "recent", deep, _summary("r")),
               store.ModelEntry("translate-en-zh", "bundled", Path("/r/t"), _summary("t", "explorer-encdec")),
               store.ModelEntry("gemma3-270m", "pullable", None, None, reason="not pulled yet")]
    monkeypatch.setattr(store, "catalog", lambda **_: entries)
    assert cli.main(["models"]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    column = header.index("SOURCE")
    for line, entry in zip(lines, entries):
        assert line[column:].startswith(entry.source), line
    for line in lines[:3]:                                          # a long family name keeps the columns too
        assert line[header.index("ATTN"):].startswith("gqa"), line
    assert header.index("LOCATION") == lines[1].index(str(deep))          # the full path is still shown
    assert "my-fine-tuned" in lines[1][:column]
