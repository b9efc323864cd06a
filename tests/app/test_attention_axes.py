"""The Attention panel's axes: a long map after the translator's encoder view is labelled query and key, and
View ▸ Presentation fits the all-heads grid's and the map's axes to the larger font and back."""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window, walk_on_screen

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder


@pytest.fixture
def journey(qtbot, tmp_path, screen, dialogs):
    """A person's journey (tests/app/journey.py) through a new main window sized to the emulated `screen`."""
    yield from walk_on_screen(qtbot, tmp_path, screen, dialogs)


def test_a_long_map_after_the_translators_encoder_view_is_labelled_query_and_key(qtbot, tmp_path, monkeypatch):
    """The translator's encoder self-attention ("source query" / "source key"), then a decoder whose map is long
    (drawn in blocks): its axes kept the translator's names."""
    from explorer.views import long_maps

    def axis_names(panel) -> tuple[str, str]:
        plot = panel.large.plot
        return plot.getAxis("left").labelText, plot.getAxis("top").labelText

    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(BUNDLED / "translate-en-zh", "The brown fox")
        attention = journey.raise_panel("attention")
        kinds = attention.kind_box.kinds
        journey.act("the encoder's self-attention", lambda: attention.kind_box.combo.setCurrentIndex(
            kinds.index("encoder")))
        assert axis_names(attention) == ("source query", "source key")
        monkeypatch.setattr(long_maps, "STORED_LONG", 16)          # every map of 16 entries or more is long
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be, that is")
        journey.raise_panel("attention")
        journey.idle("the long map")
        assert long_maps.is_long(journey.window.session.trace)
        assert axis_names(attention) == ("query", "key")


def placed_and_drawn(axis) -> tuple[list[str], list[str]]:
    """The labels the axis places along its length (thinned so that none overlaps), and those pyqtgraph draws of
    them: it leaves out a label wider than the axis has room for."""
    from tests.app.test_user_journey_drive import drawn_labels

    length = axis.boundingRect().height() if axis.orientation in ("left", "right") else axis.boundingRect().width()
    levels = axis.tickValues(axis.range[0], axis.range[1], length)
    placed = [text for text in axis.tickStrings(levels[0][1] if levels else [], 1.0, 1.0) if text]
    return placed, [text for text, _width in drawn_labels(axis)]


def test_presentation_fits_the_axes_to_the_larger_font_and_back(journey, tmp_path):
    """View ▸ Presentation: every layer label the all-heads grid places (L0 … L11) is drawn in the larger font, none
    left out for want of width; off again, the grid's layer axis and the map's key axis take back their size."""
    from tests.app.test_user_journey_drive import deep_llama

    journey.open(deep_llama(tmp_path / "deep-llama"), "To be, or not to be")
    panel = journey.raise_panel("attention")
    rows, keys = panel.grid.axes["left"], panel.large.axes["top"]
    before = (rows.boundingRect().width(), keys.boundingRect().height())
    journey.act("View ▸ Presentation", journey.window.menus.presentation.trigger)
    placed, drawn = placed_and_drawn(rows)
    assert "L11" in placed and drawn == placed, f"in Presentation the grid places {placed} and draws {drawn}"
    journey.act("View ▸ Presentation off", journey.window.menus.presentation.trigger)
    assert (rows.boundingRect().width(), keys.boundingRect().height()) == before
