"""Goldens of aclnnMaxPool2dWithMask and its backward on the training series
(``ops/pooling/max_pool_mask.py``, ``max_pool_mask_backward.py``): fp16 compute, channels padded
to 16 with zeros, padding -65504, the mask as uint16 words per (n, c1, tap, output position),
bit c = lane c, the first tap holding the maximum; the backward adds the selected fp16 gradients
in fp32, output rows in order and taps in order within a row, and rounds once to fp16.
``mask_of_indices`` turns torch's argmax indices into that mask (the oracle's layout)."""

import numpy as np

from npusim.golden.pooling import _out_size, _window

C0 = 16
PAD = np.float16(-65504.0)


def _geometry(x, kernel_size, stride, padding, ceil_mode):
    (kh, kw), (sh, sw), (ph, pw) = _window(kernel_size, stride, padding)
    h, w = x.shape[-2:]
    oh, ow = _out_size(h, kh, sh, ph, ceil_mode), _out_size(w, kw, sw, pw, ceil_mode)
    return (kh, kw), (sh, sw), (ph, pw), (h, w), (oh, ow)


def _planes(x: np.ndarray) -> np.ndarray:
    """(N, C1 x 16, H, W) fp16, the added channels 0."""
    x4 = x.reshape(-1, *x.shape[-3:]) if x.ndim == 4 else x[None]
    n, c = x4.shape[:2]
    c16 = -(-c // C0) * C0
    out = np.zeros((n, c16, *x4.shape[2:]), np.float16)
    out[:, :c] = x4.astype(np.float16)
    return out


def mask_size(lead, taps: int, oh: int, ow: int) -> int:
    """uint16 words of aclnn's INT8 indices: prod(lead) x taps x (ceil(OH x OW / 16) + 1) x 16."""
    return int(np.prod(lead)) * taps * (-(-oh * ow // C0) + 1) * C0


def _pack(first: np.ndarray, lead, oh: int, ow: int) -> np.ndarray:
    """first: bool (N, C16, taps, OH x OW) -> aclnn's INT8 indices."""
    n, c16, taps, p = first.shape
    words = (-(-p // C0) + 1) * C0
    bits = first.reshape(n, c16 // C0, C0, taps, p).transpose(0, 1, 3, 4, 2)
    packed = (bits.astype(np.uint32) << np.arange(C0, dtype=np.uint32)).sum(-1)
    buf = np.zeros(mask_size(lead, taps, oh, ow), np.uint16)
    view = buf[:n * (c16 // C0) * taps * words].reshape(n, c16 // C0, taps, words)
    view[..., :p] = packed.astype(np.uint16)
    return buf.view(np.int8).reshape(*lead, taps, 2 * words)


def max_pool2d_with_mask(self_, kernel_size, stride, padding, dilation=(1, 1),
                         ceil_mode=False, **_ignored) -> dict:
    """{"out" (self's dtype), "indices" (INT8 mask)}."""
    x = np.asarray(self_)
    (kh, kw), (sh, sw), (ph, pw), (h, w), (oh, ow) = _geometry(x, kernel_size, stride, padding,
                                                               ceil_mode)
    planes = _planes(x)
    rows, cols = max(h + 2 * ph, (oh - 1) * sh + kh), max(w + 2 * pw, (ow - 1) * sw + kw)
    padded = np.full((*planes.shape[:2], rows, cols), PAD, np.float16)
    padded[:, :, ph:ph + h, pw:pw + w] = planes
    cand = np.stack([padded[:, :, a:a + (oh - 1) * sh + 1:sh, b:b + (ow - 1) * sw + 1:sw]
                     for a in range(kh) for b in range(kw)], axis=2)
    mx = cand.max(axis=2)
    eq = cand == mx[:, :, None]
    first = eq & (np.cumsum(eq, axis=2) == 1)
    c = x.shape[-3]
    out = mx[:, :c].astype(x.dtype).reshape(*x.shape[:-2], oh, ow)
    return {"out": out, "indices": _pack(first.reshape(*first.shape[:3], oh * ow),
                                          x.shape[:-2], oh, ow)}


def mask_of_indices(indices, channels_shape, kernel_size, oh: int, ow: int, w: int, stride,
                    padding) -> np.ndarray:
    """torch's argmax indices (flat h x W + w per plane) -> the INT8 mask (the real channels'
    bits; the added channels' words are left 0)."""
    (kh, kw), (sh, sw), (ph, pw) = _window(kernel_size, stride, padding)
    ind = np.asarray(indices).reshape(-1, channels_shape[-1], oh, ow)
    n, c = ind.shape[:2]
    r, col = np.divmod(ind, w)
    a = r - (np.arange(oh) * sh - ph)[:, None]
    b = col - (np.arange(ow) * sw - pw)[None, :]
    tap = a * kw + b
    c16 = -(-c // C0) * C0
    first = np.zeros((n, c16, kh * kw, oh * ow), bool)
    first[:, :c] = (tap.reshape(n, c, 1, oh * ow) == np.arange(kh * kw)[None, None, :, None])
    return _pack(first, tuple(channels_shape), oh, ow)


def max_pool2d_with_mask_backward(grad_output, self_, indices, kernel_size, stride, padding,
                                  dilation=(1, 1), ceil_mode=False, **_ignored) -> np.ndarray:
    """gradInput of self's shape and dtype."""
    x, dy = np.asarray(self_), np.asarray(grad_output)
    (kh, kw), (sh, sw), (ph, pw), (h, w), (oh, ow) = _geometry(x, kernel_size, stride, padding,
                                                               ceil_mode)
    g = _planes(dy)
    n, c16 = g.shape[:2]
    words = (-(-oh * ow // C0) + 1) * C0
    raw = np.asarray(indices).reshape(-1).view(np.uint16)
    raw = raw[:n * (c16 // C0) * kh * kw * words].reshape(n, c16 // C0, kh * kw, words)
    bits = (raw[..., :oh * ow, None] >> np.arange(C0, dtype=np.uint16)) & 1
    bits = bits.transpose(0, 1, 4, 2, 3).reshape(n, c16, kh * kw, oh, ow).astype(bool)
    rows, cols = max(h + 2 * ph, (oh - 1) * sh + kh), max(w + 2 * pw, (ow - 1) * sw + kw)
    col = np.zeros((n, c16, rows, cols), np.float32)
    for r in range(oh):
        for k in range(kh * kw):
            a, b = divmod(k, kw)
            sel = np.where(bits[:, :, k, r], g[:, :, r], np.float16(0)).astype(np.float32)
            seg = col[:, :, r * sh + a, b:b + (ow - 1) * sw + 1:sw]
            col[:, :, r * sh + a, b:b + (ow - 1) * sw + 1:sw] = (seg + sel).astype(np.float32)
    dx = col[:, :x.shape[-3], ph:ph + h, pw:pw + w].astype(np.float16)
    return dx.astype(x.dtype).reshape(x.shape)
