"""MoeGatingTopKSoftmax's golden: the kernel's fp32 chain (``ops/moe/gating_kernel.py``), each
step rounded to fp32: x - max(x), exp (float64, rounded once), the sum by the vector unit's
halving tree, the division; then a stable descending sort (equal values keep the lower expert
first) and the first k, cast to x's dtype to nearest even; rowIdx[i, j] = j x rows + i."""

import numpy as np

from npusim.golden.rms_norm import halving_rows

F32 = np.float32


def softmax_rows(x: np.ndarray) -> np.ndarray:
    xf = np.asarray(x).reshape(-1, np.asarray(x).shape[-1]).astype(F32)
    d = (xf - xf.max(axis=1, keepdims=True)).astype(F32)
    e = np.exp(d.astype(np.float64)).astype(F32)
    return (e / halving_rows(e)[:, None]).astype(F32)


def moe_gating_top_k_softmax(x, finished=None, *, k, **_ignored) -> dict:
    x = np.asarray(x)
    p = softmax_rows(x)
    order = np.argsort(-p, axis=1, kind="stable")[:, :k]
    values = np.take_along_axis(p, order, axis=1)
    rows = p.shape[0]
    shape = (*x.shape[:-1], k)
    row_idx = (np.arange(k)[None, :] * rows + np.arange(rows)[:, None]).astype(np.int32)
    return {"yOut": values.astype(x.dtype).reshape(shape),
            "expertIdxOut": order.astype(np.int32).reshape(shape),
            "rowIdxOut": row_idx.reshape(shape)}
