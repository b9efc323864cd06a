"""Where each head's tile sits in the all-heads grid: layers down, each layer's heads across, wrapped onto bands of
`per_row` heads where a row of them all does not fit the width (app.widgets.map_grid.heads_per_row), with a
one-pixel gutter between tiles.

The one mapping between (layer, head) and the grid's pixels: the grid's image (views.grid.Mosaic), picking a tile
under the pointer, the selected head's outline, the ablation marks, the labels and scrolling a layer into sight all
read it, so a wrapped head is drawn, named and picked as itself. Numpy only (none needed).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TileLayout:
    """`n_layers` x `n_heads` tiles of `tile_shape` (rows, columns) pixels, `per_row` heads a row (None: all)."""

    n_layers: int
    n_heads: int
    tile_shape: tuple[int, int]
    per_row: int | None = None

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
        (rows, columns), (r, c) = self.tiles, self.tile_shape
        return rows * (r + 1) - 1, columns * (c + 1) - 1

    def slot(self, layer: int, head: int) -> tuple[int, int]:
        """The (row, column) of tiles a head is drawn at: its layer's bands, its heads in order along them."""
        band, column = divmod(head, self.across)
        return layer * self.bands + band, column

    def tile_origin(self, layer: int, head: int) -> tuple[int, int]:
        """The head's tile's top-left pixel."""
        (r, c), (row, column) = self.tile_shape, self.slot(layer, head)
        return row * (r + 1), column * (c + 1)

    def tile_at(self, row: int, col: int) -> tuple[int, int] | None:
        """(layer, head) of the tile under a pixel, or None in a gutter, an empty slot or outside."""
        r, c = self.tile_shape
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
        r, c = self.tile_shape
        return layer * self.bands * (r + 1), 0, self.bands * (r + 1) - 1, self.across * (c + 1) - 1

    def layer_centres(self) -> list[float]:
        """Where each layer's label goes: the middle of its bands."""
        return [top + (height - 1) / 2 for top, _, height, _ in map(self.layer_block, range(self.n_layers))]

    def head_centres(self) -> list[float]:
        """Where each column's label (head_labels) goes."""
        c = self.tile_shape[1]
        return [column * (c + 1) + (c - 1) / 2 for column in range(self.across)]

    def head_labels(self) -> list[str]:
        """The columns' heads in a layer's first band: "H0", "H1", ... (a row's label adds its first head)."""
        return [f"H{column}" for column in range(self.across)]

    def row_labels(self) -> tuple[list[str], list[float]]:
        """A label per row of tiles and where it goes: "L3" on a layer's first band, "+4" on the band whose heads
        are the columns' heads plus 4 (wrapped 4 a row, column H1 of the "+4" band is head 5). Short, as the
        columns' labels: "H1·5·9" over a column of 29 px was turned on its side and grew the axis under the
        tiles' size."""
        r = self.tile_shape[0]
        labels, centres = [], []
        for layer in range(self.n_layers):
            for band in range(self.bands):
                labels.append(f"L{layer}" if band == 0 else f"+{band * self.across}")
                centres.append((layer * self.bands + band) * (r + 1) + (r - 1) / 2)
        return labels, centres
