"""Goldens of the elementwise operators (``ops/elementwise/``), in the kernels' rounding order.

fp16 and fp32 compute in their own dtype (numpy's fp16 add and multiply are correctly rounded
per operation, as the vector unit's); bf16 goes through fp32 and rounds to nearest even once at
the end. Scalars are converted to the compute dtype first, as the vector unit does.
"""

import numpy as np

from npusim.dtypes import bfloat16


def _compute_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype) == bfloat16 else np.dtype(dtype)


def relu(self_):
    x = np.asarray(self_)
    c = x.astype(_compute_dtype(x.dtype))
    return {"out": np.where(c > 0, c, c.dtype.type(0)).astype(x.dtype)}


def threshold_backward(grad_output, self_, threshold=0.0):
    dy, x = np.asarray(grad_output), np.asarray(self_)
    ct = _compute_dtype(dy.dtype)
    thr = np.asarray(threshold, np.float64).astype(ct)
    out = np.where(x.astype(ct) > thr, dy.astype(ct), ct.type(0))
    return {"gradInput": out.astype(dy.dtype)}


def add(self_, other, alpha=1):
    a, b = np.asarray(self_), np.asarray(other)
    alpha = float(alpha)
    if alpha == 1:
        ct = _compute_dtype(a.dtype)
        return {"out": (a.astype(ct) + b.astype(ct)).astype(a.dtype)}
    if a.dtype != bfloat16:                         # Axpy in the dtype: muls, then add
        scaled = (b * np.asarray(alpha, np.float64).astype(a.dtype)).astype(a.dtype)
        return {"out": (a + scaled).astype(a.dtype)}
    alpha_bf16 = np.float32(np.asarray(alpha, np.float32).astype(bfloat16))   # Mul, then Add
    scaled = (b.astype(np.float32) * alpha_bf16).astype(bfloat16)
    return {"out": (a.astype(np.float32) + scaled.astype(np.float32)).astype(bfloat16)}


def muls(self_, other):
    """aclnnMuls: fp16/fp32 times the scalar in the dtype; bf16 through fp32, one rounding."""
    x = np.asarray(self_)
    ct = _compute_dtype(x.dtype)
    s = np.asarray(float(other), np.float64).astype(ct)
    return {"out": (x.astype(ct) * s).astype(ct).astype(x.dtype)}
