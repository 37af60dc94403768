"""CrossEntropyLoss's golden: the kernel's fp32 chain in its order
(``ops/cross_entropy/loss_kernel.py``).

Per row, in chunks of ``col_chunk`` columns (the whole row by default): x widened to fp32; max
of the row; sub = x - max (fp32); e = exp(sub) (the exact exponential rounded once); the row's
sum: each chunk's halving-tree sum, the chunks added in order; lse = ln(sum) rounded once;
logProb = sub - lse (fp32), cast to the input dtype to nearest even. The loss of a row:
logProb[target] (fp32) x -weight[target] (0 for an ignored row). none: cast to the dtype. mean
and sum: each core's rows (the front/tail split of ``block_dim`` cores, in batches of
``row_batch``) summed by the halving tree, the batch sums added in order to 0, then the cores'
partials summed by the tree; mean divides by the weights' sum taken the same way.
"""

import numpy as np

from npusim.golden.cross_entropy_loss_grad import _core_rows, halving_sum

F32 = np.float32


def _log_prob(x: np.ndarray, chunk: int) -> np.ndarray:
    xf = x.astype(F32)
    n, c = xf.shape
    m = xf.max(axis=1, keepdims=True) if c else np.zeros((n, 1), F32)
    sub = (xf - m).astype(F32)
    with np.errstate(all="ignore"):
        e = np.exp(sub.astype(np.float64)).astype(F32)
        s = np.zeros(n, F32)
        for c0 in range(0, c, chunk):
            part = np.array([halving_sum(r) for r in e[:, c0:c0 + chunk]], F32)
            s = part if c0 == 0 else (s + part).astype(F32)
        lse = np.log(s.astype(np.float64)).astype(F32)
    return (sub - lse[:, None]).astype(F32)


def _sum(values: np.ndarray, block_dim: int, row_batch: int) -> np.float32:
    partials = []
    for start, count in _core_rows(values.size, block_dim):
        acc = F32(0)
        for b in range(start, start + count, row_batch):
            acc = F32(acc + halving_sum(values[b:min(b + row_batch, start + count)]))
        partials.append(acc)
    return halving_sum(np.array(partials, F32))


def cross_entropy_loss(input, target, weight=None, *, reduction="mean", ignore_index=-100,
                       block_dim=None, row_batch=None, col_chunk=None, **_ignored) -> dict:
    """lossOut and logProbOut in input's dtype. ``block_dim``, ``row_batch`` and ``col_chunk``
    are the run's tiling (they fix the summation order); None: min(N, 48) cores, every row of a
    core in one batch (at most 256), whole rows."""
    x = np.asarray(input)
    n, c = x.shape
    lp = _log_prob(x, col_chunk or c)
    t = np.asarray(target, np.int64)
    kept = t != ignore_index
    w = np.ones(c, F32) if weight is None else np.asarray(weight, F32)
    wt = np.where(kept, w[np.where(kept, t, 0)], F32(0)).astype(F32)
    pick = np.where(kept, lp[np.arange(n), np.where(kept, t, 0)], F32(0)).astype(F32)
    loss = (pick * (-wt)).astype(F32)
    out = {"logProbOut": lp.astype(x.dtype), "zlossOut": None, "lseForZlossOut": None}
    if reduction == "none":
        out["lossOut"] = loss.astype(x.dtype)
        return out
    cores = block_dim or max(min(n, 48), 1)
    batch = row_batch or min(max(-(-n // cores), 1), 256)
    total = _sum(loss, cores, batch)
    if reduction == "mean":
        with np.errstate(all="ignore"):
            total = F32(total / _sum(wt, cores, batch))
    out["lossOut"] = np.array([total], F32).astype(x.dtype)
    return out
