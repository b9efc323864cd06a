"""The Q / K / V panel's note on how heads share K and V shows its whole sentence at 1366x768 beside Learn: beside
the controls it had ~200 px and read "MLA: K and V of every head are expanded from the shared lat…" (drive21 m8).
Checked with the font's metrics: each line drawn fits the note's width and the lines hold the whole sentence."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QFontMetricsF

from explorer.app.window.learn_placement import open_learn
from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.layout_probe import document_lines

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def shown_lines(note) -> list[str]:
    return document_lines(note.shown_document())


def test_the_mla_sharing_note_is_whole_at_1366(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        open_learn(journey.window)
        journey.open(BUNDLED / "shakespeare-mla", "To be, or not to be, that is the question")
        journey.act("raising Q / K / V", lambda: journey.raise_panel("qkv"))
        note = journey.window.docks["qkv"].widget().sharing
        whole = "MLA: K and V of every head are expanded from the shared latent c_KV"
        assert note.document.toPlainText() == whole
        lines = shown_lines(note)
        assert " ".join(lines) == whole, lines
        metrics = QFontMetricsF(note.document.defaultFont())
        for line in lines:
            assert metrics.horizontalAdvance(line) <= note.width() - 2 * note.PADDING[0] + 1, (line, note.width())
