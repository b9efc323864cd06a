"""A progress dialog's label shows whole words (drive20 m8: Back to my session's dialog read "Replaying the
prompt's 23 tok…ding 2 tokens: layer 14 of 30", cut in the middle of two words). Expectation: the text's own
words, each line measured by QFontMetrics against the label's width; the dialog's size the same for a short and
a very long text."""
from __future__ import annotations

from PySide6.QtWidgets import QLabel

from explorer.app.widgets.steady_progress import SteadyProgress

REPLAY = "Replaying the prompt's 23 tokens, then decoding 2 tokens: layer 14 of 30"


def _shown(qtbot, text: str):
    dialog = SteadyProgress("Starting…", 30, None, "Back to my session")
    qtbot.addWidget(dialog)
    dialog.setMinimumDuration(0)
    dialog.show()
    qtbot.waitExposed(dialog)
    before = dialog.size().toTuple()
    dialog.setLabelText(text)
    dialog.setValue(14)
    qtbot.wait(20)
    return dialog, dialog.findChild(QLabel), before


def test_a_replay_label_is_whole_on_two_lines(qtbot):
    dialog, label, before = _shown(qtbot, REPLAY)
    lines = label.text().split("\n")
    metrics = label.fontMetrics()
    assert " ".join(lines) == REPLAY, f"the label shows {label.text()!r}"
    assert all(metrics.horizontalAdvance(line) <= label.contentsRect().width() for line in lines), lines
    assert len(lines) * metrics.lineSpacing() <= label.contentsRect().height()
    assert dialog.size().toTuple() == before


def test_a_very_long_label_is_cut_after_a_whole_word(qtbot):
    text = ("Replaying the prompt's 2300 tokens under the patched heads of every layer, then decoding 200 "
            "tokens with the kernel chosen for each of the thirty layers: layer 14 of 30")
    dialog, label, before = _shown(qtbot, text)
    lines = label.text().split("\n")
    metrics = label.fontMetrics()
    assert lines[-1].endswith("…") and dialog.toolTip() == text
    shown = " ".join(lines)[:-1].split()
    assert shown == text.split()[:len(shown)], f"a word is cut: {label.text()!r}"
    assert all(metrics.horizontalAdvance(line) <= label.contentsRect().width() for line in lines), lines
    assert dialog.size().toTuple() == before, "the dialog's size follows its text"
