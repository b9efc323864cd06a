"""GIF and APNG animations are written a frame at a time: the memory an animation takes while it is written
does not grow with its frame count (tracemalloc, 200 frames against 20), every frame is in the file read back
(imageio), a step that changes nothing keeps its frame, and a write that fails half way leaves nothing."""
from __future__ import annotations

import errno
import tracemalloc

import numpy as np
import pytest
from PIL import Image

from explorer.app.figures import frame_stream
from explorer.app.figures.animation import AnimationCancelled, read_animation, write_animation
from explorer.drawing import export

HEIGHT, WIDTH = 240, 320
FRAME_BYTES = HEIGHT * WIDTH * 3


def picture(index: int) -> np.ndarray:
    """A synthetic frame: a bar that moves with `index` over a gradient, so that each frame is its own."""
    rows = np.linspace(0, 255, HEIGHT, dtype=np.uint8)[:, None, None]
    frame = np.broadcast_to(rows, (HEIGHT, WIDTH, 3)).copy()
    frame[20:40, index % WIDTH] = (255, 0, 0)
    frame[60:70, (3 * index) % WIDTH] = (0, 0, index % 256)
    return frame


def draw(index: int, path):
    Image.fromarray(picture(index)).save(path)
    return path


def peak_while_writing(path, total: int) -> int:
    """The most bytes Python held at once (numpy's arrays included) while `total` frames were written."""
    tracemalloc.start()
    try:
        write_animation(path, total, draw, frame_ms=100)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_memory_does_not_grow_with_the_frame_count_and_every_frame_is_written(tmp_path, suffix):
    write_animation(tmp_path / f"warm{suffix}", 2, draw, frame_ms=100)          # imports and caches first
    few = peak_while_writing(tmp_path / f"few{suffix}", 20)
    many = peak_while_writing(tmp_path / f"many{suffix}", 200)
    # holding the frames would take 180 more frames (41 MB); a streamed write holds one or two at a time, and
    # only a file name (a few hundred bytes) per frame grows
    assert many - few < 2 * FRAME_BYTES, (few, many)
    frames = read_animation(tmp_path / f"many{suffix}")
    assert frames.shape == (200, HEIGHT, WIDTH, 3)
    for index in (0, 1, 99, 199):
        difference = np.abs(frames[index].astype(int) - picture(index).astype(int))
        if suffix == ".png":
            assert np.array_equal(frames[index], picture(index)), index      # lossless
        else:
            assert difference.mean() < 2.0, index                           # 256 colours per patch


@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_a_step_that_changes_nothing_keeps_its_frame_and_its_time(tmp_path, suffix):
    pictures = [picture(0), picture(1), picture(1), picture(2)]
    path = tmp_path / f"still{suffix}"
    assert (frame_stream.write_gif if suffix == ".gif" else frame_stream.write_apng)(path, pictures, 250) == 4
    frames = read_animation(path)
    assert len(frames) == 4 and np.array_equal(frames[1], frames[2])
    with Image.open(path) as image:
        durations = []
        for index in range(image.n_frames):
            image.seek(index)
            durations.append(image.info["duration"])
    assert durations == [250] * 4


def test_a_write_that_fails_half_way_leaves_nothing_and_says_why(tmp_path, monkeypatch):
    encode, calls = frame_stream._png_parts, []

    def full_disk(patch):
        calls.append(1)
        if len(calls) == 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return encode(patch)
    monkeypatch.setattr(frame_stream, "_png_parts", full_disk)
    with pytest.raises(export.ExportError) as raised:
        write_animation(tmp_path / "full.png", 10, draw, frame_ms=100)
    assert "\n" not in str(raised.value) and "full.png" in str(raised.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".gif", ".png", ".mp4"])
def test_progress_and_cancel_cover_the_writing_not_only_the_drawing(tmp_path, suffix):
    """Each frame is in the file (its temporary, in the target folder) when its progress is told, so a long
    encode is never a wait without progress and Cancel; a cancel then leaves nothing."""
    written = []

    def progress(done, total):
        temporary = [p for p in tmp_path.iterdir() if p.name.startswith(".streamed")]
        written.append(temporary[0].stat().st_size if len(temporary) == 1 else None)

    with pytest.raises(AnimationCancelled):
        write_animation(tmp_path / f"streamed{suffix}", 8, draw, 100, progress, lambda: len(written) == 6)
    assert None not in written and len(written) == 6, written
    if suffix != ".mp4":                          # ffmpeg buffers its own output; the others write as they go
        assert all(later > earlier for earlier, later in zip(written, written[1:])), written
    assert list(tmp_path.iterdir()) == []
