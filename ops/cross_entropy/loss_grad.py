"""aclnnCrossEntropyLossGrad: the gradient of cross-entropy loss with respect to its logits,
given log_softmax's output (kernels.md §3(a)).

    mask_i = target_i != ignore_index,  w_i = weight[target_i] (1 without a weight)
    nll_i  = g * mask_i * w_i / sum_j(mask_j * w_j)   (mean)
             g * mask_i * w_i                         (sum)
             g_i * mask_i * w_i                       (none)
    xGradOut[i, j] = exp(logProb[i, j]) * nll_i - (j == target_i ? nll_i : 0)

Atlas A2 only (the seed); on other products a ParamError 161002. The host tiling is in
``ops/cross_entropy/tiling.py``, the kernel in ``ops/cross_entropy/kernel.py``, the argument rules
in ``ops/cross_entropy/args.py``. Outputs: xGradOut, written by plain copies (no atomic adds), so
the result is deterministic and bit-identical under jitter. For mean, the per-core partial sums of
mask x weight meet in a workspace of align32(cores x 4) bytes after SyncAll and every core reduces
them in the same order; ``Result.workspace_bytes`` reports it (CANN's system workspace is not
modelled). A mean with every row ignored divides by 0 (inf/NaN rows), as CANN's kernel does.

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input],
CrossEntropyLossGrad. No MemSet: no output or workspace is added into atomically.
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.cross_entropy.args import OP, check_cross_entropy_loss_grad
from npusim.ops.cross_entropy.kernel import CrossEntropyLossGradKernel
from npusim.ops.cross_entropy.tiling import (
    CrossEntropyLossGradTiling,
    cross_entropy_loss_grad_tiling,
)

__all__ = ["OP", "CrossEntropyLossGradTiling", "cross_entropy_loss_grad",
           "cross_entropy_loss_grad_tiling", "plan", "workspace_bytes"]


def workspace_bytes(tiling: CrossEntropyLossGradTiling, reduction: str) -> int:
    """GM workspace the kernel needs: one fp32 partial per core for mean, 32-byte aligned."""
    return round_up(tiling.block_dim * 4, 32) if reduction == "mean" else 0


def plan(chip, args, tiling=None) -> CrossEntropyLossGradTiling:
    """The tiling of checked arguments ``args`` (a CeArgs) on ``chip``."""
    return cross_entropy_loss_grad_tiling(
        chip, args.rows, args.cols, args.log_prob.dtype, reduction=args.reduction,
        weighted=args.weight is not None, overrides=tiling)


def cross_entropy_loss_grad(grad_loss, log_prob, target, weight=None, *, grad_zloss=None,
                            lse_for_zloss=None, reduction="mean", ignore_index=-100,
                            label_smoothing=0.0, lse_square_scale_for_zloss=0.0,
                            chip="atlas-a2", tiling=None, mode="timed", numerics=True,
                            trace=True, sanitize=True, jitter=None):
    """Run aclnnCrossEntropyLossGrad on ``chip``; ``outputs["xGradOut"]`` has logProb's shape
    and dtype."""
    chip = resolve_chip(chip)
    a = check_cross_entropy_loss_grad(
        chip, grad_loss, log_prob, target, weight, grad_zloss=grad_zloss,
        lse_for_zloss=lse_for_zloss, reduction=reduction, ignore_index=ignore_index,
        label_smoothing=label_smoothing, lse_square_scale_for_zloss=lse_square_scale_for_zloss)
    t = plan(chip, a, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    g_gm, x_gm = to_gm(run, "gradLoss", a.grad_loss), to_gm(run, "logProb", a.log_prob)
    # The scalar reads target and weight while the kernel is recorded: they are placed in GM
    # contiguously (a strided one is copied on the host, not by a Contiguous kernel).
    t_gm = run.gm.tensor("target", np.int64, a.rows, np.ascontiguousarray(a.target))
    w_gm = None if a.weight is None else run.gm.tensor(
        "weight", np.float32, a.cols, np.ascontiguousarray(a.weight))
    y_gm = run.gm.tensor("xGradOut", a.log_prob.dtype, a.log_prob.size)
    ws = workspace_bytes(t, a.reduction)
    ws_gm = run.gm.tensor("workspace", np.float32, ws // 4) if ws else None
    if a.rows:
        params = dict(reduction=a.reduction, ignore_index=a.ignore_index,
                      label_smoothing=a.label_smoothing)
        run.launch(CrossEntropyLossGradKernel, block_dim=t.block_dim, name="CrossEntropyLossGrad",
                   args=dict(grad_loss=g_gm, log_prob=x_gm, target=t_gm, weight=w_gm,
                             x_grad=y_gm, workspace=ws_gm, params=params, tiling=t))
    return run.result({"xGradOut": (y_gm, a.log_prob.shape)}, tiling=t, workspace_bytes=ws)
