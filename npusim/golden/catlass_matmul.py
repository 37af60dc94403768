"""Numpy reference of ``catlass_matmul``: C = A.B in the kernel's rounding order.

Per base block, the L1 k tiles in the order its core walks them (the shuffled k of
``ops/catlass_tiling.py``); within a tile, per 16-deep k step, the products summed exactly and
rounded once to fp32, then added to the fp32 accumulator (``isa/cube.py``'s Mmad); at the end
fp32 -> fp16 rounding to nearest even (FixPipe's F322F16).
"""

import numpy as np

from npusim.ops.catlass_tiling import block_coord, k_order

K0 = 16


def catlass_matmul(a, b, *, tiling, **_options):
    t = tiling
    out = np.zeros((t.m, t.n), np.float16)
    for task in range(t.tasks):
        m_idx, n_idx = block_coord(t, task)
        rows = slice(m_idx * t.l1_m, (m_idx + 1) * t.l1_m)
        cols = slice(n_idx * t.l1_n, (n_idx + 1) * t.l1_n)
        a_blk, b_blk = a[rows].astype(np.float64), b[:, cols].astype(np.float64)
        acc = np.zeros((a_blk.shape[0], b_blk.shape[1]), np.float32)
        for kt in k_order(t, task % t.block_dim):
            for lo in range(kt * t.l1_k, min(t.k, (kt + 1) * t.l1_k), K0):
                acc = acc + (a_blk[:, lo:lo + K0] @ b_blk[lo:lo + K0]).astype(np.float32)
        out[rows, cols] = acc.astype(np.float16)
    return {"c": out}
