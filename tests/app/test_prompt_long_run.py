"""A prompt holding a run of text with nowhere to wrap is wrapped anywhere: Qt lays such a run out in time that grows
with its square under its own wrapping, and a session whose prompt was one line of 1,000,000 characters without a space
froze the window 55 s when it was opened (boundary27). Prose keeps Qt's own wrapping, at word boundaries.

Expectation: the editor's wrap mode for each text, set as it is restored, pasted, and edited away; and the text
itself, whole."""
from __future__ import annotations

from PySide6.QtCore import QMimeData
from PySide6.QtGui import QTextOption

from explorer.app.window.prompt_editor import PromptEditor

PROSE = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer " * 200
RUN = "QUJD" * 5_000                      # 20,000 characters of base64, no space


def test_a_long_unbroken_run_is_wrapped_anywhere_and_prose_at_its_words(qtbot):
    editor = PromptEditor()
    qtbot.addWidget(editor)
    editor.resize(600, 200)
    editor.show()
    default = editor.wordWrapMode()
    assert default != QTextOption.WrapMode.WrapAnywhere
    editor.set_text(PROSE + RUN)
    assert editor.wordWrapMode() == QTextOption.WrapMode.WrapAnywhere and editor.text == PROSE + RUN
    editor.set_text(PROSE)
    assert editor.wordWrapMode() == default
    pasted = QMimeData()
    pasted.setText(RUN)
    editor.moveCursor(editor.textCursor().MoveOperation.End)
    editor.insertFromMimeData(pasted)                       # a paste of the run, at the end
    assert editor.wordWrapMode() == QTextOption.WrapMode.WrapAnywhere and editor.text == PROSE + RUN
    editor.selectAll()
    editor.insertPlainText(PROSE)                           # the run edited away: words wrap whole again
    editor.settle()
    assert editor.wordWrapMode() == default and editor.text == PROSE
