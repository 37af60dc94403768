"""Goldens of the training series' loss (``ops/cross_entropy/log_softmax.py``, ``nll_loss.py``):
the kernels' fp32 chains in their order.

log_softmax: aclnnCrossEntropyLoss's logProb (``cross_entropy_loss._log_prob``, whole rows).
log_softmax_backward, per row in fp32: s = the halving-tree sum of g; e = exp(out) rounded once;
e x s; g - that; cast to the dtype to nearest even. nll_loss: l_n = self[n, t_n] x -w[t_n] (0
ignored); none: l; sum and mean: the cross-entropy golden's core/batch/tree order (``_sum``),
mean divided by the weights' sum taken the same way; totalWeightOut that sum (0 for none).
nll_loss_backward: -w[t_n] x (g / totalWeight rounded once) (mean), x g (sum), x g_n (none), at
(n, t_n); 0 elsewhere.
"""

import numpy as np

from npusim.golden.cross_entropy_loss import _log_prob, _sum
from npusim.golden.cross_entropy_loss_grad import halving_sum

F32 = np.float32
REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def log_softmax(self_, dim=-1, **_ignored) -> dict:
    x = np.asarray(self_)
    return {"out": _log_prob(x, x.shape[1]).astype(x.dtype)}


def log_softmax_backward(grad_output, output, dim=-1, **_ignored) -> dict:
    g, y = np.asarray(grad_output), np.asarray(output)
    gf, yf = g.astype(F32), y.astype(F32)
    s = np.array([halving_sum(r) for r in gf], F32)
    with np.errstate(all="ignore"):
        e = np.exp(yf.astype(np.float64)).astype(F32)
    return {"out": (gf - (e * s[:, None]).astype(F32)).astype(F32).astype(g.dtype)}


def _picks(x, target, weight, ignore_index):
    t = np.asarray(target, np.int64)
    kept = t != ignore_index
    safe = np.where(kept, t, 0)
    wt = np.where(kept, np.asarray(weight, F32)[safe], F32(0)).astype(F32)
    pick = np.where(kept, np.asarray(x, F32)[np.arange(t.size), safe], F32(0)).astype(F32)
    return pick, wt, kept, safe


def nll_loss(self_, target, weight, reduction=1, ignore_index=-100, *, block_dim=None,
             row_batch=None, **_ignored) -> dict:
    """out and totalWeightOut (fp32); ``block_dim`` and ``row_batch`` the run's tiling (the
    summation order; None: min(N, 32) cores, a core's rows in one batch)."""
    x = np.asarray(self_)
    pick, wt, _, _ = _picks(x, target, weight, ignore_index)
    loss = (pick * (-wt)).astype(F32)
    red = REDUCTIONS[reduction]
    if red == "none":
        return {"out": loss, "totalWeightOut": np.zeros(1, F32)}
    n = x.shape[0]
    cores = block_dim or max(min(n, 32), 1)
    batch = row_batch or min(max(-(-n // cores), 1), 256)
    total, weights = _sum(loss, cores, batch), _sum(wt, cores, batch)
    if red == "mean":
        with np.errstate(all="ignore"):
            total = F32(total / weights)
    return {"out": np.array([total], F32), "totalWeightOut": np.array([weights], F32)}


def nll_loss_backward(grad_output, self_, target, weight, reduction=1, ignore_index=-100,
                      total_weight=None, **_ignored) -> dict:
    x = np.asarray(self_)
    _, wt, kept, safe = _picks(x, target, weight, ignore_index)
    g = np.asarray(grad_output, F32).reshape(-1)
    red = REDUCTIONS[reduction]
    if red == "none":
        scale = g
    elif red == "mean":
        with np.errstate(all="ignore"):
            scale = np.full(x.shape[0], F32(g[0] / np.asarray(total_weight, F32).reshape(-1)[0]))
    else:
        scale = np.full(x.shape[0], g[0], F32)
    value = ((-wt) * scale).astype(F32)
    out = np.zeros(x.shape, F32)
    rows = np.flatnonzero(kept)
    out[rows, safe[rows]] = value[rows]
    return {"out": out}
