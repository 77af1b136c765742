"""Attention maps longer than a chart can carry, reduced to blocks: pooling, block edges and windows.

A browser draws a map of a few hundred cells a side quickly; a map of 1,000-8,000 tokens a side (1-64 million cells)
it cannot, and a page should not send it. Longer maps are pooled into blocks of a x b positions, at most MAX_CELLS
blocks a side: each block's largest weight ("max": where any sharp attention is) and its mean ("mean": where the mass
is). A window (a range of query and key positions, at most MAX_CELLS a side) is shown at full resolution.

numpy in, numpy out. `pool` reduces a whole array; `pool_rows` reads a map in row blocks from a function (a lazy
capture's rows) and never holds more than one block of rows, so a map of any length is pooled in bounded memory.
Masked cells (the causal mask: key after query) are left out of both poolings; a block with nothing but masked cells
is NaN (drawn as masked).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_CELLS = 256  # most cells a side of one chart (a pooled map, a window): about 256 x 256 per chart at most
HOWS = ("max", "mean")  # the two poolings, in the order a page offers them
ROW_CHUNK_CELLS = 1 << 22  # pool_rows reads rows in chunks of about this many weights (16 MB of float32)


def block_side(n: int, cells: int = MAX_CELLS) -> int:
    """The smallest block side that leaves at most `cells` blocks for n positions (1 when n <= cells)."""
    if cells < 1:
        raise ValueError(f"cells must be at least 1, got {cells}")
    return max(1, -(-n // cells))


def block_edges(n: int, cells: int = MAX_CELLS) -> np.ndarray:
    """(blocks + 1,) the first position of every block, then n: block i covers positions edges[i] .. edges[i+1] - 1.
    Blocks of block_side(n, cells) positions, the last one shorter when n is not a multiple of it."""
    side = block_side(n, cells)
    return np.append(np.arange(0, n, side), n).astype(np.int64)


@dataclass(frozen=True)
class Pooled:
    """A map reduced to blocks: both poolings and the blocks' edges along each axis.

    max, mean: (..., nq, nk) float32, each block's largest and mean weight over its cells that are not masked (NaN
    where every cell is masked); q_edges (nq + 1,), k_edges (nk + 1,): block boundaries in positions (block_edges).
    """

    max: np.ndarray
    mean: np.ndarray
    q_edges: np.ndarray
    k_edges: np.ndarray

    def of(self, how: str) -> np.ndarray:
        """The map pooled by `how` ("max" or "mean")."""
        if how not in HOWS:
            raise ValueError(f"pooling must be one of {HOWS}, got {how!r}")
        return self.max if how == "max" else self.mean

    @property
    def blocks(self) -> tuple[int, int]:
        """(a, b): the positions a block covers along the queries and the keys (the last block may hold fewer)."""
        return int(self.q_edges[1] - self.q_edges[0]), int(self.k_edges[1] - self.k_edges[0])

    @property
    def shape(self) -> tuple[int, int]:
        """(Tq, Tk): the positions of the map that was pooled."""
        return int(self.q_edges[-1]), int(self.k_edges[-1])


def causal_mask(n_queries: int, n_keys: int, q_start: int = 0, k_start: int = 0) -> np.ndarray:
    """(n_queries, n_keys) True where the query may not look: the key comes after the query. Positions count from
    q_start and k_start (a window of a longer map)."""
    q = np.arange(q_start, q_start + n_queries)[:, None]
    k = np.arange(k_start, k_start + n_keys)[None, :]
    return k > q


def _pool_axis_blocks(z: np.ndarray, edges: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per block of `axis` (blocks of equal side, the last padded with NaN): the max, the sum and the count of the
    finite cells, each with that axis reduced to the blocks."""
    side, n = int(edges[1] - edges[0]), int(edges[-1])
    pad = (len(edges) - 1) * side - n
    if pad:
        widths = [(0, 0)] * z.ndim
        widths[axis] = (0, pad)
        z = np.pad(z, widths, constant_values=np.nan)
    shape = list(z.shape)
    shape[axis : axis + 1] = [len(edges) - 1, side]
    blocks = z.reshape(shape)
    seen = np.isfinite(blocks)
    with np.errstate(invalid="ignore"):
        top = np.max(np.where(seen, blocks, -np.inf), axis=axis + 1)
    return top, np.where(seen, blocks, 0.0).sum(axis=axis + 1), seen.sum(axis=axis + 1)


