"""Animations of decoding against "Export every step": as many frames as the numbered frames, each one the
numbered frame's picture (pixel for pixel in a lossless animated PNG, within a GIF's 256-colour palette),
written atomically, with progress and cancel."""
from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtGui import QGuiApplication

from explorer.app.figures import export_dialogs
from explorer.app.figures.animation import AnimationCancelled, copy_figure, export_animation, read_animation, read_frame
from explorer.app.panels.mask import MaskPanel
from explorer.app.state.session import Session
from explorer.drawing import export
from tests.app.shared_window import make
from tests.app.synthetic_trace import build_trace

SIZE = (240, 200)


@pytest.fixture(scope="module")
def trace():
    return build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=5, steps=3)


@pytest.fixture
def static_frames(qtbot, trace, tmp_path):
    """The numbered frames 'Export every step' writes, read back."""
    folder = tmp_path / "static"
    folder.mkdir()
    paths = export.export_frames(trace, folder / "frame.png", 1, 2, size=SIZE)
    return [read_frame(p) for p in paths]


def test_a_lossless_animation_holds_exactly_the_static_frames(trace, static_frames, tmp_path):
    done = []
    path = export_animation(trace, tmp_path / "decoding.png", 1, 2, size=SIZE,
                            progress=lambda d, t: done.append((d, t)))
    frames = read_animation(path)
    assert len(static_frames) == trace.n_steps == 4
    assert frames.shape == (len(static_frames), SIZE[1], SIZE[0], 3)
    for step, (frame, static) in enumerate(zip(frames, static_frames)):
        assert np.array_equal(frame, static), f"frame {step} differs from its static frame"
    assert done == [(i, 4) for i in range(1, 5)]
    assert not np.array_equal(frames[0], frames[-1])            # the map grows a row per step


def test_a_gif_has_a_frame_per_step_each_its_static_frame_within_the_palette(trace, static_frames, tmp_path):
    frames = read_animation(export_animation(trace, tmp_path / "decoding.gif", 1, 2, size=SIZE))
    assert len(frames) == len(static_frames)
    for step, (frame, static) in enumerate(zip(frames, static_frames)):
        difference = np.abs(frame.astype(int) - static.astype(int))
        assert difference.mean() < 2.0 and np.mean(difference.max(axis=-1) > 24) < 0.01, f"frame {step}"
        others = [np.abs(frame.astype(int) - s.astype(int)).mean() for i, s in enumerate(static_frames) if i != step]
        assert difference.mean() < min(others), f"frame {step} looks more like another step's frame"


def test_cancel_writes_nothing_and_bad_names_say_why(trace, tmp_path):
    asked = []

    def cancelled() -> bool:
        asked.append(1)
        return len(asked) > 2

    target = tmp_path / "decoding.gif"
    with pytest.raises(AnimationCancelled):
        export_animation(trace, target, 0, 0, size=SIZE, cancelled=cancelled)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(export.ExportError, match=r"must end in \.gif, \.png or \.mp4"):
        export_animation(trace, tmp_path / "decoding.mp3", 0, 0, size=SIZE)
    with pytest.raises(export.ExportError, match="does not exist"):
        export_animation(trace, tmp_path / "no" / "decoding.gif", 0, 0, size=SIZE)


def test_copy_figure_puts_the_panel_on_the_clipboard(qtbot, trace):
    session = Session()
    panel = make(qtbot, session, MaskPanel)
    session.set_trace(trace)
    image = copy_figure(panel)
    copied = QGuiApplication.clipboard().image()
    assert not image.isNull() and (copied.width(), copied.height()) == (panel.width(), panel.height())
    assert copied.convertToFormat(image.format()) == image


def test_every_panels_menu_copies_its_figure_and_attention_animates_from_its_menu(qtbot, trace, tmp_path,
                                                                                  monkeypatch):
    """The menu entries reach the same code: Copy figure on any panel, the animation on the Attention panel."""
    from explorer.app.panels.attention import AttentionPanel

    session = Session()
    mask = make(qtbot, session, MaskPanel)
    attention = make(qtbot, session, AttentionPanel)
    session.set_trace(trace)
    for panel in (mask, attention):
        QGuiApplication.clipboard().clear()
        copy = [a for a in panel.context_menu().actions() if a.text() == "Copy figure"]
        assert len(copy) == 1
        copy[0].trigger()
        assert not QGuiApplication.clipboard().image().isNull()
    target = tmp_path / "from_menu.png"
    monkeypatch.setattr(export_dialogs, "ask_path", lambda *a, **k: target)
    monkeypatch.setattr(export_dialogs, "ask_size", lambda *a, **k: SIZE)
    animate = [a for a in attention.make_export_actions() if "animation" in a.text()]
    assert len(animate) == 1
    animate[0].trigger()
    qtbot.waitUntil(target.exists, timeout=20000)
    assert len(read_animation(target)) == trace.n_steps
