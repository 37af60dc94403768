"""Golden of ``npusim.ops.matmul``.

Atlas A2: the CATLASS-shaped kernel's rounding (``catlass_matmul``'s golden, per base block and
shuffled k tile), on fp16 operands (bf16 ones as they are, the result rounded to bf16); fp32
operands (cube_math_type 2) are rounded to fp16 first
and the fp16 result widened, as the Cast kernels do.

Atlas training series (a ``MatmulV2Tiling``): MatMulV2 accumulates every output element over k
in increasing order, one 16-deep step at a time (``isa/cube.py``'s Mmad: the step's products
summed exactly, rounded once to fp32, added to the fp32 accumulator); fp16 operands end in one
fp32 -> fp16 rounding to nearest even (the vector Cast), fp32 operands are rounded to fp16 first
and the fp32 accumulator is the result (fp16 in, fp32 out). On the split-K route each part of K
is accumulated so, and the parts are summed in fp32 in any order (an ``AtomicSum``).
"""

import numpy as np

from npusim.golden.atomic import AtomicSum, order_bound
from npusim.golden.catlass_matmul import FP16_BITS, K0, catlass_matmul
from npusim.golden.convolution import group_gemm
from npusim.ops.matmul.v2_tiling import MatmulV2Tiling


def matmul(self_, mat2, *, cube_math_type=1, tiling=None, **_options):
    a, b = np.asarray(self_), np.asarray(mat2)
    m, n = a.shape[0], b.shape[1]
    if tiling is None:             # k = 0 (zeros) or an empty out
        return {"out": np.zeros((m, n), a.dtype)}
    if a.dtype.name == "bfloat16":   # A2: the bf16 GEMM itself, bf16 out
        return {"out": catlass_matmul(a, b, tiling=tiling, bits=8, out_dtype=a.dtype)["c"]}
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    if isinstance(tiling, MatmulV2Tiling):
        return {"out": _v2(a16.astype(np.float64), b16.astype(np.float64), tiling, a.dtype)}
    c = catlass_matmul(a16, b16, tiling=tiling)["c"]
    return {"out": c.astype(a.dtype)}


def _v2(a, b, t, dtype):
    """MatMulV2's result: one fp32 accumulation over K, or on the split-K route each part's
    fp32 partial added atomically (an ``AtomicSum``: the value in part order, the bound of any
    landing order)."""
    m, n = a.shape[0], b.shape[1]
    zeros = np.zeros((m, n), np.float32)
    if t.k_parts == 1:
        return group_gemm(a, b, K0, zeros, FP16_BITS).astype(dtype)
    parts = [slice(lo, min(t.k, lo + t.part_k)) for lo in range(0, t.k, t.part_k)]
    total = zeros
    for p in parts:
        total = total + group_gemm(a[:, p], b[p], K0, zeros.copy(), FP16_BITS)
    value = total.astype(dtype)
    return AtomicSum(value, order_bound(np.abs(a) @ np.abs(b), len(parts), value))
