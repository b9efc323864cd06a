"""File ▸ Export Figure Text Size reaches a long head's export too (the block-maxima figure written off the
GUI thread, widgets/long_export.py): its title's ink is twice as tall at "Largest" (2×) as at "Normal", in
the PNG's pixels, as tests/app/test_export_font_size.py measures the short head's."""
from __future__ import annotations

import pytest

from explorer.app.window.settings import AppSettings
from tests.app.test_attention_long_prompt import show
from tests.app.test_export_font_size import TOLERANCE, ink_height
from tests.app.test_export_long_head import SIZE, answer, export_head
from tests.app.text_contrast import rendered


@pytest.fixture
def chosen_size():
    """The text size of exported figures, set as the menu sets it, put back to normal afterwards."""
    settings = AppSettings()              # the panel sits in no window: export.figure_settings reads these
    yield lambda scale: setattr(settings, "figure_text_scale", scale)
    settings.figure_text_scale = 1.0


def test_a_long_heads_export_draws_its_title_at_the_chosen_size(qtbot, long_panel, head_trace, exported, monkeypatch,
                                                                  tmp_path, chosen_size):
    show(qtbot, long_panel, head_trace, layer=1, head=2)
    heights = {}
    for scale in (1.0, 2.0):
        chosen_size(scale)
        path = tmp_path / f"head{scale}.png"
        answer(monkeypatch, path)
        assert export_head(qtbot, long_panel) == path
        title = next(rect for what, rect in exported[path.name]["rects"] if what.startswith("title"))
        heights[scale] = ink_height(rendered(path, SIZE), title)
    assert heights[1.0] >= 8, f"the normal title's ink is {heights[1.0]} px tall"
    assert abs(heights[2.0] / heights[1.0] - 2.0) <= TOLERANCE * 2.0, heights
