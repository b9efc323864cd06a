"""The heat map's reduction by block maxima against its definition, one block at a time:
out[I, J] = max over the block (NaN only where the whole block is NaN), or the entry furthest from 0."""
import numpy as np
import pytest

from explorer.drawing.maxima import block_max


def blockwise(matrix: np.ndarray, k_rows: int, k_cols: int, signed: bool) -> np.ndarray:
    rows, cols = matrix.shape
    out = np.full((-(-rows // k_rows), -(-cols // k_cols)), np.nan, dtype=np.float32)
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            block = matrix[i * k_rows:(i + 1) * k_rows, j * k_cols:(j + 1) * k_cols].ravel()
            block = block[~np.isnan(block)]
            if block.size:
                out[i, j] = block[np.argmax(np.abs(block))] if signed else block.max()
    return out


@pytest.mark.parametrize("shape, factors", [((40, 12), (4, 3)), ((41, 13), (4, 3)), ((7, 50), (1, 9)),
                                            ((50, 7), (9, 1)), ((9, 9), (9, 9))])
@pytest.mark.parametrize("signed", [False, True])
def test_block_max_is_each_blocks_maximum(shape, factors, signed):
    rng = np.random.default_rng(sum(shape) + signed)
    matrix = rng.standard_normal(shape).astype(np.float32)
    matrix[rng.random(shape) < 0.2] = np.nan
    matrix[:factors[0], :factors[1]] = np.nan                   # one block wholly masked
    expected = blockwise(matrix, *factors, signed)
    assert np.isnan(expected[0, 0])
    np.testing.assert_array_equal(block_max(matrix, *factors, signed), expected)


def test_a_transposed_view_is_reduced_as_its_values():
    matrix = np.arange(24, dtype=np.float32).reshape(4, 6)
    np.testing.assert_array_equal(block_max(matrix.T, 2, 2, False), blockwise(matrix.T.copy(), 2, 2, False))