def _pool_block_rows(z: np.ndarray, k_edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(..., a, Tk) rows of one query block (masked cells NaN) -> its (..., nk) max, sum and count of finite cells."""
    top, total, count = _pool_axis_blocks(z, k_edges, z.ndim - 1)  # (..., a, nk)
    return top.max(axis=-2), total.sum(axis=-2), count.sum(axis=-2)


def _finish(top: np.ndarray, total: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    none = count == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(none, np.nan, total / np.maximum(count, 1))
    return np.where(none, np.nan, top).astype(np.float32), mean.astype(np.float32)


def pool(weights: np.ndarray, cells: int = MAX_CELLS, mask: np.ndarray | None = None) -> Pooled:
    """(..., Tq, Tk) -> Pooled: blocks of block_side(Tq, cells) x block_side(Tk, cells) positions, at most `cells`
    a side; a map that fits is returned as it is (blocks of 1 x 1: max and mean are the weights).

    mask: (Tq, Tk) (or broadcastable) True for masked cells, left out of both poolings."""
    weights = np.asarray(weights)
    if weights.ndim < 2:
        raise ValueError(f"weights must have at least 2 axes (queries, keys), got shape {weights.shape}")
    Tq, Tk = weights.shape[-2:]
    z = weights.astype(np.float64)
    if mask is not None:
        z = np.where(np.broadcast_to(mask, weights.shape), np.nan, z)
    q_edges, k_edges = block_edges(Tq, cells), block_edges(Tk, cells)
    top_q, sum_q, count_q = _pool_axis_blocks(z, q_edges, z.ndim - 2)  # (..., nq, Tk): query blocks
    top = _pool_axis_blocks(top_q, k_edges, z.ndim - 1)[0]  # (..., nq, nk): then key blocks
    total = _pool_axis_blocks(sum_q, k_edges, z.ndim - 1)[1]
    count = _pool_axis_blocks(count_q.astype(np.float64), k_edges, z.ndim - 1)[1]
    top_max, mean = _finish(top, total, count)
    return Pooled(top_max, mean, q_edges, k_edges)


def visible_counts(q_edges: np.ndarray, k_edges: np.ndarray, causal: bool, window: int | None = None) -> np.ndarray:
    """(nq, nk) the cells of each block that are not masked (causal: key <= query; a local layer's `window` too:
    query - key < window), from the edges alone."""
    widths = np.diff(k_edges)
    if not causal:
        return np.outer(np.diff(q_edges), widths).astype(np.float64)
    q = np.arange(int(q_edges[-1]))[:, None]
    first = k_edges[:-1][None, :] if window is None else np.maximum(k_edges[:-1][None, :], q - window + 1)
    per_query = np.clip(np.minimum(k_edges[1:][None, :], q + 1) - first, 0, None)  # (Tq, nk): visible keys per block
    return np.add.reduceat(per_query, q_edges[:-1], axis=0).astype(np.float64)


def pool_rows(
    rows_of: Callable[[slice], np.ndarray],
    n_queries: int,
    n_keys: int,
    cells: int = MAX_CELLS,
    causal: bool = False,
    chunk_cells: int = ROW_CHUNK_CELLS,
    window: int | None = None,
) -> Pooled:
    """`pool` of a (n_queries, n_keys) map read in row blocks: rows_of(slice(lo, hi)) gives rows lo .. hi - 1 as a
    (hi - lo, n_keys) array. Rows are read a whole number of query blocks at a time, about chunk_cells weights per
    read, so at most one chunk is held. causal: keys after each query are masked (decoder self-attention); their
    cells must hold 0, as a causal map's do (they add nothing to a block's sum or max, and are not counted); window:
    a local layer's sliding window, the keys before it masked the same way (a block wholly outside it: NaN)."""
    q_edges, k_edges = block_edges(n_queries, cells), block_edges(n_keys, cells)
    a = int(q_edges[1] - q_edges[0]) if n_queries else 1
    b = int(k_edges[1] - k_edges[0]) if n_keys else 1
    nq, nk = len(q_edges) - 1, len(k_edges) - 1
    per_read = max(1, chunk_cells // max(1, a * n_keys))  # query blocks read at once
    top = np.zeros((nq, nk), dtype=np.float32)
    total = np.zeros((nq, nk))
    for first in range(0, nq, per_read):
        last = min(nq, first + per_read)
        lo, hi = int(q_edges[first]), int(q_edges[last])
        rows = np.asarray(rows_of(slice(lo, hi)), dtype=np.float32)
        if rows.shape != (hi - lo, n_keys):
            raise ValueError(f"rows {lo}..{hi - 1} should have shape {(hi - lo, n_keys)}, got {rows.shape}")
        pad_q, pad_k = (last - first) * a - (hi - lo), nk * b - n_keys  # the last blocks may be short: zeros
        if pad_q or pad_k:
            rows = np.pad(rows, [(0, pad_q), (0, pad_k)])
        blocks = rows.reshape(last - first, a, nk, b)
        top[first:last] = blocks.max(axis=(1, 3))
        total[first:last] = blocks.sum(axis=(1, 3), dtype=np.float64)
    count = visible_counts(q_edges, k_edges, causal, window)
    none = count == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(none, np.nan, total / np.maximum(count, 1)).astype(np.float32)
    return Pooled(np.where(none, np.float32(np.nan), top), mean, q_edges, k_edges)


def panel_cells(n_panels: int, cells: int = MAX_CELLS, least: int = 8) -> int:
    """Cells a side of each of n_panels thumbnails of one chart: about cells x cells in all (at least `least`)."""
    return max(least, int(cells / math.sqrt(max(1, n_panels))))


def fit_range(lo: int, hi: int, n: int, most: int = MAX_CELLS) -> tuple[int, int]:
    """An inclusive range of positions (a window's side) inside 0 .. n - 1 and at most `most` long: lo and hi put in
    order and inside, then hi moved down to lo + most - 1 when the range is longer."""
    if n < 1:
        raise ValueError("a window needs at least one position")
    lo, hi = sorted((min(max(int(lo), 0), n - 1), min(max(int(hi), 0), n - 1)))
    return lo, min(hi, lo + most - 1)


def default_range(n: int, most: int = 64) -> tuple[int, int]:
    """A window's side on first sight: the first `most` positions (all of them when there are fewer)."""
    return 0, min(n, most) - 1
