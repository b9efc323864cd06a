"""Animated GIF and animated PNG (APNG) written a frame at a time, so that an animation of hundreds of steps
never holds more than the frame being written and the one before it.

Pillow's own writers (and imageio's, which hands them every frame at the end) keep every frame until the file
is closed, and Pillow's GIF writer merges a frame equal to the one before into it, so a step that changes
nothing would lose its frame. Here each frame is encoded on its own by Pillow (a one-frame GIF or PNG in
memory) and its image data copied into the animation as it comes:

  - only the rectangle that differs from the previous frame is stored (a 1 × 1 patch where nothing
    changed, so that every step keeps its frame and its time), drawn over what is shown
    (GIF disposal 1 "leave in place"; APNG dispose_op 0, blend_op 0 "source");
  - GIF: each patch has its own 256-colour table (Pillow's adaptive palette), a delay of frame_ms / 10
    centiseconds, and the NETSCAPE2.0 extension loops forever (GIF89a specification, §23-§26);
  - APNG: the first frame is the PNG's IDAT (so a viewer without APNG shows it), later frames are fdAT
    chunks, each after its fcTL; the frame count in acTL is written at the end (APNG specification 1.0).
A write that fails (a full disk) is an OSError, which the atomic writer turns into one sentence.
"""
from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from PIL import Image

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
GIF_LOOP_FOREVER = b"\x21\xff\x0bNETSCAPE2.0\x03\x01\x00\x00\x00"


def changed_box(picture: np.ndarray, previous: np.ndarray | None) -> tuple[int, int, int, int]:
    """(top, left, bottom, right) of the pixels of `picture` that differ from `previous`; the whole frame
    without one, and the 1 × 1 corner where nothing differs."""
    if previous is None:
        return 0, 0, picture.shape[0], picture.shape[1]
    if previous.shape != picture.shape:
        raise ValueError(f"an animation's frames must share one size: {picture.shape[:2]} after {previous.shape[:2]}")
    changed = np.any(picture != previous, axis=-1)
    rows, columns = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
    if rows.size == 0:
        return 0, 0, 1, 1
    return int(rows[0]), int(columns[0]), int(rows[-1]) + 1, int(columns[-1]) + 1


def patches(pictures: Iterable[np.ndarray]):
    """(full size (H, W), box, the box's pixels) for each picture, keeping only the one before it."""
    previous = None
    for picture in pictures:
        picture = np.ascontiguousarray(np.asarray(picture, dtype=np.uint8)[..., :3])
        top, left, bottom, right = changed_box(picture, previous)
        yield picture.shape[:2], (top, left), picture[top:bottom, left:right]
        previous = picture


# ----- GIF --------------------------------------------------------------------------------------
def _gif_parts(patch: np.ndarray) -> tuple[int, bytes, bytes]:
    """Pillow's one-frame GIF of `patch`, taken apart: the colour table's size bits, the table, and the
    image data (LZW minimum code size and data sub-blocks, with their terminator)."""
    buffer = io.BytesIO()
    Image.fromarray(patch, "RGB").save(buffer, "GIF", interlace=False)     # rows in order, as the descriptor says
    data = buffer.getvalue()
    packed = data[10]
    bits, table = packed & 7, b""
    at = 13
    if packed & 0x80:                                     # the global colour table
        at += 3 * 2 ** (bits + 1)
        table = data[13:at]
    while data[at] != 0x2C:                               # skip extensions up to the image descriptor
        at = _skip_sub_blocks(data, at + 2)
    local = data[at + 9]
    at += 10
    if local & 0x80:                                      # a local table, if Pillow wrote one, wins
        bits = local & 7
        table, at = data[at: at + 3 * 2 ** (bits + 1)], at + 3 * 2 ** (bits + 1)
    end = _skip_sub_blocks(data, at + 1)
    return bits, table, data[at:end]


def _skip_sub_blocks(data: bytes, at: int) -> int:
    """The index just past the data sub-blocks starting at `at` (each a length byte, then that many bytes)."""
    while data[at] != 0:
        at += data[at] + 1
    return at + 1


def write_gif(path: str | Path, pictures: Iterable[np.ndarray], frame_ms: int) -> int:
    """`pictures` ((H, W, 3) uint8, one size) as an animated GIF at `path`, a frame at a time; the frame count."""
    delay = max(1, round(int(frame_ms) / 10))
    count = 0
    with open(path, "wb") as handle:
        for (height, width), (top, left), patch in patches(pictures):
            if count == 0:
                handle.write(b"GIF89a" + struct.pack("<HHBBB", width, height, 0, 0, 0) + GIF_LOOP_FOREVER)
            bits, table, image = _gif_parts(patch)
            handle.write(struct.pack("<BBBBHBB", 0x21, 0xF9, 4, 1 << 2, delay, 0, 0))        # disposal 1
            handle.write(struct.pack("<BHHHHB", 0x2C, left, top, patch.shape[1], patch.shape[0], 0x80 | bits))
            handle.write(table + image)
            handle.flush()                                # each frame on disk as it is told done
            count += 1
        handle.write(b"\x3b")
    return count


# ----- APNG -------------------------------------------------------------------------------------
def _chunk(kind: bytes, data: bytes) -> bytes:
    """A PNG chunk: length, type, data, CRC-32 of type and data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _png_parts(patch: np.ndarray) -> tuple[bytes, bytes]:
    """Pillow's PNG of `patch`, taken apart: its IHDR data and its IDAT data joined."""
    buffer = io.BytesIO()
    Image.fromarray(patch, "RGB").save(buffer, "PNG", compress_level=6)
    data, at = buffer.getvalue(), len(PNG_SIGNATURE)
    header, image = b"", []
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at: at + 8])
        body = data[at + 8: at + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            image.append(body)
        at += 12 + length
    return header, b"".join(image)


def write_apng(path: str | Path, pictures: Iterable[np.ndarray], frame_ms: int) -> int:
    """`pictures` ((H, W, 3) uint8, one size) as an animated PNG at `path`, a frame at a time; the frame count."""
    sequence = count = 0
    with open(path, "w+b") as handle:
        for _, (top, left), patch in patches(pictures):
            header, image = _png_parts(patch)
            if count == 0:
                handle.write(PNG_SIGNATURE + _chunk(b"IHDR", header))
                frames_at = handle.tell()
                handle.write(_chunk(b"acTL", struct.pack(">II", 0, 0)))       # the count, once known
            control = struct.pack(">IIIIIHHBB", sequence, patch.shape[1], patch.shape[0], left, top,
                                  int(frame_ms), 1000, 0, 0)
            handle.write(_chunk(b"fcTL", control))
            if count == 0:
                handle.write(_chunk(b"IDAT", image))
                sequence += 1
            else:
                handle.write(_chunk(b"fdAT", struct.pack(">I", sequence + 1) + image))
                sequence += 2
            handle.flush()
            count += 1
        if count == 0:
            raise ValueError("an animation needs at least one frame")
        handle.write(_chunk(b"IEND", b""))
        handle.seek(frames_at)
        handle.write(_chunk(b"acTL", struct.pack(">II", count, 0)))                 # 0 plays: loop forever
    return count
