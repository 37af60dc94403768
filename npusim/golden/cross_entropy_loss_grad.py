"""CrossEntropyLossGrad's golden: the kernel's fp32 chain in its order
(``ops/cross_entropy/kernel.py``).

mask = fp32(target) != fp32(ignore_index) (targets cast with round-to-nearest-even), mask x
weight[target] in fp32 (0 weight for ignored rows when ignore_index < 0). mean: each core's rows
(the front/tail split of ``block_dim`` cores, in batches of ``row_batch``) summed by the vector
unit's pairwise halving tree, the batch sums added in order to 0, then the ``block_dim``
partials summed by the same tree; scale = fp32(g x (1 - ls)) / den. sum: scale = g x (1 - ls).
none: g_i cast to fp32, times (1 - ls), times mask x weight. nll = mask x weight x scale.
xGradOut = fp32(exp(x)) x nll, minus nll at the target column, each step rounded to fp32 (exp is
the exact exponential rounded once), then cast to the output dtype to nearest even.
"""

import numpy as np

F32 = np.float32


def halving_sum(a: np.ndarray) -> np.float32:
    """Sum by the pairwise halving tree over a power-of-two padding, fp32 at every level."""
    a = np.asarray(a, F32)
    size = 1 << max(a.size - 1, 0).bit_length()
    a = np.concatenate([a, np.zeros(size - a.size, F32)])
    while size > 1:
        size //= 2
        a = (a[:size] + a[size:]).astype(F32)
    return a[0]


def _core_rows(n: int, block_dim: int) -> list:
    """(first row, rows) of every core: the front/tail split."""
    front, tail = -(-n // block_dim), n // block_dim
    front_cores = n % block_dim or block_dim
    spans, row = [], 0
    for core in range(block_dim):
        count = front if core < front_cores else tail
        spans.append((row, count))
        row += count
    return spans


def _den(mw: np.ndarray, block_dim: int, row_batch: int | None) -> np.float32:
    partials = []
    for start, count in _core_rows(mw.size, block_dim):
        acc, step = F32(0), row_batch or max(count, 1)
        for b in range(start, start + count, step):
            acc = F32(acc + halving_sum(mw[b:min(b + step, start + count)]))
        partials.append(acc)
    return halving_sum(np.array(partials, F32))


def _mask_weight(target, weight, ignore_index) -> np.ndarray:
    t = np.asarray(target, np.int64)
    mask = (t.astype(np.float64).astype(F32) != F32(float(ignore_index))).astype(F32)
    if weight is None:
        return mask
    w = np.asarray(weight, F32)
    ignored = t == ignore_index
    idx = np.where(ignored, ignore_index if ignore_index >= 0 else 0, t)
    tw = np.where(ignored & (ignore_index < 0), F32(0), w[idx]).astype(F32)
    return (mask * tw).astype(F32)


def cross_entropy_loss_grad(grad_loss, log_prob, target, weight=None, *, reduction="mean",
                            ignore_index=-100, label_smoothing=0.0, block_dim=None,
                            row_batch=None, **_ignored):
    """xGradOut in logProb's dtype. ``block_dim`` and ``row_batch`` are the run's tiling (they
    fix the order of mean's sum); None means min(N, 48) cores and all of a core's rows."""
    lp = np.asarray(log_prob)
    n = lp.shape[0]
    keep = F32(1.0 - label_smoothing)
    mw = _mask_weight(target, weight, ignore_index)
    if reduction == "none":
        g = (np.asarray(grad_loss).astype(F32) * keep).astype(F32)
        nll = (g * mw).astype(F32)
    else:
        g = F32(F32(np.asarray(grad_loss).astype(F32)[()]) * keep)
        if reduction == "mean":
            with np.errstate(all="ignore"):
                g = F32(g / _den(mw, block_dim or max(min(n, 48), 1), row_batch))
        nll = (mw * g).astype(F32)
    with np.errstate(all="ignore"):
        e = np.exp(lp.astype(F32).astype(np.float64)).astype(F32)
        out = (e * nll[:, None]).astype(F32)
        t = np.asarray(target, np.int64)
        rows = np.flatnonzero(t != ignore_index)
        out[rows, t[rows]] = (out[rows, t[rows]] - nll[rows]).astype(F32)
    return out.astype(lp.dtype)
