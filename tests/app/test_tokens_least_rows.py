"""At the main window's least size the Tokens table still shows its header and whole rows (issue 22).

Seen: resized to its minimumSizeHint at 1366x768 and 1920x1080, the Tokens column left its table 70 px: an
18 px header, a horizontal scroll bar (the four columns are wider than the 216 px column) and 36 px of rows
between them, one row and a cut one, under a decoder's three lines of coloured text. Measured here in the real
window after a run: the whole rows the viewport holds against the table's own row height, the header whole, and
the window's asked least height against the screen's.

A decoder's table keeps two whole rows (a token beside the next), the coloured text giving way first. So does
the translator's (it showed 1.6 rows): its coloured text already gave way there, its source line, left-out warning
and formula are kept whole (test_minimum_plots.py); the 8 px its second row needs come from its pointer readout's
line, which repeats the coloured text's tooltip, so the window's least stays within the 768 px screen after the
longer prompt (761 -> 753 px; 8 px more with the readout were past the screen, framed).
"""
from __future__ import annotations

import pytest

from tests.app.journey import BUNDLED, journey_in_a_window
from tests.app.screen_fit import SCREENS, settle

pytestmark = pytest.mark.usefixtures("store_home")  # the store in the test's folder

PROMPTS = ("The quick brown fox jumps over the lazy dog.",
           "When Mary and John went to the store, John gave a drink to")     # the translator's longer lines
WHOLE_ROWS = {"shakespeare-mha": 2, "translate-en-zh": 2}


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("model", list(WHOLE_ROWS))
@pytest.mark.parametrize("screen", list(SCREENS))
def test_the_tokens_table_keeps_whole_rows_at_the_least_size(qtbot, tmp_path, monkeypatch, screen, model, prompt):
    size = SCREENS[screen]
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, size) as journey:
        journey.open(BUNDLED / model, prompt)
        journey.raise_panel("tokens")
        window = journey.window
        window.resize(window.minimumSizeHint())
        settle(1.0)
        least = window.minimumSizeHint()
        assert least.height() <= size.height(), f"{screen}: the window's least height {least.height()} px " \
                                                f"exceeds the {size.height()} px screen"
        table = window.docks["tokens"].widget().table
        assert table.isVisible() and table.rowCount() >= WHOLE_ROWS[model]
        header = table.horizontalHeader()
        assert header.isVisible() and header.height() >= header.sizeHint().height(), \
            f"{screen}: the header is {header.height()} px of its {header.sizeHint().height()}"
        rows = table.viewport().height() / table.rowHeight(0)
        assert rows >= WHOLE_ROWS[model], \
            f"{screen}, {model}: the table's {table.viewport().height()} px viewport under its header holds " \
            f"{rows:.2f} rows of {table.rowHeight(0)} px ({table.height()} px table)"
