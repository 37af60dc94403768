"""BatchNorm's and BatchNormBackward's goldens: the kernels' fp32 chains in their order
(``ops/batch_norm/``), every step rounded to fp32.

The statistics: the activation as runs (NC1HWC0: per (n, C1 block) the H x W positions of 16
lanes, padding channels zero; NCHW: per (n, c) the H x W values, 1 lane); per (group, part of
the batch) a ``tile``-long fp32 accumulator adds each chunk of the part's runs in order (n, then
chunk), is halved down to the lanes, and the parts' partials are added in part order.

Forward: mean = sum x fp32(1/M), var = square_sum x fp32(1/M) - mean^2, invstd = 1 / sqrt(var +
eps), scale = weight x invstd, y = ((x - mean) x scale) + bias cast to nearest even; running
mean = running x fp32(1 - momentum) + mean x fp32(momentum), running var = running x fp32(1 -
momentum) + (var x fp32(M / (M - 1))) x fp32(momentum). Backward: diff_scale = sum of
((x - mean) x invstd) x dy, diff_offset = sum of dy (the same accumulation), dx = ((dy - b) -
((x - mean) x invstd) x a) x k with a = diff_scale x fp32(1/M), b = diff_offset x fp32(1/M),
k = weight x invstd.
"""

import numpy as np

F32 = np.float32


def _nchw(x) -> np.ndarray:
    x = np.asarray(x)
    return x.reshape(tuple(x.shape) + (1,) * (4 - x.ndim))


