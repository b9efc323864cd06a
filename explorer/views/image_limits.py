"""How large an exported image may be: checked before anything is drawn, by the CLI and by the app alike.

An image is held about three times while it is drawn and encoded (the scene, the QImage at 4 bytes a
pixel, the PNG encoder's rows), so 30000x30000 pixels grew to 10.9 GB. Past 16,384 pixels a side a
heat map's cells are many pixels each anyway, and Qt paints no wider than 32,767.
"""
from __future__ import annotations

from explorer.core.errors import ExplorerError

MIN_SIDE = 16
MAX_SIDE = 16384
MAX_PIXELS = 40_000_000          # ~0.5 GB while drawn


class ImageSizeError(ExplorerError):
    """An export's asked size is outside what is drawn."""


def check_image_size(width: int, height: int) -> tuple[int, int]:
    """(width, height) when an image of that size may be drawn, else one sentence saying the limits."""
    if min(width, height) < MIN_SIDE:
        raise ImageSizeError(f"An image of {width}x{height} pixels is too small: each side must be at least "
                             f"{MIN_SIDE} pixels.")
    # the one limit the size is past (boundary27: 16385x100 read as if it had too many pixels)
    if max(width, height) > MAX_SIDE:
        raise ImageSizeError(f"An image of {width}x{height} pixels is too large: each side may be at most "
                             f"{MAX_SIDE:,} pixels (e.g. 8000x5000).")
    if width * height > MAX_PIXELS:
        raise ImageSizeError(f"An image of {width}x{height} is {width * height:,} pixels; an export may have at "
                             f"most {MAX_PIXELS:,} pixels (e.g. 8000x5000).")
    return width, height
