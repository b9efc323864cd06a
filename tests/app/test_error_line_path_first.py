"""The error line draws a sentence that names its file first so that what is wrong stays in sight: the path gives way
in its middle before the reason is cut (drive29: at 1366 px the line read "/tmp/drive29/bad/brokencfg/config.json is
not v…"). A sentence without a leading path is cut at its end, as before."""
from __future__ import annotations

from explorer.app.window.error_bar import ErrorLine

FOLDER = "/tmp/a-long-folder-a-person-keeps-their-models-in/downloads/2026-12-05/some-model-checkpoint"
SENTENCE = f"{FOLDER}/config.json is not valid JSON (Expecting value at line 1, column 2)."


def drawn(qtbot, message: str, width: int) -> str:
    line = ErrorLine()
    qtbot.addWidget(line)
    line.show_error(message)
    line.line.resize(width, line.line.height())
    return line.line.shown()


def test_the_reason_stays_where_the_path_gives_way(qtbot):
    metrics = ErrorLine().fontMetrics()
    width = metrics.horizontalAdvance(" is not valid JSON (Expecting value at line 1, column 2).") * 3 // 2
    assert metrics.horizontalAdvance(SENTENCE) > width, "the sentence must be too long to test this"
    shown = drawn(qtbot, SENTENCE, width)
    assert shown.endswith("json is not valid JSON (Expecting value at line 1, column 2)."), shown
    assert shown.startswith("/tmp/") and "…" in shown, shown
    assert metrics.horizontalAdvance(shown) <= width
    narrow = drawn(qtbot, SENTENCE, width * 2 // 3)          # too narrow for the whole reason: a third for the path
    assert "is not valid JSON" in narrow and narrow.startswith("/tmp/"), narrow


def test_a_sentence_that_fits_or_starts_in_words_is_drawn_as_before(qtbot):
    assert drawn(qtbot, "/tmp/x.gguf is empty.", 600) == "/tmp/x.gguf is empty."
    words = "Cannot write " + FOLDER + "/map.png: the disk is full."
    shown = drawn(qtbot, words, 300)
    assert shown.startswith("Cannot write /tmp/") and shown.endswith("…"), shown
