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
from tests.app.test_working_state_after_switch import PROMPT, open_and_watch, raised
from tests.app.tiny_model import make_tiny_llama
from tests.app.window_helpers import idle, new_window

pytestmark = pytest.mark.usefixtures("store_home")


def outline_pixels(panel) -> int:
    """Pixels of the view, as painted now, within a small distance of the outline's colour."""
    image = panel.view.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    rgb = np.frombuffer(image.constBits(), np.uint8, stride * height).reshape(height, stride)[:, : width * 3]
    rgb = rgb.reshape(height, width, 3).astype(int)
    target = np.array([HIGHLIGHT.red(), HIGHLIGHT.green(), HIGHLIGHT.blue()])
    return int((np.abs(rgb - target).sum(axis=2) < 40).sum())


def test_why_this_token_working_after_a_switch_outlines_no_head(qtbot, tmp_path, dialogs):
    five, two = make_tiny_llama(tmp_path / "five", n_layers=5), make_tiny_llama(tmp_path / "two", seed=1, n_layers=2)
    window = new_window(qtbot, tmp_path)
    window.resize(1400, 900)
    try:
        window.prompt.set_text(PROMPT)
        panel = raised(qtbot, window, "attribution")
        window.open_model(str(five))
        trace = idle(qtbot, window, lambda: window.session.trace is not None)
        window.session.select(token=trace.n_tokens - 2, layer=0, head=0)
        idle(qtbot, window, lambda: panel.result is not None)
        before = outline_pixels(panel)
        assert before > 0, "the answer's outline of the selected head is not seen: the count would prove nothing"

        def look():
            return dict(working=panel.asker.busy, body=panel.body_widget.isVisibleTo(panel),
                        outline=outline_pixels(panel) if panel.view.isVisibleTo(panel) else 0)
        seen = open_and_watch(qtbot, window, two, look)[0]
        assert seen["working"], "the new model's attribution was not being computed"
        assert seen["outline"] == 0, f"{seen['outline']} outline pixels over the empty working map ({seen})"
        assert not dialogs["warnings"], dialogs["warnings"]
    finally:
        window.close()
