"""The cases of aclnnBatchNorm (training) and aclnnBatchNormBackward: inputs, flops and help.

The activation is ``--shape`` (NxCxHxW, or NxC / NxCxL) in ``--dtype``; weight, bias and the
running statistics are fp32 (a mixed-precision step's), seeded; the backward's save_mean and
save_invstd are the input's own batch statistics (fp32), as the forward would save them.
"""

import numpy as np

from npusim.cases.common import OpCase, Param, parse_mask, random_array
from npusim.cases.five_hd import FiveHD
from npusim.errors import NpusimError

F32 = np.float32
TILING = ("tile (elements per chunk and fp32 accumulator: a power of two from 64 to 8192), "
          "buffer_num (1 single, 2 double buffering), parts (slices of N the statistics are "
          "split in; not for A2's BatchNormV3)")


def _shape(name, shape) -> tuple:
    if not 2 <= len(shape) <= 4:
        raise NpusimError(f"{name}: --shape is NxCxHxW (or NxC, NxCxL), got {len(shape)} "
                          "dimensions")
    return shape


def _channels(rng, c: int) -> tuple:
    w, b, rm = (rng.standard_normal(c, dtype=F32) for _ in range(3))
    rv = (rng.random(c, dtype=F32) + F32(0.5)).astype(F32)
    return w, b, rm, rv


def _make(shape, dtype, params, rng):
    x = random_array(rng, _shape("batch_norm", shape), dtype)
    return (x, *_channels(rng, shape[1])), {"momentum": params["momentum"],
                                            "eps": params["eps"]}


def _golden_options(result, args, kwargs) -> dict:
    """The run's layout and split: they fix the order of the channel sums."""
    t = result.tiling
    return {"lanes": t.lanes, "parts": t.parts, "tile": t.tile, "pitch": t.pitch,
            "chunk_rows": t.chunk_rows}


def _make_backward(shape, dtype, params, rng):
    shape = _shape("batch_norm_backward", shape)
    dy, x = random_array(rng, shape, dtype), random_array(rng, shape, dtype)
    w, _, rm, rv = _channels(rng, shape[1])
    axes = (0, *range(2, len(shape)))
    xf = x.astype(np.float64)
    mean = xf.mean(axis=axes).astype(F32)
    invstd = (1.0 / np.sqrt(xf.var(axis=axes) + params["eps"])).astype(F32)
    return (dy, x, w, rm, rv, mean, invstd), {"eps": params["eps"],
                                              "output_mask": params["output_mask"]}


def _run_5hd(args, kwargs, **options):
    from npusim.ops.batch_norm.graph import batch_norm_5hd

    return batch_norm_5hd(*args, **kwargs, **options)


def _run_backward_5hd(args, kwargs, **options):
    from npusim.ops.batch_norm.graph import batch_norm_backward_5hd

    return batch_norm_backward_5hd(*args, **kwargs, **options)


FIVE_HD = FiveHD(run=_run_5hd, outputs=lambda args, kwargs: {"output": args[0].shape[1]},
                 kernels="BNTrainingReduce, BNTrainingUpdate on NC1HWC0")
FIVE_HD_BACKWARD = FiveHD(run=_run_backward_5hd,
                          outputs=lambda args, kwargs: {"gradInput": args[1].shape[1]},
                          kernels="BNTrainingUpdateGrad, BNTrainingReduceGrad on NC1HWC0")


BATCH_NORM = OpCase(
    name="batch_norm", aclnn="aclnnBatchNorm",
    summary="out = (input - mean) / sqrt(var + eps) x weight + bias per channel (training: "
            "batch statistics, running statistics updated)",
    shape_help="NxCxHxW of input (fp32 weight, bias, running_mean, running_var of C); "
               "ResNet-50's stem BN at batch 32 is 32x64x112x112",
    default_shape=(32, 64, 112, 112), demo_shape=(8, 64, 56, 56), quick_shape=(2, 32, 7, 7),
    dtypes=("float16", "float32", "bfloat16"), unit="vector", make=_make,
    flops=lambda a, k: 6 * a[0].size,
    params=(Param(name="momentum", parse=float, default="0.1",
                  help="weight of the batch statistics in the running ones"),
            Param(name="eps", parse=float, default="1e-5", help="added to the variance")),
    golden_options=_golden_options, tiling_help=TILING, five_hd=FIVE_HD,
    sweep_example="--tiling tile=pow2:512:8192 --tiling buffer_num=1,2",
    notes="Atlas training series (and A2 when C < 64): TransData to NC1HWC0, BNTrainingReduce "
          "(per-channel sum and square sum), BNTrainingUpdate (normalise, save and running "
          "statistics), TransData back. A2 with C >= 64: BatchNormV3, one kernel on NCHW that "
          "reads x twice. bf16 on A2 only.")

BATCH_NORM_BACKWARD = OpCase(
    name="batch_norm_backward", aclnn="aclnnBatchNormBackward",
    summary="gradInput, gradWeight = sum gradOut x x_hat, gradBias = sum gradOut per channel "
            "(training)",
    shape_help="NxCxHxW of gradOut and input (fp32 weight, save_mean, save_invstd of C)",
    default_shape=(32, 64, 112, 112), demo_shape=(8, 64, 56, 56), quick_shape=(2, 32, 7, 7),
    dtypes=("float16", "float32", "bfloat16"), unit="vector", make=_make_backward,
    flops=lambda a, k: 10 * a[0].size,
    params=(Param(name="eps", parse=float, default="1e-5", help="added to the variance"),
            Param(name="output_mask", parse=parse_mask, default="1,1,1",
                  help="which of gradInput, gradWeight, gradBias to return, e.g. 1,1,0")),
    golden_options=_golden_options, tiling_help=TILING, five_hd=FIVE_HD_BACKWARD,
    sweep_example="--tiling tile=pow2:512:8192 --tiling buffer_num=1,2",
    notes="Both products: TransData of gradOut and input to NC1HWC0, BNTrainingUpdateGrad (the "
          "per-channel sums), BNTrainingReduceGrad (gradInput; gradWeight and gradBias from the "
          "sums), TransData back. bf16 on A2 only.")
