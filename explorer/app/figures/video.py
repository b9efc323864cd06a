"""An animation's frames as an MP4 video (H.264), through imageio's ffmpeg plugin and the ffmpeg binary that the
imageio-ffmpeg wheel carries (the packaged app bundles it).

H.264 in yuv420p is the form every player and slide program reads. It keeps colour at half resolution each
way (4:2:0), so its width and height must be even: a frame with an odd side gets its last column or row
repeated once, and the picture itself is never scaled. Each frame lasts `frame_ms` (fps = 1000 / frame_ms).
A failure of the encoder is an OSError, which the atomic writer turns into one sentence (a full disk says so).
"""
from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

# imageio's 0-10 scale; for libx264 it is the constant rate factor CRF = 51·(1 - q/10) = 10: the panels'
# thin text and grid lines stay sharp, and frames that barely change cost almost nothing.
VIDEO_QUALITY = 8


class EncoderFailure(OSError):
    """ffmpeg could not be started or stopped while writing (no errno: the writer checks for a full disk)."""


def failure(path: str | Path, reason: str) -> OSError:
    """ffmpeg's failure to write `path`, as the system's own error where it is known: a file stopped at the
    file-size limit ffmpeg inherits from this process (RLIMIT_FSIZE, `ulimit -f`) is EFBIG, as a write by Python
    past it is (ffmpeg's exit status and its stderr do not reach us); otherwise an EncoderFailure (no errno: the
    atomic writer then checks for a full disk)."""
    try:
        import resource  # Unix only: Windows has no file-size limit to read

        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        if limit != resource.RLIM_INFINITY and os.path.getsize(path) >= limit:
            return OSError(errno.EFBIG, os.strerror(errno.EFBIG), str(path))
    except (ImportError, OSError, ValueError):           # no resource module (Windows), or no file at all
        pass
    return EncoderFailure(reason)


def even_sides(picture: np.ndarray) -> np.ndarray:
    """`picture` (H, W, 3) with its last row and column repeated where H or W is odd, for yuv420p."""
    height, width = picture.shape[:2]
    return np.pad(picture, ((0, height % 2), (0, width % 2), (0, 0)), mode="edge")


def write_video(path: str | Path, pictures: Iterable[np.ndarray], frame_ms: int) -> None:
    """Encode `pictures` ((H, W, 3) uint8, one per frame, all one size) as H.264 MP4 at `path`, a frame at a
    time, so a long animation is never held whole in memory."""
    import imageio.v2 as imageio  # start-up: imageio takes a second, only for an MP4

    try:
        import imageio_ffmpeg  # noqa: F401 (the binary; imageio's plugin finds it; optional: said if missing)
    except ImportError:
        raise EncoderFailure("MP4 needs the imageio-ffmpeg package (pip install imageio-ffmpeg)") from None
    try:
        count = 0
        with imageio.get_writer(str(path), format="FFMPEG", mode="I", fps=1000.0 / max(int(frame_ms), 1),
                                codec="libx264", pixelformat="yuv420p", quality=VIDEO_QUALITY,
                                macro_block_size=1) as writer:   # 1: never rescale; even_sides pads instead
            for picture in pictures:
                writer.append_data(even_sides(picture))
                count += 1
    except (RuntimeError, OSError) as error:
        if getattr(error, "errno", None):       # the system's own reason (a full disk, no permission)
            raise
        raise failure(path, f"the MP4 encoder (ffmpeg) stopped: {last_line(error)}") from None
    check_video(path, count)


def check_video(path: str | Path, count: int) -> None:
    """ffmpeg's exit status does not reach imageio's writer: a video cut short (the disk filled as ffmpeg wrote
    it, and its index, written last, is missing) is caught by reading it back, its frames counted by ffmpeg."""
    import imageio_ffmpeg  # optional, and only for an MP4 (write_video says if missing)

    try:
        found = imageio_ffmpeg.count_frames_and_secs(str(path))[0]
    except (RuntimeError, OSError, ValueError, IndexError) as error:
        raise failure(path, f"the MP4 encoder (ffmpeg) left a file that does not read back ({last_line(error)})") \
            from None
    if found != count:
        raise failure(path, f"the MP4 encoder (ffmpeg) wrote {found} of {count} frames")


def last_line(error: BaseException) -> str:
    """ffmpeg's last non-empty line of output (its reason), cut to one short clause. imageio-ffmpeg's message is
    the pipe's error, then "FFMPEG COMMAND:" and the command, then "FFMPEG STDERR OUTPUT:" and what ffmpeg said
    (nothing where its output was not caught): the headers and the command are no reason, the pipe's error is."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    said = [line for before, line in zip([""] + lines, lines)
            if not line.startswith("FFMPEG ") and before != "FFMPEG COMMAND:"]
    text = said[-1] if said else type(error).__name__
    return text if len(text) <= 120 else text[:117] + "…"
