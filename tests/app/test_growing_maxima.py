"""A map that grows by a step (a row; a row and a column) is reduced to block maxima only where it changed, and the
result equals the whole map's reduction exactly, step after step, across block boundaries (issue 22: the embeddings'
8,000 x 576 map was reduced whole several times a step)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest

from explorer.drawing import maxima
from explorer.drawing.growing_maxima import GrowingMaxima
from explorer.drawing.heatmap import Heatmap
from tests.app.test_block_max import blockwise


class Counting:
    """block_max, counting the cells it was given."""

    def __init__(self) -> None:
        self.cells: list[int] = []
        self.reduce = maxima.block_max

    def __call__(self, matrix, k_rows, k_cols, signed=False):
        self.cells.append(int(np.asarray(matrix).size))
        return self.reduce(matrix, k_rows, k_cols, signed)


def growing_rows(rng, first: int, last: int, cols: int):
    """Views of one buffer a row longer each step, as the embeddings' stack hands them out."""
    buffer = rng.standard_normal((last, cols)).astype(np.float32)
    buffer[rng.random(buffer.shape) < 0.1] = np.nan
    for rows in range(first, last + 1):
        yield buffer[:rows]


def growing_map(rng, first: int, last: int):
    """A causal map a row and a column larger each step: masked (NaN) above the diagonal."""
    full = rng.random((last, last)).astype(np.float32)
    full[np.triu_indices(last, 1)] = np.nan
    for n in range(first, last + 1):
        yield full[:n, :n].copy()


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("grow", ["rows", "rows and columns"])
def test_each_step_equals_the_whole_reduction_across_block_boundaries(signed, grow):
    rng = np.random.default_rng(7 + signed)
    k_rows, k_cols = 4, 3
    images = growing_rows(rng, 13, 40, 13) if grow == "rows" else growing_map(rng, 13, 40)   # 7 block boundaries
    counting = Counting()
    kept = GrowingMaxima(counting)
    for step, image in enumerate(images):
        kept.changed()
        got = kept.reduce(image, k_rows, k_cols, signed)
        np.testing.assert_array_equal(got, blockwise(np.array(image), k_rows, k_cols, signed))
        np.testing.assert_array_equal(got, maxima.block_max(image, k_rows, k_cols, signed))
        if step:
            folded = got.shape[0] * image.shape[1]           # the rows' maxima folded k_cols columns at a time
            assert sum(counting.cells) <= k_rows * image.shape[1] + image.shape[0] * k_cols + folded, \
                "a step reduced more than its last block row and column"
        counting.cells.clear()
        narrower = kept.reduce(image, k_rows, k_cols + step % 3 + 1, signed)     # the view's width changed
        np.testing.assert_array_equal(narrower, blockwise(np.array(image), k_rows, k_cols + step % 3 + 1, signed))
        assert sum(counting.cells) <= got.shape[0] * image.shape[1], "a new width reduced more than the rows' maxima"
        counting.cells.clear()


def test_an_image_written_over_in_place_is_reduced_whole():
    buffer = np.zeros((12, 6), dtype=np.float32)
    kept = GrowingMaxima(maxima.block_max)
    kept.changed()
    kept.reduce(buffer[:8], 4, 3)
    buffer[:] = np.arange(72, dtype=np.float32).reshape(12, 6)      # another trace's rows in the same buffer
    kept.changed()
    np.testing.assert_array_equal(kept.reduce(buffer[:9], 4, 3), blockwise(buffer[:9].copy(), 4, 3, False))


def test_the_heatmap_reduces_only_a_steps_new_rows(qtbot, monkeypatch):
    """The embeddings' map in a panel-sized view: a step a row longer reduces a block row, and what is drawn is
    the whole map's maxima at the view's factors."""
    counting = Counting()
    monkeypatch.setattr(maxima, "block_max", counting)
    widget = pg.GraphicsLayoutWidget()
    widget.resize(400, 300)
    qtbot.addWidget(widget)
    heatmap = Heatmap(widget.ci, colorbar=False)
    rng = np.random.default_rng(3)
    buffer = rng.standard_normal((2100, 96)).astype(np.float32)
    heatmap.set_matrix(buffer[:2000], (-3.0, 3.0), keep_view=True)
    widget.show()
    qtbot.waitExposed(widget)
    qtbot.waitUntil(lambda: heatmap.image.factors != (1, 1))
    for rows in range(2001, 2011):
        counting.cells.clear()
        heatmap.set_matrix(buffer[:rows], (-3.0, 3.0), keep_view=True)
        k_x, k_y = heatmap.image.factors
        assert k_y > 1
        np.testing.assert_array_equal(heatmap.image.picture.image,
                                      blockwise(buffer[:rows].copy(), k_y, k_x, heatmap.image.signed))
        folded = -(-rows // k_y) * 96                      # the rows' maxima folded k_x columns at a time
        assert sum(counting.cells) <= 2 * (k_y * 96 + rows * k_x + folded), f"{counting.cells} cells for a row"
