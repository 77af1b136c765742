"""Numbers behind the positional-encoding page: dot products by offset, similarity, the shift map.

numpy in and out; the tables themselves come from positional.sinusoidal_encoding or a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..network.positional import relative_position_map, sinusoidal_encoding, wavelengths


def pe_table(length: int, d_model: int, base: float = 10000.0) -> np.ndarray:
    """(length, d_model) sinusoidal table as float64 numpy."""
    return sinusoidal_encoding(length, d_model, base).double().numpy()


def pe_wavelengths(d_model: int, base: float = 10000.0) -> np.ndarray:
    """(d_model,) wavelength in positions of every dimension (the sin and cos of a pair share one)."""
    return np.repeat(wavelengths(d_model, base).numpy(), 2)


def offset_dot_products(pe: np.ndarray, positions: list[int], max_offset: int) -> np.ndarray:
    """(len(positions), max_offset+1): PE(p) . PE(p+k) for k = 0..max_offset; NaN past the table's end."""
    out = np.full((len(positions), max_offset + 1), np.nan)
    for row, p in enumerate(positions):
        ks = np.arange(0, min(max_offset, pe.shape[0] - 1 - p) + 1)
        if p < pe.shape[0] and len(ks):
            out[row, : len(ks)] = pe[p + ks] @ pe[p]
    return out


def similarity(pe: np.ndarray) -> np.ndarray:
    """(P, P) dot products between every pair of positions."""
    return pe @ pe.T


def cosine_similarity(table: np.ndarray) -> np.ndarray:
    """(P, P) cosine similarity between the rows of a (P, D) positional table, learned or fixed (zero rows: 0).

    Bands parallel to the diagonal mean a row's similarity to another depends on their distance only."""
    rows = np.asarray(table, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    unit = np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)
    return unit @ unit.T


@dataclass
class ShiftCheck:
    offset: int
    matrix: np.ndarray  # (d, d) M_k with PE(p+k) = M_k PE(p)
    max_error: float  # max |M_k PE(p) - PE(p+k)| over every p in the table
    positions_checked: int


def shift_check(length: int, d_model: int, base: float, offset: int) -> ShiftCheck:
    """Apply the fixed rotation M_k to every row and compare with the row k positions later."""
    pe = pe_table(length + offset, d_model, base)
    m = relative_position_map(offset, d_model, base).double().numpy()
    predicted = pe[:length] @ m.T
    return ShiftCheck(offset, m, float(np.abs(predicted - pe[offset:]).max()), length)


def row_norms(rows: np.ndarray) -> np.ndarray:
    """(T,) Euclidean norm of each row of (T, D)."""
    return np.linalg.norm(rows, axis=-1)
