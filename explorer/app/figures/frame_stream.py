"""Animated GIF and animated PNG (APNG) written a frame at a time through ffmpeg (imageio-ffmpeg's
write_frames, the binary the app already carries for MP4), so that an animation of hundreds of steps never
holds more than the frame being handed over: each frame goes down ffmpeg's pipe as it is drawn.

Pillow's own writers (and imageio's, which hands them every frame at the end) keep every frame until the file
is closed, and Pillow's GIF writer merges a frame equal to the one before into it, so a step that changes
nothing would lose its frame. ffmpeg is asked to keep every frame and its time:

  - the frame rate is exact, fps = 1000 / frame_ms as a fraction, and `-fps_mode passthrough` keeps a frame
    equal to the one before (a step that changes nothing keeps its frame and its time);
  - APNG: the apng encoder, rgb24 in and out (lossless), `-plays 0`: loop forever;
  - GIF: each frame gets its own 256-colour palette from its own pixels (palettegen stats_mode=single, then
    paletteuse new=1, without dithering so text and a heat map's cells stay flat), `-loop 0`: loop forever.
    A frame with its own palette is stored whole (ffmpeg crops to the changed rectangle only under one shared
    palette, which would need every frame before the first is written): 31 attention maps of 1000 × 800 take
    1.27 MB against 1.08 MB stored as changed rectangles, each frame within 0.03 of its picture on average.
ffmpeg is a separate process, so its own memory is not Python's; Python holds one frame at a time. A failure
of the encoder, or a file that does not read back with every frame, is an OSError (video.EncoderFailure),
which the atomic writer turns into one sentence (a full disk says so).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from fractions import Fraction
from pathlib import Path

import numpy as np
from PIL import Image

from explorer.app.figures.video import failure, last_line

# one palette per frame, from that frame's pixels alone; no dithering: a dithered cell or letter is speckled
GIF_PALETTE_PER_FRAME = ("split[a][b];[a]palettegen=stats_mode=single[p];"
                         "[b][p]paletteuse=new=1:dither=none")
KEEP_EVERY_FRAME = ["-fps_mode", "passthrough"]
APNG = {"codec": "apng", "pix_fmt_out": "rgb24",
        "output_params": ["-f", "apng", "-plays", "0", *KEEP_EVERY_FRAME]}
GIF = {"codec": "gif", "pix_fmt_out": "pal8",
       "output_params": ["-f", "gif", "-loop", "0", "-filter_complex", GIF_PALETTE_PER_FRAME, *KEEP_EVERY_FRAME]}


def rgb_frames(pictures: Iterable[np.ndarray]) -> Iterator[np.ndarray]:
    """Each picture as a contiguous (H, W, 3) uint8 array, checked to share the first one's size."""
    size = None
    for picture in pictures:
        picture = np.ascontiguousarray(np.asarray(picture, dtype=np.uint8)[..., :3])
        if size is not None and picture.shape != size:
            raise ValueError(f"an animation's frames must share one size: {picture.shape[:2]} after {size[:2]}")
        size = picture.shape
        yield picture


def stream_through_ffmpeg(path: str | Path, pictures: Iterable[np.ndarray], frame_ms: int, codec: str,
                          pix_fmt_out: str, output_params: list[str]) -> int:
    """Pipe `pictures` ((H, W, 3) uint8) into ffmpeg one at a time, writing `path`; the frame count."""
    import imageio_ffmpeg  # optional, and only for a video (its writer says if missing)

    writer, count = None, 0
    try:
        for picture in rgb_frames(pictures):
            if writer is None:                    # the size is known once the first frame is drawn
                writer = imageio_ffmpeg.write_frames(
                    str(path), (picture.shape[1], picture.shape[0]), pix_fmt_in="rgb24", pix_fmt_out=pix_fmt_out,
                    fps=Fraction(1000, max(int(frame_ms), 1)), quality=None, codec=codec, macro_block_size=1,
                    ffmpeg_log_level="error", output_params=list(output_params))
                writer.send(None)
            writer.send(picture)
            count += 1
    except (RuntimeError, OSError) as error:
        if getattr(error, "errno", None):         # the system's own reason (a full disk, no permission)
            raise
        raise failure(path, f"the {codec.upper()} encoder (ffmpeg) stopped: {last_line(error)}") from None
    finally:
        if writer is not None:
            writer.close()                        # waits for ffmpeg to finish the file (or to stop)
    if count == 0:
        raise ValueError("an animation needs at least one frame")
    check_frame_count(path, count, codec)
    return count


def check_frame_count(path: str | Path, count: int, codec: str) -> None:
    """ffmpeg's exit status does not reach write_frames' caller: a file cut short (the disk filled as ffmpeg
    finished it) is caught by reading it back: a PNG's chunks to its end (CRC-32 each: Pillow's verify) and the
    frame count (Pillow reads headers, not pixels)."""
    try:
        with Image.open(path) as image:
            if image.format == "PNG":
                image.verify()                    # the acTL count is written first, so it cannot tell
        with Image.open(path) as image:
            found = getattr(image, "n_frames", 1)
    except (OSError, SyntaxError, ValueError, EOFError, IndexError) as error:     # Pillow on a cut file
        raise failure(path, f"the {codec.upper()} encoder (ffmpeg) left a file that does not read back "
                            f"({last_line(error)})") from None
    if found != count:
        raise failure(path, f"the {codec.upper()} encoder (ffmpeg) wrote {found} of {count} frames")


def write_gif(path: str | Path, pictures: Iterable[np.ndarray], frame_ms: int) -> int:
    """`pictures` ((H, W, 3) uint8, one size) as an animated GIF at `path`, a frame at a time; the frame count."""
    return stream_through_ffmpeg(path, pictures, frame_ms, **GIF)


def write_apng(path: str | Path, pictures: Iterable[np.ndarray], frame_ms: int) -> int:
    """`pictures` ((H, W, 3) uint8, one size) as an animated PNG at `path`, a frame at a time; the frame count."""
    return stream_through_ffmpeg(path, pictures, frame_ms, **APNG)
