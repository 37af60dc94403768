"""Numpy reference of ``grouped_matmul``: per group, per base block, the L1 k tiles in the
order the block's core walks them (``shuffle_k``), each 16-deep k step's products summed
exactly and rounded once to fp32 and added to the fp32 accumulator (the catlass_matmul golden's
order), then rounded to x's dtype (FixPipe, to nearest even). Rows of y past group_list's end
(groupType 0) and the y[e] of an empty group (groupType 2) stay zero, as the kernel leaves GM.
"""

import numpy as np

from npusim.golden.convolution import group_gemm
from npusim.ops.common import ceil_div
from npusim.ops.matmul.grouped_tiling import block_coord, group_blocks

K0 = 16
BITS = {"float16": 11, "bfloat16": 8}


def _gemm(a, b, t, core: int, dtype: str) -> np.ndarray:
    """One block's product in the kernel's rounding order (fp32)."""
    k = a.shape[1]
    tiles = ceil_div(k, t.l1_k)
    first = core % tiles if t.shuffle_k else 0
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    for i in range(tiles):
        kt = (first + i) % tiles
        cut = slice(kt * t.l1_k, min(k, (kt + 1) * t.l1_k))
        acc = group_gemm(a64[:, cut], b64[cut], K0, acc, BITS[dtype])
    return acc


def _group(a, b, c, t, count: int) -> int:
    """c = a @ b by base blocks, dealt from running block ``count``; the new count."""
    dim_m, dim_n = group_blocks(t, a.shape[0], b.shape[1])
    for rel in range(dim_m * dim_n):
        m_idx, n_idx = block_coord(rel, dim_m, dim_n)
        rows = slice(m_idx * t.l1_m, min(a.shape[0], (m_idx + 1) * t.l1_m))
        cols = slice(n_idx * t.l1_n, min(b.shape[1], (n_idx + 1) * t.l1_n))
        core = (count + rel) % t.block_dim
        c[rows, cols] = _gemm(a[rows], b[:, cols], t, core, t.dtype).astype(c.dtype)
    return (count + dim_m * dim_n) % t.block_dim


def grouped_matmul(x, weight, group_list, *, group_type=0, tiling=None, **_options):
    x, weight = np.asarray(x), np.asarray(weight)
    ends = [int(v) for v in np.asarray(group_list)]
    t, count, start = tiling, 0, 0
    if group_type == 0:
        y = np.zeros((x.shape[0], weight.shape[2]), x.dtype)
    else:
        y = np.zeros((len(ends), x.shape[0], weight.shape[1]), x.dtype)
    if t is None or y.size == 0:
        return {"y": y}
    for e, end in enumerate(ends):
        if end > start and x.shape[1] > 0:
            if group_type == 0:
                count = _group(x[start:end], weight[e], y[start:end], t, count)
            else:
                count = _group(x[:, start:end], weight[start:end], y[e], t, count)
        start = end
    return {"y": y}
