"""Animations as MP4 video (H.264 through imageio's ffmpeg plugin): read back with imageio, one frame per step,
the frames differ as the map grows, and each is its GIF frame's picture within the codec's loss (H.264 at
CRF 10 in yuv420p against a 256-colour palette); an odd size is padded to even sides, never scaled; a failing
encoder, or a full disk, is one sentence and leaves nothing behind."""
from __future__ import annotations

import numpy as np
import pytest

from explorer.app.figures import video
from explorer.app.figures.animation import export_animation, read_animation, read_frame
from explorer.drawing import export
from tests.app.synthetic_trace import build_trace

SIZE = (240, 200)


@pytest.fixture(scope="module")
def trace():
    return build_trace(n_layers=2, n_heads=4, n_kv_heads=2, prompt_len=5, steps=3)


def mean_difference(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(int) - b.astype(int)).mean())


def test_an_mp4_has_a_frame_per_step_each_its_gif_frame_within_the_codec(qtbot, trace, tmp_path):
    done = []
    path = export_animation(trace, tmp_path / "decoding.mp4", 1, 2, size=SIZE, progress=lambda d, t: done.append(d))
    gif = read_animation(export_animation(trace, tmp_path / "decoding.gif", 1, 2, size=SIZE))
    frames = read_animation(path)
    assert frames.shape == (trace.n_steps, SIZE[1], SIZE[0], 3) == gif.shape
    assert done == list(range(1, trace.n_steps + 1))
    for step in range(1, trace.n_steps):
        assert mean_difference(frames[step], frames[step - 1]) > 0.5, f"frame {step} is the frame before"
    for step, (frame, expected) in enumerate(zip(frames, gif)):
        difference = mean_difference(frame, expected)
        others = [mean_difference(frame, other) for i, other in enumerate(gif) if i != step]
        assert difference < 4.0, f"frame {step} is {difference:.2f} grey levels from its GIF frame on average"
        assert difference < min(others), f"frame {step} looks more like another step's frame"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decoding.gif", "decoding.mp4"]   # nothing else left


def test_an_odd_size_is_padded_to_even_sides_not_scaled(qtbot, trace, tmp_path):
    odd = (241, 199)
    last = trace.n_steps - 1                     # the last frame, its step named under it as every frame
    static = read_frame(export.export_attention(trace, tmp_path / "last.png", 1, 2, step=last, size=odd,
                                                caption=export.step_caption(trace, last)))
    frames = read_animation(export_animation(trace, tmp_path / "odd.mp4", 1, 2, size=odd))
    assert frames.shape == (trace.n_steps, odd[1] + 1, odd[0] + 1, 3)
    assert mean_difference(frames[-1][: odd[1], : odd[0]], static) < 4.0       # the picture in place, unscaled
    assert mean_difference(frames[-1][-1, : odd[0]], frames[-1][-2, : odd[0]]) < 4.0  # the padding repeats the edge


class BrokenWriter:
    """imageio's ffmpeg writer as it fails when ffmpeg dies: an OSError without errno, ffmpeg's words last."""

    def __init__(self, *args, **kwargs):
        self.frames = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def append_data(self, picture):
        self.frames += 1
        if self.frames == 2:
            raise OSError("[Errno 32] Broken pipe\n\nFFMPEG COMMAND:\nffmpeg -y ...\n\nFFMPEG STDERR OUTPUT:\n"
                          "frame=    1 fps=0.0 q=0.0 size=       0kB\nAv_interleaved_write_frame(): I/O error")


def test_a_failing_encoder_or_a_full_disk_is_one_sentence_and_leaves_nothing(qtbot, trace, tmp_path, monkeypatch):
    import imageio.v2

    from explorer.core import files

    monkeypatch.setattr(imageio.v2, "get_writer", BrokenWriter)
    target = tmp_path / "decoding.mp4"
    with pytest.raises(export.ExportError) as failed:
        export_animation(trace, target, 1, 2, size=SIZE)
    message = str(failed.value)
    assert "\n" not in message and message.startswith(f"Cannot write {target}")
    assert "ffmpeg" in message and "I/O error" in message
    monkeypatch.setattr(files, "_free_bytes", lambda folder: 0)             # the disk filled while encoding
    with pytest.raises(export.ExportError, match="the disk is full"):
        export_animation(trace, target, 1, 2, size=SIZE)
    assert list(tmp_path.iterdir()) == []


def test_even_sides_repeats_the_last_row_and_column():
    picture = np.arange(3 * 5 * 3, dtype=np.uint8).reshape(3, 5, 3)
    padded = video.even_sides(picture)
    assert padded.shape == (4, 6, 3)
    assert np.array_equal(padded[:3, :5], picture)
    assert np.array_equal(padded[3, :5], picture[2]) and np.array_equal(padded[:3, 5], picture[:, 4])
    assert video.even_sides(padded) is not None and video.even_sides(padded).shape == (4, 6, 3)
