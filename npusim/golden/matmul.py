"""Golden of ``npusim.ops.matmul``.

Atlas A2: the CATLASS-shaped kernel's rounding (``catlass_matmul``'s golden, per base block and
shuffled k tile), on fp16 operands; fp32 operands (cube_math_type 2) are rounded to fp16 first
and the fp16 result widened, as the Cast kernels do.

Atlas training series (a ``MatmulV2Tiling``): MatMulV2 accumulates every output element over k
in increasing order, one 16-deep step at a time (``isa/cube.py``'s Mmad: the step's products
summed exactly, rounded once to fp32, added to the fp32 accumulator); fp16 operands end in one
fp32 -> fp16 rounding to nearest even (the vector Cast), fp32 operands are rounded to fp16 first
and the fp32 accumulator is the result (fp16 in, fp32 out).
"""

import numpy as np

from npusim.golden.catlass_matmul import FP16_BITS, K0, catlass_matmul
from npusim.golden.convolution import group_gemm
from npusim.ops.matmul.v2_tiling import MatmulV2Tiling


def matmul(self_, mat2, *, cube_math_type=1, tiling=None, **_options):
    a, b = np.asarray(self_), np.asarray(mat2)
    m, n = a.shape[0], b.shape[1]
    if tiling is None:             # k = 0 (zeros) or an empty out
        return {"out": np.zeros((m, n), a.dtype)}
    a16, b16 = a.astype(np.float16), b.astype(np.float16)
    if isinstance(tiling, MatmulV2Tiling):
        acc = group_gemm(a16.astype(np.float64), b16.astype(np.float64), K0,
                         np.zeros((m, n), np.float32), FP16_BITS)
        return {"out": acc.astype(a.dtype)}
    c = catlass_matmul(a16, b16, tiling=tiling)["c"]
    return {"out": c.astype(a.dtype)}
