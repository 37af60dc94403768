"""Goldens of the pools. The (1, 1) adaptive average pool: per row of H x W, fp32 values scaled
by the fp32 1 / (H x W), summed by the halving tree (zero-padded to a power of two, each level
rounded to fp32), rounded to the input dtype (``ops/pooling/adaptive_avg.py``). The max pool with
indices and its backward: the taps in the kernels' order (``ops/pooling/max_pool.py``,
``max_pool_backward.py``)."""

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


def _window(kernel_size, stride, padding) -> tuple:
    k = tuple(kernel_size) * (2 // len(tuple(kernel_size)))
    s = tuple(stride) or k
    s = s * (2 // len(s))
    p = tuple(padding) * (2 // len(tuple(padding)))
    return k, s, p


def _out_size(size, k, s, p, ceil):
    span = size + 2 * p - (k - 1) - 1 + (s - 1 if ceil else 0)
    out = span // s + 1
    return out - 1 if ceil and (out - 1) * s >= size + p else out


def max_pool2d_with_indices(self_, kernel_size, stride, padding, dilation=(1, 1),
                            ceil_mode=False, **_ignored) -> dict:
    """{"out", "indices" (int32)}: per window the maximum, taps in order (kh, kw), a tap
    replacing it only when strictly greater; the index starts at the window's first position
    inside the input (bf16 compared in fp32)."""
    x = np.asarray(self_)
    (kh, kw), (sh, sw), (ph, pw) = _window(kernel_size, stride, padding)
    h, w = x.shape[-2:]
    oh, ow = (_out_size(h, kh, sh, ph, ceil_mode), _out_size(w, kw, sw, pw, ceil_mode))
    planes = x.reshape(-1, h, w).astype(np.float32)
    r0, c0 = np.arange(oh) * sh - ph, np.arange(ow) * sw - pw
    cur = np.full((planes.shape[0], oh, ow), -np.inf, np.float32)
    idx = np.broadcast_to(np.maximum(r0, 0)[:, None] * w + np.maximum(c0, 0)[None, :],
                          cur.shape).astype(np.float64)
    for a in range(kh):
        for b in range(kw):
            r, c = r0 + a, c0 + b
            ok = ((r >= 0) & (r < h))[:, None] & ((c >= 0) & (c < w))[None, :]
            cand = np.where(ok, planes[:, np.clip(r, 0, h - 1)][:, :, np.clip(c, 0, w - 1)],
                            -np.inf).astype(np.float32)
            take = cand > cur
            cur = np.where(take, cand, cur)
            idx = np.where(take, (r[:, None] * w + c[None, :]).astype(np.float64), idx)
    shape = (*x.shape[:-2], oh, ow)
    return {"out": cur.astype(x.dtype).reshape(shape),
            "indices": idx.astype(np.int32).reshape(shape)}


def max_pool2d_with_indices_backward(grad_output, self_, indices, kernel_size, stride,
                                     padding, dilation=(1, 1), ceil_mode=False,
                                     **_ignored) -> np.ndarray:
    """gradInput: per input position, over the taps in order (kh, kw), the gradient of the
    output whose window has it at that tap if that output's index is the position, else 0,
    added in fp32 from 0."""
    x, dy, ind = np.asarray(self_), np.asarray(grad_output, np.float32), np.asarray(indices)
    (kh, kw), (sh, sw), (ph, pw) = _window(kernel_size, stride, padding)
    h, w = x.shape[-2:]
    oh, ow = dy.shape[-2:]
    g, i = dy.reshape(-1, oh, ow), ind.reshape(-1, oh, ow)
    pos = np.arange(h * w).reshape(h, w)
    acc = np.zeros((g.shape[0], h, w), np.float32)
    for a in range(kh):
        for b in range(kw):
            hr, wr = np.arange(h) + ph - a, np.arange(w) + pw - b
            ro, co = hr // sh, wr // sw
            okr = (hr % sh == 0) & (ro >= 0) & (ro < oh)
            okc = (wr % sw == 0) & (co >= 0) & (co < ow)
            ok = okr[:, None] & okc[None, :]
            rr, cc = np.clip(ro, 0, oh - 1), np.clip(co, 0, ow - 1)
            gk = np.where(ok, g[:, rr][:, :, cc], np.float32(0))
            ik = np.where(ok, i[:, rr][:, :, cc], -1)
            acc = (acc + np.where(ik == pos, gk, np.float32(0))).astype(np.float32)
    return acc.reshape(x.shape)
