"""A click on an attention cell brings Show the work forward only where it can derive the cell (drive 20, m17).

With the translator (an encoder–decoder), a click on the Attention map raised Show the work, which only says it
needs a decoder-only model: the map the person clicked was replaced by an empty panel. The click still selects the
cell; the tab clicked stays in front. A decoder-only model's click still raises Show the work, deriving A[row, 0].
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QSize, Qt
from PySide6.QtTest import QTest

from tests.app.journey import BUNDLED, journey_in_a_window

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


def click_a_cell(journey) -> tuple[int, int]:
    """Click cell (row, 0) of the large attention map, as a person does; the cell clicked."""
    attention = journey.raise_panel("attention")
    journey.idle("drawing attention")
    row = min(2, journey.window.session.trace.n_tokens - 1)
    view = attention.large.plot.scene().views()[0]
    point = view.mapFromScene(attention.large.scene_pos_of(row, 0))
    journey.act("clicking a cell of the attention map",
                lambda: QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(point.x(), point.y())))
    return row, 0


def test_a_click_on_the_translators_map_keeps_attention_in_front(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The cat sat on the mat.")
        cell = click_a_cell(journey)
        docks = journey.window.docks
        assert journey.window.session.selection.cell == cell, "the click did not select the cell"
        assert docks["attention"].widget().is_shown(), "the clicked map is no longer in front"
        assert not docks["derivation"].widget().is_shown(), "Show the work, which cannot derive it, was raised"


def test_a_click_on_a_decoders_map_still_shows_the_work(qtbot, tmp_path, monkeypatch):
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        row, col = click_a_cell(journey)
        derivation = journey.window.docks["derivation"].widget()
        assert derivation.is_shown(), "clicking a cell did not bring Show the work to the front"
        assert f"A[{row}, {col}]" in derivation.formula, derivation.formula[:80]
