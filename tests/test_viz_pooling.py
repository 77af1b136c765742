"""Pooling long attention maps into blocks (viz/pooling.py), checked against a plain loop over the blocks."""

import re

import numpy as np
import pytest

from viz import pooling


def loop_pool(weights, a, b, mask=None):
    """Each a x b block's max and mean over its unmasked cells, by hand (NaN where all are masked)."""
    Tq, Tk = weights.shape
    nq, nk = -(-Tq // a), -(-Tk // b)
    top, mean = np.full((nq, nk), np.nan), np.full((nq, nk), np.nan)
    for i in range(nq):
        for j in range(nk):
            cells = [
                weights[q, k]
                for q in range(i * a, min(Tq, (i + 1) * a))
                for k in range(j * b, min(Tk, (j + 1) * b))
                if mask is None or not mask[q, k]
            ]
            if cells:
                top[i, j], mean[i, j] = max(cells), sum(cells) / len(cells)
    return top, mean


@pytest.fixture(scope="module")
def rng():
    return np.random.default_rng(7)


def test_block_edges_cover_every_position_once():
    for n, cells in [(1, 4), (4, 4), (5, 4), (9, 4), (1000, 256), (1024, 256), (2000, 256)]:
        edges = pooling.block_edges(n, cells)
        assert edges[0] == 0 and edges[-1] == n
        assert len(edges) - 1 <= cells
        sides = np.diff(edges)
        assert (sides[:-1] == pooling.block_side(n, cells)).all() and 1 <= sides[-1] <= sides[0]


@pytest.mark.parametrize("shape, cells", [((7, 10), 3), ((9, 9), 4), ((5, 3), 2), ((4, 4), 8)])
def test_pool_matches_a_loop_over_blocks(rng, shape, cells):
    w = rng.random(shape).astype(np.float32)
    got = pooling.pool(w, cells)
    a, b = pooling.block_side(shape[0], cells), pooling.block_side(shape[1], cells)
    top, mean = loop_pool(w, a, b)
    np.testing.assert_allclose(got.max, top, rtol=1e-6)
    np.testing.assert_allclose(got.mean, mean, rtol=1e-6)
    assert got.max.dtype == np.float32 and got.blocks == (a, b) and got.shape == shape


def test_a_map_that_fits_is_unchanged(rng):
    w = rng.random((5, 6)).astype(np.float32)
    got = pooling.pool(w, 8)
    np.testing.assert_array_equal(got.max, w)
    np.testing.assert_array_equal(got.mean, w)
    assert got.blocks == (1, 1)


def test_masked_cells_are_left_out_and_a_fully_masked_block_is_nan(rng):
    w = np.tril(rng.random((9, 9))).astype(np.float32)  # zeros above the diagonal, as a causal map
    mask = pooling.causal_mask(9, 9)
    got = pooling.pool(w, 3, mask=mask)
    top, mean = loop_pool(w, 3, 3, mask)
    np.testing.assert_allclose(got.mean, mean, rtol=1e-6)
    np.testing.assert_allclose(got.max, top, rtol=1e-6)
    assert np.isnan(got.mean[0, 2]) and np.isnan(got.max[0, 2])  # queries 0-2 see none of keys 6-8
    assert not np.isnan(got.mean[2, 0])


def test_leading_axes_are_pooled_each_on_its_own(rng):
    w = rng.random((2, 3, 7, 5)).astype(np.float32)
    got = pooling.pool(w, 2)
    for layer in range(2):
        for head in range(3):
            top, mean = loop_pool(w[layer, head], 4, 3)
            np.testing.assert_allclose(got.mean[layer, head], mean, rtol=1e-6)
            np.testing.assert_allclose(got.max[layer, head], top, rtol=1e-6)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("chunk", [1, 13, 10_000])
def test_pool_rows_reads_blocks_of_rows_and_agrees_with_a_loop(rng, causal, chunk):
    w = rng.random((11, 11)).astype(np.float32)
    if causal:  # a causal map's masked cells hold 0
        w = np.tril(w)
    reads = []

    def rows_of(rows: slice):
        reads.append((rows.start, rows.stop))
        return w[rows]

    got = pooling.pool_rows(rows_of, 11, 11, cells=4, causal=causal, chunk_cells=chunk)
    mask = pooling.causal_mask(11, 11) if causal else None
    top, mean = loop_pool(w, 3, 3, mask)
    np.testing.assert_allclose(got.max, top, rtol=1e-6)
    np.testing.assert_allclose(got.mean, mean, rtol=1e-6)
    covered = [q for lo, hi in reads for q in range(lo, hi)]
    assert covered == list(range(11))  # every row read once, in order
    if chunk == 1:  # one query block (3 rows) a read: never the whole map at once
        assert max(hi - lo for lo, hi in reads) == 3


def test_pool_rows_names_rows_of_the_wrong_shape():
    with pytest.raises(ValueError, match="should have shape"):
        pooling.pool_rows(lambda rows: np.zeros((1, 3)), 4, 4, cells=2)


def test_visible_counts_count_the_cells_a_causal_mask_leaves():
    q_edges, k_edges = pooling.block_edges(7, 3), pooling.block_edges(7, 3)  # blocks of 3: 0-2, 3-5, 6
    got = pooling.visible_counts(q_edges, k_edges, causal=True)
    mask = pooling.causal_mask(7, 7)
    expected = [[(~mask[i * 3 : i * 3 + 3, j * 3 : j * 3 + 3]).sum() for j in range(3)] for i in range(3)]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(pooling.visible_counts(q_edges, k_edges, causal=False), [[9, 9, 3], [9, 9, 3],
                                                                                           [3, 3, 1]])  # fmt: skip


def test_causal_mask_of_a_window_counts_from_its_start():
    mask = pooling.causal_mask(2, 3, q_start=5, k_start=4)
    np.testing.assert_array_equal(mask, [[False, False, True], [False, False, False]])  # keys 4, 5, 6; queries 5, 6


def test_fit_range_keeps_a_window_inside_and_at_most_most_long():
    assert pooling.fit_range(10, 5, 100, most=64) == (5, 10)
    assert pooling.fit_range(-3, 500, 100, most=64) == (0, 63)
    assert pooling.fit_range(90, 300, 100, most=64) == (90, 99)
    assert pooling.default_range(30) == (0, 29)
    assert pooling.default_range(1000) == (0, 63)


def test_of_names_an_unknown_pooling():
    got = pooling.pool(np.ones((2, 2)), 1)
    assert got.of("max").shape == (1, 1)
    with pytest.raises(ValueError, match=re.escape(f"{pooling.HOWS}, got 'median'")):
        got.of("median")
