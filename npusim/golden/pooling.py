"""Golden of the (1, 1) adaptive average pool: per row of H x W, fp32 values scaled by the fp32
1 / (H x W), summed by the halving tree (zero-padded to a power of two, each level rounded to
fp32), rounded to the input dtype (``ops/pooling/adaptive_avg.py``)."""

import numpy as np


def _halving(a: np.ndarray) -> np.ndarray:
    n = a.shape[-1]
    width = 1 << max(n - 1, 0).bit_length()
    a = np.concatenate([a, np.zeros((*a.shape[:-1], width - n), a.dtype)], axis=-1)
    while a.shape[-1] > 1:
        h = a.shape[-1] // 2
        a = (a[..., :h] + a[..., h:]).astype(a.dtype)
    return a[..., 0]


def adaptive_avg_pool2d(self_, output_size=(1, 1)):
    x = np.asarray(self_)
    h, w = x.shape[-2:]
    rows = x.reshape(int(np.prod(x.shape[:-2])), h * w).astype(np.float32)
    scale = np.float32(1.0 / (h * w)) if h * w else np.float32(0)   # empty: no row to scale
    scaled = (rows * scale).astype(np.float32)
    out = _halving(scaled).astype(x.dtype)
    return {"out": out.reshape(*x.shape[:-2], 1, 1)}


def adaptive_avg_pool2d_backward(grad_output, self_):
    """Fill with 1 / (H x W) in self's dtype, times gradOutput broadcast, in that dtype."""
    dy, x = np.asarray(grad_output), np.asarray(self_)
    h, w = x.shape[-2:]
    fill = np.asarray(1.0 / (h * w) if h * w else 0.0, np.float32).astype(x.dtype)  # empty: none
    return {"out": np.broadcast_to(fill * dy, x.shape).astype(x.dtype)}
