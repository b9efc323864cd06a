"""Where each head's tile sits in the all-heads grid: layers down, each layer's heads across, wrapped onto bands of
`per_row` heads where a row of them all does not fit the width (app.widgets.tile_fit.heads_per_row), with a
one-pixel gutter between tiles. A tile of fewer than LEAST_TILE_PX tokens a side has each token's cell drawn as
a block of pixels, so that a gutter is never more than 1/LEAST_TILE_PX of a tile: the translator's cross grid
at the prefill (1-row tiles, drawn square) had gutters between its bands as tall as its tiles, half the grid.

The one mapping between (layer, head) and the grid's pixels: the grid's image (views.grid.Mosaic), picking a tile
under the pointer, the selected head's outline, the ablation marks, the labels and scrolling a layer into sight all
read it, so a wrapped head is drawn, named and picked as itself. Numpy only (none needed).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

LEAST_TILE_PX = 8         # a tile's image, each way, at least: its one-pixel gutter at most an eighth of it


@dataclass(frozen=True)
class TileLayout:
    """`n_layers` x `n_heads` tiles of `cells` (rows, columns) tokens, `per_row` heads a row (None: all), each
    tile `tile_px` pixels of the grid's image."""

    n_layers: int
    n_heads: int
    cells: tuple[int, int]
    per_row: int | None = None

    @property
    def cell_px(self) -> tuple[int, int]:
        """The pixels of a token's cell, down and across: 1 where a tile has LEAST_TILE_PX tokens or more."""
        return tuple(math.ceil(LEAST_TILE_PX / n) if 0 < n < LEAST_TILE_PX else 1 for n in self.cells)

    @property
    def tile_px(self) -> tuple[int, int]:
        """A tile's rows and columns of pixels."""
        return tuple(n * k for n, k in zip(self.cells, self.cell_px))

    def in_pixels(self, values):
        """Tiles of tokens' values (an array, tiles in its last two axes) as the image draws them: each token's cell
        a block of cell_px pixels."""
        down, across = self.cell_px
        return values.repeat(down, axis=-2).repeat(across, axis=-1)

    @property
    def across(self) -> int:
        """Heads in one row of tiles."""
        return self.n_heads if self.per_row is None else max(1, min(self.n_heads, self.per_row))

    @property
    def bands(self) -> int:
        """Rows of tiles a layer takes."""
        return -(-self.n_heads // self.across)

    @property
    def tiles(self) -> tuple[int, int]:
        """Rows and columns of tiles."""
        return self.n_layers * self.bands, self.across

    def image_shape(self) -> tuple[int, int]:
        """The grid's image in pixels, gutters between tiles (none after the last)."""
        (rows, columns), (r, c) = self.tiles, self.tile_px
        return rows * (r + 1) - 1, columns * (c + 1) - 1

    def slot(self, layer: int, head: int) -> tuple[int, int]:
        """The (row, column) of tiles a head is drawn at: its layer's bands, its heads in order along them."""
        band, column = divmod(head, self.across)
        return layer * self.bands + band, column

    def tile_origin(self, layer: int, head: int) -> tuple[int, int]:
        """The head's tile's top-left pixel."""
        (r, c), (row, column) = self.tile_px, self.slot(layer, head)
        return row * (r + 1), column * (c + 1)

    def tile_at(self, row: int, col: int) -> tuple[int, int] | None:
        """(layer, head) of the tile under a pixel, or None in a gutter, an empty slot or outside."""
        r, c = self.tile_px
        if row < 0 or col < 0 or row % (r + 1) == r or col % (c + 1) == c:
            return None
        layer, band = divmod(row // (r + 1), self.bands)
        column = col // (c + 1)
        head = band * self.across + column
        if column >= self.across or layer >= self.n_layers or head >= self.n_heads:
            return None
        return layer, head

    def layer_block(self, layer: int) -> tuple[int, int, int, int]:
        """(top, left, height, width) in pixels of all of a layer's tiles, its bands and their gutters."""
        r, c = self.tile_px
        return layer * self.bands * (r + 1), 0, self.bands * (r + 1) - 1, self.across * (c + 1) - 1

    def layer_centres(self) -> list[float]:
        """Where each layer's label goes: the middle of its bands."""
        return [top + (height - 1) / 2 for top, _, height, _ in map(self.layer_block, range(self.n_layers))]

    def head_centres(self) -> list[float]:
        """Where each column's label (head_labels) goes."""
        c = self.tile_px[1]
        return [column * (c + 1) + (c - 1) / 2 for column in range(self.across)]

    def head_labels(self) -> list[str]:
        """The columns' heads in a layer's first band: "H0", "H1", ... (a row's label adds its first head)."""
        return [f"H{column}" for column in range(self.across)]

    def row_labels(self) -> tuple[list[str], list[float]]:
        """A label per row of tiles and where it goes: "L3" on a layer's first band, "+4" on the band whose heads
        are the columns' heads plus 4 (wrapped 4 a row, column H1 of the "+4" band is head 5). Short, as the
        columns' labels: "H1·5·9" over a column of 29 px was turned on its side and grew the axis under the
        tiles' size."""
        r = self.tile_px[0]
        labels, centres = [], []
        for layer in range(self.n_layers):
            for band in range(self.bands):
                labels.append(f"L{layer}" if band == 0 else f"+{band * self.across}")
                centres.append((layer * self.bands + band) * (r + 1) + (r - 1) / 2)
        return labels, centres
