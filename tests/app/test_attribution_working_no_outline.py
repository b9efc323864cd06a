"""Why this token's working state after a model switch draws nothing of the selection before (drive 20, m15):
"attributing the logit after position 17…" stood over empty axes that still carried the last answer's outline of
the selected head, a red box at the map's top-left.

The check runs inside the session's context_changed, once the new model's trace is there and its attribution asked
but not answered (answers come through the event loop): the panel's view, grabbed then, holds no pixel of the
selection's outline colour, while the answer drawn before the switch held some (so the count can see the box).
"""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QImage

from explorer.drawing.heatmap import HIGHLIGHT
from tests.app.model_switch import switches, two_depths
from tests.app.window_helpers import idle

pytestmark = pytest.mark.usefixtures("store_home")


def outline_pixels(panel) -> int:
    """Pixels of the view, as painted now, within a small distance of the outline's colour."""
    image = panel.view.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    rgb = np.frombuffer(image.constBits(), np.uint8, stride * height).reshape(height, stride)[:, : width * 3]
    rgb = rgb.reshape(height, width, 3).astype(int)
    target = np.array([HIGHLIGHT.red(), HIGHLIGHT.green(), HIGHLIGHT.blue()])
    return int((np.abs(rgb - target).sum(axis=2) < 40).sum())


def outline_look(panel) -> dict:
    """Whether the panel works, shows its body, and how many outline pixels its view holds."""
    return dict(working=panel.asker.busy, body=panel.body_widget.isVisibleTo(panel),
                outline=outline_pixels(panel) if panel.view.isVisibleTo(panel) else 0)


def test_why_this_token_working_after_a_switch_outlines_no_head(qtbot, tmp_path, dialogs):
    with two_depths(qtbot, tmp_path, dialogs) as (window, five, two):
        journey = switches(qtbot, window, "attribution", (five, two), outline_look)
        first = next(journey)
        window.session.select(token=first.trace.n_tokens - 2, layer=0, head=0)
        idle(qtbot, window, lambda: first.panel.result is not None)
        before = outline_pixels(first.panel)
        assert before > 0, "the answer's outline of the selected head is not seen: the count would prove nothing"
        seen = next(journey).seen
        assert seen["working"], "the new model's attribution was not being computed"
        assert seen["outline"] == 0, f"{seen['outline']} outline pixels over the empty working map ({seen})"
