"""How large the Attention grid's tiles are, and how many heads a row of them holds, in the room a TileScroll has
(app.widgets.map_grid): each tile at least MIN_TILE_PX a side, or a little less for a tile of few tokens."""
from __future__ import annotations

from explorer.app.widgets.kv_occupancy import MIN_PLOT_PX

MIN_TILE_PX = 48             # a tile of the all-heads grid, each way: MiniLM's 12 heads beside Learn were 11 x 62 px
MIN_CELL_PX = 4              # a token's cells in a tile of few tokens, each way, at least
MIN_SMALL_TILE_PX = 24       # a tile of a token or two: room for its head's label ("H11") above it


def least_tile_px(rows: int, columns: int) -> float:
    """The least side of a tile of `rows` x `columns` cells that keeps it readable: MIN_CELL_PX a token, within
    MIN_SMALL_TILE_PX and MIN_TILE_PX. The translator's step 0 (a 1 x 1 map) at MIN_TILE_PX, its one-cell
    gutters as wide as a tile, showed one head of four in sight at 1366x768 (drive20 m5); a 19-token tile keeps
    MIN_TILE_PX."""
    return min(MIN_TILE_PX, max(MIN_SMALL_TILE_PX, MIN_CELL_PX * max(rows, columns)))


def heads_per_row(n_layers: int, n_heads: int, tile_px: tuple[int, int], room: tuple[float, float], bar: int,
                  least: float, least_box: float = MIN_PLOT_PX) -> int | None:
    """How many heads a row of tiles holds (None: every head in one row, as long as that keeps tiles `least` px a
    side and its plot `least_box` px tall, or where not even one head fits the width: a room not laid out yet; the
    translator's 3 x 4 grid of thin gutters beside Learn was a 111 px strip in a room 398 px tall, its tiles 33 px
    where two a row are 60 px). Where the whole grid fits in `room`
    with its heads wrapped, the wrap with the largest tiles, its plot at least `least_box` px wide (narrower is a
    strip of ticks: the tiles then reach a few px past a narrower room) (the translator's four 1 x 1 tiles beside
    Learn: two rows, not one row behind a scroll bar over 300 px of grey, drive21 m5); where it scrolls down anyway,
    as few bands as the heads fill at `least` px in the width, less the vertical scroll bar, the heads shared
    evenly among them (no sideways scroll hides a layer's last heads: SmolLM2's H3-H8 at 1366x768, drive21 m13)."""
    (r, c), (width, height) = tile_px, room         # a tile's pixels, a one-pixel gutter after each
    if width < least:
        return None

    def sides(per_row: int, width: float) -> tuple[float, float]:
        bands = -(-n_heads // per_row)
        return width * c / (per_row * (c + 1) - 1), height * r / (n_layers * bands * (r + 1) - 1)

    one_row = min(sides(n_heads, width))
    if one_row >= least and (one_row * (n_layers * (r + 1) - 1) / r >= least_box or height < least_box):
        return None
    box = max(width, least_box)
    fitting = [k for k in range(1, n_heads + 1)        # a plot as wide as `box` is so within rounding
               if min(sides(k, box)) >= least and min(sides(k, box)) * (k * (c + 1) - 1) / c >= least_box - 1e-6]
    if fitting:
        whole = max(fitting, key=lambda k: (min(sides(k, box)), k))
        return None if whole == n_heads else whole
    wide = [k for k in range(1, n_heads + 1) if sides(k, width - bar)[0] >= least]
    if not wide or width - bar < least_box:
        return None                                 # too narrow a room to wrap into: whole columns scroll
    bands = -(-n_heads // max(wide))                # as few bands as fit, their heads shared out evenly:
    per_row = -(-n_heads // bands)                  # SmolLM2's 9 heads were 8 and 1 (drive26), now 5 and 4
    return None if per_row == n_heads else per_row


def tile_side(span: tuple[float, float], columns: int, pixels: int, room: tuple[float, float], bar: int,
               right: float, least: float = MIN_TILE_PX) -> float:
    """A square tile's side in px for a grid `span` tile sides wide and tall (gutters included) in `room`: the
    largest that shows every tile, else (scroll bars taking `bar` px) the largest that fills the width with
    whole columns of at least `least` px, `columns` of `pixels` image pixels and a one-pixel gutter each (scrolled to
    the left, the view's `right` margin is out of sight and the columns have its room too)."""
    width, height = room
    side = min(width / span[0], height / span[1]) * (1 - 1e-9)     # its px rounded up stay within the room
    if side >= least:
        return side
    if height / span[1] < least:
        width -= bar                                # the vertical scroll bar takes its width
    if width / span[0] >= least:
        return width / span[0]                      # every column, scrolled down
    width += right - 1                              # a px to spare for the view's rounding up
    whole = max(1, min(columns, int((width * pixels / least + 1) // (pixels + 1))))
    return max(least, width * pixels / (whole * (pixels + 1) - 1))
