"""Golden of ``npusim.ops.matmul``: the CATLASS-shaped kernel's rounding (``catlass_matmul``'s
golden, per base block and shuffled k tile), on fp16 operands; fp32 operands (cube_math_type
2) are rounded to fp16 first and the fp16 result widened, as the Cast kernels do."""

import numpy as np

from npusim.golden.catlass_matmul import catlass_matmul


def matmul(self_, mat2, *, cube_math_type=1, tiling=None, **_options):
    a, b = np.asarray(self_), np.asarray(mat2)
    m, n = a.shape[0], b.shape[1]
    if tiling is None:             # k = 0 (zeros) or an empty out
        return {"out": np.zeros((m, n), a.dtype)}
    c = catlass_matmul(a.astype(np.float16), b.astype(np.float16), tiling=tiling)["c"]
    return {"out": c.astype(a.dtype)}
