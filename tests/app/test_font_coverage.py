"""No font warnings on stderr (issue 22): Gemma 3's logit lens ranks Telugu pieces high at early layers, and on a
machine with no Telugu font Qt printed "qt.text.font.db: OpenType support missing for "DejaVu Sans", script 17"
once per font family as the Residual panel laid them out (and drew empty boxes). A token in a script that no
installed font shapes is now named by its code points; where a font is installed it is drawn as it is."""
from __future__ import annotations

import unicodedata

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QLabel

from explorer.app.state.font_coverage import drawable
from explorer.core import store
from tests.app.journey import journey_in_a_window

TELUGU = "తుందని"            # a Gemma 3 vocabulary piece (id 237583 and neighbours): Telugu letters and signs
PROMPT = "To be, or not to be"
POSITION, LAYER = 3, 3        # where Gemma 3 270M's logit lens ranks that piece in its top two (" or", layer 3)
WARNING = "OpenType support missing"


def telugu_font() -> bool:
    return bool(QFontDatabase.families(QFontDatabase.WritingSystem.Telugu))


def in_telugu_block(text: str) -> bool:
    return any("TELUGU" in unicodedata.name(c, "") for c in text)


def font_warnings(qtlog) -> list[str]:
    return [record.message for record in qtlog.records if WARNING in record.message]


def test_a_script_no_font_shapes_is_named_by_its_code_points_and_laid_out_without_a_warning(qtbot, qtlog):
    shown = drawable(f"a {TELUGU} b")
    if telugu_font():
        assert shown == f"a {TELUGU} b"                  # a font is installed: the letters themselves
    else:
        assert not in_telugu_block(shown) and shown.startswith("a ") and shown.endswith(" b")
        assert "Telugu" in shown and all(f"{ord(c):04X}" in shown for c in TELUGU), shown
    label = QLabel(shown)
    qtbot.addWidget(label)
    label.show()
    label.grab()                                         # laid out and painted
    assert label.fontMetrics().horizontalAdvance(shown) > 0
    assert font_warnings(qtlog) == []


@pytest.mark.realmodel
def test_opening_gemma_and_showing_its_logit_lens_prints_no_font_warning(qtbot, tmp_path, monkeypatch, qtlog,
                                                                         dialogs):     # Yes to its terms
    folder = store.pulled_path("gemma3-270m")
    if folder is None:
        pytest.skip("gemma3-270m is not pulled (python -m explorer pull gemma3-270m --accept-license)")
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1366, 768)) as journey:
        journey.open(folder, PROMPT)
        window = journey.window
        journey.act("selecting a token", lambda: window.session.select(token=POSITION, layer=LAYER))
        panel = journey.raise_panel("residual")
        journey.idle("the residual stream at the token")
        table = panel.table
        texts = [table.item(r, c).text() for r in range(table.rowCount()) for c in range(table.columnCount())
                 if table.item(r, c) is not None]
        assert texts, "the logit lens was not shown"
        lens = [t for t in texts if "Telugu" in t or in_telugu_block(t)]
        assert lens, f"no Telugu piece in the lens at position {POSITION}: {texts}"   # the case is met
        if not telugu_font():
            assert not any(in_telugu_block(t) for t in texts), lens
        window.grab()
        assert font_warnings(qtlog) == []
