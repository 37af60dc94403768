"""Numpy reference of ``catlass_matmul``: C = A.B in the kernel's rounding order.

Per base block, the L1 k tiles in the order its core walks them (the shuffled k of
``ops/catlass/tiling.py``); within a tile, per 16-deep k step, the products summed exactly and
rounded once to fp32, then added to the fp32 accumulator (``isa/cube.py``'s Mmad; the
convolution golden's ``group_gemm``); at the end fp32 -> fp16 rounding to nearest even
(FixPipe's F322F16).
"""

import numpy as np

from npusim.golden.convolution import group_gemm
from npusim.ops.catlass.tiling import block_of, k_order

K0 = 16
FP16_BITS = 11   # significant bits of an fp16 value, for group_gemm's exactness test


def catlass_matmul(a, b, *, tiling, bits=FP16_BITS, out_dtype=np.float16, **_options):
    """C per base block, k tiles in the kernel's order; operands of ``bits`` significant bits
    (fp16 11, bf16 8), C rounded to ``out_dtype`` (FixPipe's CAST_RINT)."""
    t = tiling
    out = np.zeros((t.m, t.n), out_dtype)
    for task in range(t.tasks):
        block = block_of(t, task)
        rows = slice(block.m_idx * t.l1_m, block.m_idx * t.l1_m + block.rows)
        cols = slice(block.n_idx * t.l1_n, block.n_idx * t.l1_n + block.cols)
        a_blk, b_blk = a[rows].astype(np.float64), b[:, cols].astype(np.float64)
        acc = np.zeros((block.rows, block.cols), np.float32)
        for kt in k_order(t, task % t.block_dim):
            k_tile = slice(kt * t.l1_k, min(t.k, (kt + 1) * t.l1_k))
            acc = group_gemm(a_blk[:, k_tile], b_blk[k_tile], K0, acc, bits)
        out[rows, cols] = acc.astype(out_dtype)
    return {"c": out}
