"""Batch norm's graph form: BNTrainingReduce + BNTrainingUpdate, and BNTrainingUpdateGrad +
BNTrainingReduceGrad, on activations already in NC1HWC0, as a framework's graph mode runs them
(no TransData of the activations or their gradients in or out).

``batch_norm_5hd`` and ``batch_norm_backward_5hd`` take aclnnBatchNorm's and
aclnnBatchNormBackward's arguments, check them as those operators do, place the activations in
GM already in NC1HWC0 (``ops/common/five_hd.py``: data as the previous layer left it, not a
kernel) and launch the two TBE kernels (``forward.launch_forward_5hd``,
``backward.launch_backward_5hd``). ``output`` and ``gradInput`` are (N, C1, H, W, 16); the
C-sized outputs are as the aclnn operators return them. On Atlas A2 this is the pair on every
channel count (aclnn sends C >= 64 to BatchNormV3 on NCHW instead, which has no TransData).
"""


from npusim.engine.sequence import OpRun
from npusim.ops.batch_norm.args import (
    OP_BWD,
    OP_FWD,
    check_batch_norm,
    check_batch_norm_backward,
    invalid,
)
from npusim.ops.batch_norm.backward import launch_backward_5hd
from npusim.ops.batch_norm.forward import C0, F32, launch_forward_5hd, padded
from npusim.ops.common import ceil_div, resolve_chip
from npusim.ops.common.five_hd import to_5hd


def _placed(run, name: str, act) -> object:
    five = to_5hd(act.reshape(*_nchw(act.shape)), C0)
    return run.gm.tensor(name, five.dtype, five.size, five)


def _nchw(shape: tuple) -> tuple:
    return tuple(shape) + (1,) * (4 - len(shape))


def _open(op: str, chip, act, mode, numerics, trace, sanitize, jitter) -> OpRun:
    if act.array.size == 0:
        raise invalid(op, f"input {act.shape} is empty: npusim does not model aclnn's "
                          "empty-tensor path")
    return OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                 jitter=jitter)


def batch_norm_5hd(input, weight, bias, running_mean, running_var, *,  # noqa: A002
                   training=True, momentum=0.1, eps=1e-5, chip="atlas-a2", tiling=None,
                   mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """BNTrainingReduce and BNTrainingUpdate on ``input`` placed in NC1HWC0; ``output`` in
    NC1HWC0, ``saveMean``, ``saveInvstd``, ``runningMean``, ``runningVar`` (fp32, C)."""
    chip = resolve_chip(chip)
    act, chans, mom, e = check_batch_norm(chip, input, weight, bias, running_mean, running_var,
                                          training, momentum, eps)
    run = _open(OP_FWD, chip, act, mode, numerics, trace, sanitize, jitter)
    n, c, h, w = act.nchw
    c1 = ceil_div(c, C0)
    x5 = _placed(run, "input.5hd", act.array)
    ins = [padded(run, f"{nm}.5hd", v, c1 * C0) for nm, v in zip(
        ("weight", "bias", "running_mean", "running_var"), chans, strict=True)]
    names = ("saveMean", "saveInvstd", "runningMean", "runningVar")
    outs = [run.gm.tensor(name, F32, c) for name in names]
    y5, t = launch_forward_5hd(run, x5, act.nchw, ins, outs, mom, e, tiling)
    read = {"output": (y5, (n, c1, h, w, C0)),
            **{nm: (g, (c,)) for nm, g in zip(names, outs, strict=True)}}
    return run.result(read, tiling=t, workspace_bytes=2 * t.parts * c1 * C0 * 4)


def batch_norm_backward_5hd(grad_out, input, weight, running_mean, running_var,  # noqa: A002
                            save_mean, save_invstd, *, training=True, eps=1e-5,
                            output_mask=(True, True, True), chip="atlas-a2", tiling=None,
                            mode="timed", numerics=True, trace=True, sanitize=True,
                            jitter=None):
    """BNTrainingUpdateGrad and BNTrainingReduceGrad on gradOut and input placed in NC1HWC0;
    ``gradInput`` in NC1HWC0, ``gradWeight``, ``gradBias`` (fp32, C); None where
    ``output_mask`` is off."""
    chip = resolve_chip(chip)
    dy, act, chans, _, mask = check_batch_norm_backward(
        chip, grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
        training, eps, output_mask)
    run = _open(OP_BWD, chip, act, mode, numerics, trace, sanitize, jitter)
    n, c, h, w = act.nchw
    c1 = ceil_div(c, C0)
    dy5, x5 = _placed(run, "gradOut.5hd", dy.array), _placed(run, "input.5hd", act.array)
    ins = [padded(run, f"{nm}.5hd", v, c1 * C0) for nm, v in zip(
        ("weight", "save_mean", "save_invstd"), chans, strict=True)]
    outs = [run.gm.tensor(nm, F32, c) for nm in ("gradWeight", "gradBias")]
    dx5, t = launch_backward_5hd(run, dy5, x5, act.nchw, ins, outs, tiling)
    read = {"gradInput": (dx5, (n, c1, h, w, C0)) if mask[0] else None,
            "gradWeight": (outs[0], (c,)) if mask[1] else None,
            "gradBias": (outs[1], (c,)) if mask[2] else None}
    return run.result(read, tiling=t, workspace_bytes=2 * t.parts * c1 * C0 * 4)


