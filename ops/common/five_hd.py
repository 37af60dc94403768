"""NC1HWC0 (5HD) on the host: an activation as the previous layer of a graph-mode step leaves it.

In graph mode a framework keeps activations and their gradients in NC1HWC0 between layers, so
an operator's graph form (``ops/<family>/graph.py``) finds its inputs already in that layout in
GM. ``to_5hd`` lays a given NCHW array out so, as data placed in GM (not a kernel: nothing is
timed; the channels past C are zeros, as CANN's TransData leaves them); ``from_5hd`` reads a
5HD output back as NCHW, for tests and the check against the golden.
"""

import numpy as np

from npusim.ops.common import ceil_div

C0 = 16   # NC1HWC0's C0 for 16-bit and fp32 activations (the cube's fp32 C0 of 8 is not used)


def shape_5hd(nchw: tuple, c0: int = C0) -> tuple:
    """(N, C1, H, W, C0) of an (N, C, H, W) activation."""
    n, c, h, w = nchw
    return n, ceil_div(c, c0), h, w, c0


def to_5hd(arr: np.ndarray, c0: int = C0, dtype=None) -> np.ndarray:
    """``arr`` (N, C, H, W) as a contiguous (N, C1, H, W, C0) array, the channels past C
    zero (``dtype``: another element type, e.g. the cube's)."""
    n, c, h, w = arr.shape
    out = np.zeros(shape_5hd(arr.shape, c0), dtype or arr.dtype)
    padded = np.zeros((n, out.shape[1] * c0, h, w), out.dtype)
    padded[:, :c] = arr
    out[...] = padded.reshape(n, out.shape[1], c0, h, w).transpose(0, 1, 3, 4, 2)
    return out


def from_5hd(arr5: np.ndarray, channels: int) -> np.ndarray:
    """An (N, C1, H, W, C0) array as (N, C, H, W), the padding channels dropped."""
    n, c1, h, w, c0 = arr5.shape
    return np.ascontiguousarray(arr5.transpose(0, 1, 4, 2, 3).reshape(n, c1 * c0, h, w)
                                [:, :channels])
