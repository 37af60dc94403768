"""Outputs summed by GM atomic adds: their value in one order, and how far another order may be.

A kernel that splits a sum over cores and lets each core add its fp32 partial into GM with an
atomic add (SetAtomicAdd) gets the partials in the order they land, which follows simulated time:
a different tiling, core count or jitter can change it, and with three or more partials a
different order can change the last bits. The golden sums in part order; ``AtomicSum`` carries
that value with the bound within which every order lands, so a check can tell a wrong kernel from
a reordered sum.

Bound: summing ``P`` fp32 partials in any order, each of the ``P - 1`` additions rounds by at most
``u = 2**-24`` times the magnitude of its result, itself at most ``S``, the sum of the partials'
magnitudes: ``(P - 1) * u * S`` from the exact sum, so ``2 * (P - 1) * u * S`` between two
orders; the final conversion to a narrower dtype adds at most one unit in its last place.
"""

from dataclasses import dataclass

import ml_dtypes
import numpy as np

U32 = 2.0 ** -24   # unit roundoff of fp32


@dataclass(frozen=True)
class AtomicSum:
    """The golden of an atomically summed output: ``value`` in part order, ``bound`` the
    largest difference (elementwise, float64) any landing order may give."""

    value: np.ndarray
    bound: np.ndarray

    def within(self, got: np.ndarray) -> np.ndarray:
        """Elementwise: ``got`` is what some order of the same partials gives. Compared a
        block of rows at a time: float64 copies of one block, never of the whole output."""
        got = np.asarray(got)
        out = np.empty(np.shape(got), bool)
        bound = np.broadcast_to(self.bound, out.shape)
        for rows in row_blocks(out.shape):
            g, w = got[rows].astype(np.float64), self.value[rows].astype(np.float64)
            same = (g == w) | (np.isnan(g) & np.isnan(w))
            with np.errstate(invalid="ignore"):
                out[rows] = same | (np.abs(g - w) <= bound[rows])
        return out


BLOCK_ELEMENTS = 1 << 20    # elements compared at once (8 MB of float64 per copy)


def row_blocks(shape: tuple):
    """Slices of the leading axis covering ``shape`` about BLOCK_ELEMENTS at a time (the whole
    of a 0-d array)."""
    if not shape:
        yield ()
        return
    per_row = max(1, int(np.prod(shape[1:], dtype=np.int64)))
    step = max(1, BLOCK_ELEMENTS // per_row)
    for r0 in range(0, shape[0], step):
        yield slice(r0, r0 + step)


def order_bound(abs_sum: np.ndarray, parts: int, value: np.ndarray) -> np.ndarray:
    """The bound for ``parts`` fp32 partials whose magnitudes sum to ``abs_sum``, converted to
    ``value``'s dtype."""
    fin = ml_dtypes.finfo(value.dtype)
    reorder = 2.0 * max(parts - 1, 0) * U32 * np.asarray(abs_sum, np.float64)
    last_place = np.abs(value.astype(np.float64)) * float(fin.eps) + float(fin.smallest_subnormal)
    return reorder + (last_place if value.dtype.itemsize < 4 else 0.0)
