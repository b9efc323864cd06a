"""The KV cache growing, as an animation: one frame per recorded step, read back with imageio; the bars of the
cache in use (the panel's blue) cover more pixels at every step, as the cache holds one more token per layer;
progress is reported per frame, a cancel writes nothing, and a bad request says why in one sentence."""
from __future__ import annotations

import imageio.v3 as iio
import numpy as np
import pytest

from explorer.app.figures import export_dialogs
from explorer.app.figures.animation import AnimationCancelled
from explorer.app.figures.kv_animation import export_kv_animation
from explorer.drawing import export
from tests.app.synthetic_trace import build_trace

SIZE = (720, 360)
BLUE = np.array([0x3B, 0x7D, 0xD8])          # the KV cache panel's colour of bytes in use


@pytest.fixture(scope="module")
def trace():
    return build_trace(n_layers=3, n_heads=4, n_kv_heads=2, prompt_len=4, steps=5)


def in_use_pixels(frame: np.ndarray) -> int:
    """Pixels of the in-use colour in the left third of the frame, where the per-layer bars are."""
    left = frame[:, : frame.shape[1] // 3, :3].astype(int)
    return int((np.abs(left - BLUE).max(axis=-1) <= 24).sum())


@pytest.mark.parametrize("suffix", [".png", ".gif", ".mp4"])
def test_one_frame_per_step_and_the_bars_grow_with_the_cache(qtbot, trace, tmp_path, suffix):
    done = []
    path = export_kv_animation(trace, tmp_path / f"kv{suffix}", size=SIZE, progress=lambda d, t: done.append((d, t)))
    frames = np.asarray(iio.imread(path, index=None, extension=suffix))
    held = [int(trace.kv_bytes_in_use(step).sum()) for step in range(trace.n_steps)]
    assert all(later > earlier for earlier, later in zip(held, held[1:]))        # the trace's cache grows
    assert frames.shape[:3] == (trace.n_steps, SIZE[1], SIZE[0])
    assert done == [(i, trace.n_steps) for i in range(1, trace.n_steps + 1)]
    bars = [in_use_pixels(frame) for frame in frames]
    for step in range(1, trace.n_steps):
        assert not np.array_equal(frames[step], frames[step - 1]), f"frame {step} is the frame before"
        assert bars[step] > bars[step - 1], f"the in-use bars did not grow at step {step}: {bars}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]           # no scratch or temporary file left


def test_cancel_writes_nothing_and_bad_requests_say_why(qtbot, trace, tmp_path):
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2

    target = tmp_path / "kv.gif"
    with pytest.raises(AnimationCancelled):
        export_kv_animation(trace, target, size=SIZE, cancelled=cancelled)
    assert not any(tmp_path.iterdir())
    with pytest.raises(export.ExportError, match=r"must end in \.gif, \.png or \.mp4"):
        export_kv_animation(trace, tmp_path / "kv.mp3", size=SIZE)
    encoder = build_trace(n_layers=1, n_heads=2, prompt_len=4, encoder_only=True)
    with pytest.raises(export.ExportError, match="an encoder keeps no KV cache"):
        export_kv_animation(encoder, target, size=SIZE)
    assert not any(tmp_path.iterdir())


def title_height(frame: np.ndarray) -> int:
    """Rows of the topmost line of dark ink (the title), on the light figure's white."""
    ink = frame[..., :3].max(axis=-1) < 110
    rows = np.flatnonzero(ink.any(axis=1))
    top = bottom = rows[0]
    while bottom + 1 < len(ink) and ink[bottom + 1].any():
        bottom += 1
    return int(bottom - top + 1)


def test_the_kv_panels_menu_writes_it_at_the_chosen_text_size(qtbot, trace, tmp_path, monkeypatch):
    from tests.app.shared_window import make_window
    from tests.app.synthetic_trace import WORDS

    window = make_window(qtbot, tmp_path)
    window.session.set_token_display(lambda token_id: WORDS[token_id % len(WORDS)])
    window.session.set_model(trace.model)
    window.session.set_trace(trace)
    panel = window.docks["kv_cache"].widget()
    monkeypatch.setattr(export_dialogs, "ask_size", lambda *a, **k: (1000, 600))   # room for 2× labels
    heights = {}
    for scale in (1.0, 2.0):
        window.settings.figure_text_scale = scale
        target = tmp_path / f"kv_{scale}.png"
        monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: target)
        next(a for a in panel.export_actions() if "animation" in a.text()).trigger()
        qtbot.waitUntil(target.exists, timeout=30_000)
        frames = np.asarray(iio.imread(target, index=None, extension=".png"))
        assert len(frames) == trace.n_steps
        heights[scale] = title_height(frames[0])
    assert heights[1.0] >= 8 and abs(heights[2.0] / heights[1.0] - 2.0) <= 0.3, heights
    window.close()