def _runs(a: np.ndarray, lanes: int) -> np.ndarray:
    """(N, G, L) fp32 runs of an (N, C, H, W) activation (values of ``a`` already fp32)."""
    n, c, h, w = a.shape
    if lanes == 1:
        return a.reshape(n, c, h * w)
    g = -(-c // lanes)
    pad = np.zeros((n, g * lanes, h * w), F32)
    pad[:, :c] = a.reshape(n, c, h * w)
    return pad.reshape(n, g, lanes, h * w).transpose(0, 1, 3, 2).reshape(n, g, h * w * lanes)


def _part_ranges(n: int, parts: int) -> list:
    small, big = divmod(n, parts)
    spans, first = [], 0
    for p in range(parts):
        count = small + (1 if p < big else 0)
        spans.append((first, count))
        first += count
    return spans


def _fold(acc: np.ndarray, lanes: int) -> np.ndarray:
    size = acc.shape[-1]
    while size > lanes:
        size //= 2
        acc = (acc[..., :size] + acc[..., size:2 * size]).astype(F32)
    return acc


def channel_sums(runs: list, product, lanes: int, parts: int, tile: int,
                 chunk: int = 0) -> list:
    """Per channel (G x lanes, fp32) the sums of ``product(*chunks)`` outputs, one per output;
    chunks of ``chunk`` elements (default ``tile``) into ``tile``-long accumulators."""
    n, g, length = runs[0].shape
    chunk = chunk or tile
    total = None
    for first, count in _part_ranges(n, parts):
        accs = None
        for b in range(first, first + count):
            for s in range(0, length, chunk):
                vals = product(*(r[b, :, s:s + chunk] for r in runs))
                if accs is None:
                    accs = [np.zeros((g, tile), F32) for _ in vals]
                for acc, v in zip(accs, vals, strict=True):
                    acc[:, :v.shape[1]] = (acc[:, :v.shape[1]] + v).astype(F32)
        folded = [_fold(a, lanes).reshape(-1) for a in accs]
        total = folded if total is None else [(t + f).astype(F32) for t, f in
                                              zip(total, folded, strict=True)]
    return total


def _lane_values(v: np.ndarray, runs_shape, lanes: int, length: int) -> np.ndarray:
    """A per-channel vector laid over a (G, chunk) slice of runs."""
    g = runs_shape[1]
    if lanes == 1:
        return v[:g, None]
    return np.tile(v.reshape(g, lanes), (1, length // lanes))


def _batched(a: np.ndarray, pitch: int) -> np.ndarray:
    """BatchNormV3's batched runs: per channel its N runs, each zero-padded to ``pitch``, as
    one run (1, C, N x pitch)."""
    n, c, h, w = a.shape
    pad = np.zeros((n, c, pitch), F32)
    pad[:, :, :h * w] = a.reshape(n, c, h * w)
    return pad.transpose(1, 0, 2).reshape(1, c, n * pitch)


def batch_norm(input, weight, bias, running_mean, running_var, *, momentum=0.1,  # noqa: A002
               eps=1e-5, lanes=16, parts=1, tile=64, pitch=0, chunk_rows=0,
               **_ignored) -> dict:
    """{"output", "saveMean", "saveInvstd", "runningMean", "runningVar"} as the kernels compute
    them for the run's ``lanes``, ``parts``, ``tile`` (and BatchNormV3's batching of
    ``chunk_rows`` runs ``pitch`` apart)."""
    x = _nchw(input)
    n, c, h, w = x.shape
    count = n * h * w
    xf = x.astype(F32)
    if chunk_rows:
        runs, chunk = _batched(xf, pitch), chunk_rows * pitch
    else:
        runs, chunk = _runs(xf, lanes), tile
    s, q = channel_sums([runs], lambda v: (v, (v * v).astype(F32)), lanes, parts, tile, chunk)
    inv_m, e, mom, keep, unb = (F32(v) for v in (1.0 / count, eps, momentum, 1 - momentum,
                                                   count / (count - 1)))
    with np.errstate(all="ignore"):
        mean = (s * inv_m).astype(F32)[:c]
        var = ((q * inv_m).astype(F32)[:c] - (mean * mean).astype(F32)).astype(F32)
        invstd = (F32(1) / np.sqrt((var + e).astype(F32)).astype(F32)).astype(F32)
        scale = (np.asarray(weight, F32) * invstd).astype(F32)
        rm = ((np.asarray(running_mean, F32) * keep).astype(F32) + (mean * mom).astype(F32))
        rv = ((np.asarray(running_var, F32) * keep).astype(F32)
              + ((var * unb).astype(F32) * mom).astype(F32))
        y = ((xf - mean[None, :, None, None]).astype(F32) * scale[None, :, None, None])
        y = (y.astype(F32) + np.asarray(bias, F32)[None, :, None, None]).astype(F32)
    return {"output": y.astype(x.dtype).reshape(np.shape(input)), "saveMean": mean,
            "saveInvstd": invstd, "runningMean": rm.astype(F32), "runningVar": rv.astype(F32)}


def batch_norm_backward(grad_out, input, weight, running_mean, running_var,  # noqa: A002
                        save_mean, save_invstd, *, output_mask=(True, True, True), lanes=16,
                        parts=1, tile=64, **_ignored) -> dict:
    """{"gradInput", "gradWeight", "gradBias"} as the kernels compute them."""
    x, dy = _nchw(input), _nchw(grad_out)
    n, c, h, w = x.shape
    xf, dyf = x.astype(F32), dy.astype(F32)
    mean = np.asarray(save_mean, F32)
    invstd = np.asarray(save_invstd, F32)
    g = -(-c // lanes)
    mean_p, inv_p = (np.zeros(g * lanes, F32) for _ in range(2))
    mean_p[:c], inv_p[:c] = mean, invstd
    rx, rdy = _runs(xf, lanes), _runs(dyf, lanes)

    def product(d, v):
        m, i = (_lane_values(a, rx.shape, lanes, v.shape[1]) for a in (mean_p, inv_p))
        xhat = ((v - m).astype(F32) * i).astype(F32)
        return (xhat * d).astype(F32), d

    dg, db = (a[:c] for a in channel_sums([rdy, rx], product, lanes, parts, tile))
    inv_m = F32(1.0 / (n * h * w))
    gamma = np.asarray(weight, F32)
    with np.errstate(all="ignore"):
        a, b, k = ((dg * inv_m).astype(F32), (db * inv_m).astype(F32),
                   (gamma * invstd).astype(F32))
        xhat = ((xf - mean[None, :, None, None]).astype(F32) * invstd[None, :, None, None])
        t = (xhat.astype(F32) * a[None, :, None, None]).astype(F32)
        u = ((dyf - b[None, :, None, None]).astype(F32) - t).astype(F32)
        dx = (u * k[None, :, None, None]).astype(F32)
    out = {"gradInput": dx.astype(x.dtype).reshape(np.shape(input)), "gradWeight": dg,
           "gradBias": db}
    return {k_: (v if on else None) for (k_, v), on in zip(out.items(), output_mask,
                                                          strict=True)}
