"""aclnnBatchNormBackward in training mode: gradInput, gradWeight (sum of gradOut x x_hat per
channel), gradBias (sum of gradOut per channel), x_hat = (input - save_mean) x save_invstd.

Kernels (``stats["kernels"]``, launch order), as aclnn runs them on both products (the
non-regbase path of ``aclnn_batch_norm_backward.cpp``: BNTrainingUpdateGrad then
BNTrainingReduceGrad, TBE kernels on NC1HWC0, the framework's TransData around them):
[Contiguous], TransData(gradOut), TransData(input) NCHW -> NC1HWC0, BNTrainingUpdateGrad,
BNTrainingReduceGrad, TransData(gradInput) NC1HWC0 -> NCHW. ``launch_backward_5hd`` launches
only the two compute kernels on activations already in NC1HWC0 (graph mode).

aclnn runs both kernels whatever ``output_mask`` says; npusim does too and returns None for the
outputs the mask leaves out. Not modelled: the TransData of the C-sized tensors (npusim places
them zero-padded to whole C0 blocks), the Fill of a None tensor, running_mean and running_var
(training mode does not read them).
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.batch_norm.apply import BNTrainingReduceGradKernel
from npusim.ops.batch_norm.args import OP_BWD, check_batch_norm_backward, invalid
from npusim.ops.batch_norm.forward import C0, F32, layout_5hd, padded
from npusim.ops.batch_norm.stats import BNTrainingUpdateGradKernel
from npusim.ops.batch_norm.tiling import batch_norm_tiling
from npusim.ops.common import ceil_div, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_from_5hd, plan_to_5hd


def launch_backward_5hd(run, dy5, x5, nchw: tuple, chans: list, outs: list, tiling=None):
    """BNTrainingUpdateGrad and BNTrainingReduceGrad on NC1HWC0 GM tensors ``dy5`` and ``x5``
    of an (N, C, H, W) activation; ``chans`` the fp32 GM tensors weight, save_mean, save_invstd
    padded to C1 x C0; ``outs`` the C-sized GM outputs gradWeight, gradBias. Returns (dx5,
    tiling): gradInput in NC1HWC0."""
    t = batch_norm_tiling(run.chip, OP_BWD, layout_5hd(nchw), x5.dtype, inputs=2,
                          overrides=tiling)
    lanes = t.groups * t.lanes
    ws_dg = run.gm.tensor("BNTrainingUpdateGrad.diff_scale", F32, t.parts * lanes)
    ws_db = run.gm.tensor("BNTrainingUpdateGrad.diff_offset", F32, t.parts * lanes)
    run.launch(BNTrainingUpdateGradKernel, block_dim=t.block_dim, name="BNTrainingUpdateGrad",
               impl="tbe", args=dict(dy=dy5, x=x5, mean=chans[1], invstd=chans[2], ws_dg=ws_dg,
                                     ws_db=ws_db, tiling=t))
    dx5 = run.gm.tensor("gradInput.5hd", x5.dtype, t.n * t.groups * t.run_len)
    inv_m = float(F32(1.0 / t.count))
    run.launch(BNTrainingReduceGradKernel, block_dim=t.block_dim, name="BNTrainingReduceGrad",
               impl="tbe", args=dict(dy=dy5, x=x5, ws_dg=ws_dg, ws_db=ws_db, channel_in=chans,
                                     dx=dx5, channel_out=outs, inv_m=inv_m, tiling=t,
                                     channels=nchw[1]))
    return dx5, t


def batch_norm_backward(grad_out, input, weight, running_mean, running_var,  # noqa: A002
                        save_mean, save_invstd, *, training=True, eps=1e-5,
                        output_mask=(True, True, True), chip="atlas-a2", tiling=None,
                        mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnBatchNormBackward (training) on ``chip``; outputs ``gradInput`` (input's shape
    and dtype), ``gradWeight`` and ``gradBias`` (fp32, C), None where ``output_mask`` is off."""
    chip = resolve_chip(chip)
    dy, act, chans, _, mask = check_batch_norm_backward(
        chip, grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
        training, eps, output_mask)
    if act.array.size == 0:
        raise invalid(OP_BWD, f"input {act.shape} is empty: npusim does not model aclnn's "
                              "empty-tensor path")
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    n, c, h, w = act.nchw
    dtype, c1 = act.array.dtype, ceil_div(c, C0)
    size5 = n * c1 * h * w * C0
    fives = []
    for name, arr in (("gradOut", dy.array), ("input", act.array)):
        gm = to_gm(run, name, arr)
        five = run.gm.tensor(f"{name}.5hd", dtype, size5)
        run_transdata(run, plan_to_5hd(chip, f"TransData({name})", (n, c, 1, h, w), 1, C0,
                                       dtype, dtype), gm, five)
        fives.append(five)
    ins = [padded(run, f"{nm}.5hd", v, c1 * C0) for nm, v in zip(
        ("weight", "save_mean", "save_invstd"), chans, strict=True)]
    outs = [run.gm.tensor(nm, F32, c) for nm in ("gradWeight", "gradBias")]
    dx5, t = launch_backward_5hd(run, fives[0], fives[1], act.nchw, ins, outs, tiling)
    dx = run.gm.tensor("gradInput", dtype, act.array.size)
    run_transdata(run, plan_from_5hd(chip, "TransData(gradInput)", (n, 1, c1, h * w, C0), c,
                                     dtype, dtype), dx5, dx)
    read = {"gradInput": (dx, act.shape) if mask[0] else None,
            "gradWeight": (outs[0], (c,)) if mask[1] else None,
            "gradBias": (outs[1], (c,)) if mask[2] else None}
    ws = 3 * size5 * np.dtype(dtype).itemsize + 2 * t.parts * c1 * C0 * 4
    return run.result(read, tiling=t, workspace_bytes=ws)
