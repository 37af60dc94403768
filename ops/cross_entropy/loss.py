"""aclnnCrossEntropyLoss: log-softmax and the negative log-likelihood of the target class in one
kernel, the forward whose logProbOut aclnnCrossEntropyLossGrad takes (``loss_grad.py``).

    lse_n     = log(sum_c exp(x[n, c] - max_n)) ,  logProb[n, c] = (x[n, c] - max_n) - lse_n
    l_n       = -weight[t_n] * logProb[n, t_n] * (t_n != ignoreIndex)
    lossOut   = sum_n l_n / sum_n weight[t_n] * (t_n != ignoreIndex)   (mean)
                sum_n l_n (sum),  l (none, shape (N,))

What torch_npu runs: ``torch_npu.npu_cross_entropy_loss`` calls aclnnCrossEntropyLoss (and its
backward aclnnCrossEntropyLossGrad); ``torch.nn.functional.cross_entropy`` on NPU tensors is
decomposed by PyTorch into ``log_softmax`` and ``nll_loss``, which op-plugin runs as
aclnnLogSoftmax and aclnnNLLLoss (backward: aclnnNLLLossBackward, aclnnLogSoftmaxBackward),
which npusim models on the Atlas training series (``log_softmax.py``, ``nll_loss.py``;
op-plugin ``op_plugin/config/op_plugin_functions.yaml``,
``op_plugin/ops/opapi/NLLLossKernelNpuOpApi.cpp``).

Atlas A2 only (the document: A2 and A3; not the Atlas training series). lossOut has shape (1,)
for mean and sum (the document), (N,) for none; zlossOut and lseForZlossOut are not computed
(None: "not supported currently"). mean and sum add per-core partials in a GM workspace after
SyncAll, in a fixed order (deterministic, as the document says); ``Result.workspace_bytes``
reports it. Kernels (``stats["kernels"]``): [Contiguous per strided input], CrossEntropyLoss.
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.cross_entropy.loss_args import check_cross_entropy_loss
from npusim.ops.cross_entropy.loss_kernel import CrossEntropyLossKernel
from npusim.ops.cross_entropy.loss_tiling import cross_entropy_loss_tiling, workspace_bytes

__all__ = ["cross_entropy_loss"]


def cross_entropy_loss(input, target, weight=None, *, reduction="mean", ignore_index=-100,
                       label_smoothing=0.0, lse_square_scale_for_zloss=0.0, return_zloss=False,
                       chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
                       sanitize=True, jitter=None):
    """Run aclnnCrossEntropyLoss on ``chip``: ``outputs["lossOut"]`` ((1,) for mean and sum,
    (N,) for none) and ``outputs["logProbOut"]`` (N, C), both in input's dtype."""
    chip = resolve_chip(chip)
    a = check_cross_entropy_loss(chip, input, target, weight, reduction=reduction,
                                 ignore_index=ignore_index, label_smoothing=label_smoothing)
    t = cross_entropy_loss_tiling(chip, a.rows, a.cols, a.input.dtype, reduction=a.reduction,
                                  overrides=tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x_gm = to_gm(run, "input", a.input)
    # The scalar reads target and weight while the kernel is recorded: they are placed in GM
    # contiguously (a strided one is copied on the host).
    t_gm = run.gm.tensor("target", a.target.dtype, a.rows, np.ascontiguousarray(a.target))
    w_gm = None if a.weight is None else run.gm.tensor(
        "weightOptional", np.float32, a.cols, np.ascontiguousarray(a.weight))
    loss_shape = (a.rows,) if a.reduction == "none" else (1,)
    loss_gm = run.gm.tensor("lossOut", a.input.dtype, loss_shape[0])
    lp_gm = run.gm.tensor("logProbOut", a.input.dtype, a.input.size)
    ws = workspace_bytes(t, a.reduction)
    ws_gm = run.gm.tensor("workspace", np.float32, ws // 4) if ws else None
    run.launch(CrossEntropyLossKernel, block_dim=t.block_dim, name="CrossEntropyLoss",
               args=dict(input=x_gm, target=t_gm, weight=w_gm, loss=loss_gm, log_prob=lp_gm,
                         workspace=ws_gm, params=dict(reduction=a.reduction,
                                                      ignore_index=a.ignore_index), tiling=t))
    return run.result({"lossOut": (loss_gm, loss_shape), "logProbOut": (lp_gm, a.input.shape),
                       "zlossOut": None, "lseForZlossOut": None}, tiling=t,
                      workspace_bytes=ws)
