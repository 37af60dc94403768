"""aclnnBatchNorm in training mode: output = (input - mean) / sqrt(var + eps) x weight + bias
per channel over N, H and W; saveMean, saveInvstd; the running statistics updated.

Kernels (``stats["kernels"]``, launch order), as aclnn runs them outside graph mode (the
non-regbase path of ``aclnn_batch_norm.cpp``: BNTrainingReduce then BNTrainingUpdate, TBE
kernels on NC1HWC0, the framework's TransData around them):
[Contiguous], TransData(input) NCHW -> NC1HWC0 (C0 = 16), BNTrainingReduce, BNTrainingUpdate,
TransData(output) NC1HWC0 -> NCHW. On A2 the source sends C >= 64 to BatchNormV3, one Ascend C
kernel on NCHW (``v3.py``); C < 64 takes the pair. ``launch_forward_5hd`` launches only the two
compute kernels on an activation already in NC1HWC0 (graph mode, where the layers keep it).

Outputs: ``output`` (input's shape and dtype), ``saveMean`` and ``saveInvstd`` (fp32, C: the
kernels' own, aclnn casts them to the caller's dtype), and, as aclnn updates running_mean and
running_var in place, npusim returns the updated copies as ``runningMean`` and ``runningVar``
(fp32, C; the arrays passed in are not changed).

Not modelled: the TransData of the four C-sized tensors (weight, bias, running_mean,
running_var) into NC1HWC0 and of the results back (npusim places them zero-padded to whole
C0 blocks); the Fill of a None tensor.
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.batch_norm.apply import BNTrainingUpdateKernel
from npusim.ops.batch_norm.args import OP_FWD, check_batch_norm, invalid
from npusim.ops.batch_norm.stats import BNTrainingReduceKernel
from npusim.ops.batch_norm.tiling import batch_norm_tiling
from npusim.ops.batch_norm.v3 import V3_MIN_CHANNELS, launch_batch_norm_v3
from npusim.ops.common import ceil_div, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_from_5hd, plan_to_5hd

C0 = 16
F32 = np.float32


def layout_5hd(nchw: tuple) -> tuple:
    """(n, groups, run_len, lanes, count) of an NC1HWC0 activation."""
    n, c, h, w = nchw
    return n, ceil_div(c, C0), h * w * C0, C0, n * h * w


def padded(run, name: str, values: np.ndarray, size: int):
    """A GM tensor of ``size`` fp32 holding ``values`` then zeros (NC1HWC0 of a C vector)."""
    a = np.zeros(size, F32)
    a[:values.size] = values
    return run.gm.tensor(name, F32, size, a)


def forward_consts(count: int, momentum: float, eps: float) -> tuple:
    """(1/M, eps, momentum, 1 - momentum, M / (M - 1)), each rounded to fp32 once."""
    return tuple(float(F32(v)) for v in (1.0 / count, eps, momentum, 1.0 - momentum,
                                         count / (count - 1)))


def launch_forward_5hd(run, x5, nchw: tuple, chans: list, outs: list, momentum: float,
                       eps: float, tiling=None):
    """BNTrainingReduce and BNTrainingUpdate on ``x5``, an NC1HWC0 GM tensor of an (N, C, H,
    W) activation; ``chans`` the fp32 GM tensors weight, bias, running_mean, running_var padded
    to C1 x C0; ``outs`` the C-sized GM outputs saveMean, saveInvstd, runningMean, runningVar.
    Returns (y5, tiling): the output in NC1HWC0."""
    layout = layout_5hd(nchw)
    t = batch_norm_tiling(run.chip, OP_FWD, layout, x5.dtype, inputs=1, overrides=tiling)
    lanes = t.groups * t.lanes
    ws_sum = run.gm.tensor("BNTrainingReduce.sum", F32, t.parts * lanes)
    ws_sq = run.gm.tensor("BNTrainingReduce.square_sum", F32, t.parts * lanes)
    run.launch(BNTrainingReduceKernel, block_dim=t.block_dim, name="BNTrainingReduce",
               impl="tbe", args=dict(x=x5, ws_sum=ws_sum, ws_sq=ws_sq, tiling=t))
    y5 = run.gm.tensor("output.5hd", x5.dtype, t.n * t.groups * t.run_len)
    run.launch(BNTrainingUpdateKernel, block_dim=t.block_dim, name="BNTrainingUpdate",
               impl="tbe", args=dict(x=x5, ws_sum=ws_sum, ws_sq=ws_sq, channel_in=chans, y=y5,
                                     channel_out=outs, consts=forward_consts(t.count, momentum,
                                                                             eps),
                                     tiling=t, channels=nchw[1]))
    return y5, t


def batch_norm(input, weight, bias, running_mean, running_var, *, training=True,  # noqa: A002
               momentum=0.1, eps=1e-5, chip="atlas-a2", tiling=None, mode="timed",
               numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnBatchNorm (training) on ``chip``; outputs ``output``, ``saveMean``,
    ``saveInvstd`` and the updated ``runningMean``, ``runningVar`` (see the module doc)."""
    chip = resolve_chip(chip)
    act, chans, mom, e = check_batch_norm(chip, input, weight, bias, running_mean, running_var,
                                          training, momentum, eps)
    if act.array.size == 0:
        raise invalid(OP_FWD, f"input {act.shape} is empty: npusim does not model aclnn's "
                              "empty-tensor fill")
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    n, c, h, w = act.nchw
    dtype = act.array.dtype
    x_gm = to_gm(run, "input", act.array)
    outs = [run.gm.tensor(name, F32, c) for name in ("saveMean", "saveInvstd", "runningMean",
                                                      "runningVar")]
    y = run.gm.tensor("output", dtype, act.array.size)
    if chip.product == "atlas-a2" and c >= V3_MIN_CHANNELS:
        ins = [run.gm.tensor(nm, F32, c, v) for nm, v in zip(
            ("weight", "bias", "running_mean", "running_var"), chans, strict=True)]
        t = launch_batch_norm_v3(run, x_gm, y, act.nchw, ins, outs,
                                 forward_consts(n * h * w, mom, e), tiling)
        ws = 0
    else:
        c1 = ceil_div(c, C0)
        x5_bytes = n * c1 * h * w * C0 * dtype.itemsize
        x5 = run.gm.tensor("input.5hd", dtype, n * c1 * h * w * C0)
        run_transdata(run, plan_to_5hd(chip, "TransData(input)", (n, c, 1, h, w), 1, C0, dtype,
                                       dtype), x_gm, x5)
        ins = [padded(run, f"{nm}.5hd", v, c1 * C0) for nm, v in zip(
            ("weight", "bias", "running_mean", "running_var"), chans, strict=True)]
        y5, t = launch_forward_5hd(run, x5, act.nchw, ins, outs, mom, e, tiling)
        run_transdata(run, plan_from_5hd(chip, "TransData(output)", (n, 1, c1, h * w, C0), c,
                                         dtype, dtype), y5, y)
        ws = 2 * x5_bytes + 2 * t.parts * c1 * C0 * 4
    names = ("saveMean", "saveInvstd", "runningMean", "runningVar")
    read = {"output": (y, act.shape), **{nm: (g, (c,)) for nm, g in zip(names, outs,
                                                                          strict=True)}}
    return run.result(read, tiling=t, workspace_bytes=ws)
