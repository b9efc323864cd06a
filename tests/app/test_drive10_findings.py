"""What driving the whole app on bare X screens (drive 10) found at the seams, checked where a person sees it."""
from __future__ import annotations

from PySide6.QtCore import QSize

from tests.app.journey import BUNDLED, journey_in_a_window


def test_closing_the_logit_lens_takes_its_caption_away(qtbot, tmp_path, monkeypatch):
    """Next token ▸ Logit lens, then Back to the candidates: the caption "logit lens at position 2: ... after
    each layer" stayed under the candidates, naming a table no longer shown."""
    with journey_in_a_window(qtbot, tmp_path, monkeypatch, QSize(1920, 1080)) as journey:
        journey.open(BUNDLED / "shakespeare-gqa", "To be, or not to be")
        panel = journey.raise_panel("next_token")
        journey.act("logit lens", panel.lens_button.click)
        assert panel.lens_table.isVisibleTo(panel) and "lens" in panel.readout.text()
        journey.act("back to the candidates", panel.lens_button.click)
        assert panel.table.isVisibleTo(panel) and not panel.lens_table.isVisibleTo(panel)
        assert "lens" not in panel.readout.text(), f"the candidates sit above {panel.readout.text()!r}"
