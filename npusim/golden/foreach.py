"""Goldens of the foreach operators (``ops/foreach/``), in the kernel's rounding order.

fp16 and fp32: the scalar converted to the dtype, x2 x alpha rounded, then x1 + that rounded
(ForeachAddList: Muls, then Add); x x scalar rounded (ForeachMulScalar). bf16: each tensor
widened to fp32, the scalar in fp32, the same steps in fp32, one round to nearest even at the
end.
"""

import numpy as np

from npusim.dtypes import bfloat16

F32 = np.float32


def _compute(dtype):
    return np.dtype(F32) if np.dtype(dtype) == bfloat16 else np.dtype(dtype)


def foreach_add_list_v2(x1, x2, alpha=1.0):
    out = {}
    for i, (a, b) in enumerate(zip(x1, x2, strict=True)):
        a, b = np.asarray(a), np.asarray(b)
        ct = _compute(a.dtype)
        s = np.asarray(float(alpha), np.float64).astype(ct)
        scaled = (b.astype(ct) * s).astype(ct)
        out[f"out[{i}]"] = (a.astype(ct) + scaled).astype(ct).astype(a.dtype)
    return out


def foreach_mul_scalar_v2(x, scalar):
    out = {}
    for i, a in enumerate(x):
        a = np.asarray(a)
        ct = _compute(a.dtype)
        s = np.asarray(float(scalar), np.float64).astype(ct)
        out[f"out[{i}]"] = (a.astype(ct) * s).astype(ct).astype(a.dtype)
    return out
