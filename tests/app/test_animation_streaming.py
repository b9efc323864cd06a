"""GIF and APNG animations are written a frame at a time: the memory an animation takes while it is written
does not grow with its frame count (tracemalloc, 200 frames against 20), every frame is in the file read back
(imageio), a step that changes nothing keeps its frame, and a write that fails half way leaves nothing."""
from __future__ import annotations

import gc
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
    """The most bytes Python held at once (numpy's arrays included) while `total` frames were written: the least
    of two writes, since tracemalloc also counts what another thread left running by an earlier test in the same
    process allocates meanwhile (seen once in the whole suite, never alone)."""
    peaks = []
    for _ in range(2):
        gc.collect()
        tracemalloc.start()
        try:
            write_animation(path, total, draw, frame_ms=100)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    return min(peaks)


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
            assert difference.mean() < 2.0, index                           # 256 colours per frame


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


class FullDiskAfter:
    """imageio_ffmpeg.write_frames as it is, but the disk fills at the fifth frame (ffmpeg's broken pipe, which
    carries no errno)."""

    def __init__(self, write_frames):
        self.write_frames, self.sent = write_frames, 0

    def __call__(self, *args, **kwargs):
        self.sent = 0
        writer = self.write_frames(*args, **kwargs)
        return self.filling(writer)

    def filling(self, writer):
        writer.send(None)
        try:
            while True:
                picture = yield
                self.sent += 1
                if self.sent == 5:
                    raise OSError("[Errno 32] Broken pipe\n\nFFMPEG COMMAND:\nffmpeg -y ...\n\n"
                                  "av_interleaved_write_frame(): No space left on device")
                writer.send(picture)
        finally:
            writer.close()


@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_a_write_that_fails_half_way_leaves_nothing_and_says_why(tmp_path, monkeypatch, suffix):
    import imageio_ffmpeg

    from explorer.core import files

    monkeypatch.setattr(imageio_ffmpeg, "write_frames", FullDiskAfter(imageio_ffmpeg.write_frames))
    target = tmp_path / f"full{suffix}"
    with pytest.raises(export.ExportError) as raised:
        write_animation(target, 10, draw, frame_ms=100)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"Cannot write {target}") and "ffmpeg" in message
    monkeypatch.setattr(files, "_free_bytes", lambda folder: 0)             # the disk filled while encoding
    with pytest.raises(export.ExportError, match="the disk is full"):
        write_animation(target, 10, draw, frame_ms=100)
    assert list(tmp_path.iterdir()) == []


def cut_short(write_frames):
    """imageio_ffmpeg.write_frames as it is, but ffmpeg's file loses its last third as ffmpeg finishes it (the
    disk filled after the last frame was piped; ffmpeg's exit status never reaches the caller)."""
    def writer(path, *args, **kwargs):
        inner = write_frames(path, *args, **kwargs)
        inner.send(None)
        try:
            while True:
                inner.send((yield))
        finally:
            inner.close()
            with open(path, "r+b") as written:
                written.truncate(2 * written.seek(0, 2) // 3)
    return writer


@pytest.mark.parametrize("suffix", [".gif", ".png"])
def test_a_file_ffmpeg_cut_short_is_not_kept(tmp_path, monkeypatch, suffix):
    import imageio_ffmpeg

    monkeypatch.setattr(imageio_ffmpeg, "write_frames", cut_short(imageio_ffmpeg.write_frames))
    target = tmp_path / f"short{suffix}"
    with pytest.raises(export.ExportError) as raised:
        write_animation(target, 12, draw, frame_ms=100)
    assert "\n" not in str(raised.value) and str(raised.value).startswith(f"Cannot write {target}")
    assert "ffmpeg" in str(raised.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", [".gif", ".png", ".mp4"])
def test_progress_and_cancel_cover_the_writing_not_only_the_drawing(tmp_path, suffix):
    """Each frame is handed to the encoder, writing its temporary in the target folder, when its progress is
    told, so a long encode is never a wait without progress and Cancel; a cancel then leaves nothing."""
    written = []

    def progress(done, total):
        temporary = [p for p in tmp_path.iterdir() if p.name.startswith(".streamed")]
        written.append(temporary[0].stat().st_size if len(temporary) == 1 else None)

    with pytest.raises(AnimationCancelled):
        write_animation(tmp_path / f"streamed{suffix}", 8, draw, 100, progress, lambda: len(written) == 6)
    assert None not in written and len(written) == 6, written
    assert list(tmp_path.iterdir()) == []
