"""The case of aclnnCrossEntropyLossGrad: log-probabilities of random logits, targets with
ignored rows, flops and help for the command."""

import numpy as np

from npusim.cases.common import OpCase, Param, parse_bool, random_array
from npusim.dtypes import DTYPES
from npusim.errors import NpusimError

CE_IGNORED_EVERY = 16   # every 16th row's target is set to ignore_index (an ignored row)
CE_VECTOR_OPS = 2       # exp and the multiply by nll per element (casts not counted)

CE_PARAMS = (
    Param(name="reduction", parse=str, default="mean",
          help="none (gradLoss per row), mean or sum (0-D gradLoss)"),
    Param(name="ignore_index", parse=int, default="-100",
          help="targets equal to it give a zero row; every 16th row's target is set to it"),
    Param(name="weight", parse=parse_bool, default="false",
          help="pass a class weight (fp32, C values)"),
)


def _ce_make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"cross_entropy_loss_grad: --shape is N x C (rows x classes), got "
                          f"{len(shape)} dimensions")
    n, c = shape
    if c < 1:
        raise NpusimError(f"cross_entropy_loss_grad: --shape {n}x{c} has no class to draw the "
                          "targets from; C (the second dimension) must be at least 1")
    logits = rng.standard_normal(shape, dtype=np.float32)
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    target = rng.integers(0, c, n, dtype=np.int64)
    target[::CE_IGNORED_EVERY] = params["ignore_index"]
    reduction = params["reduction"]
    grad_loss = random_array(rng, (n,) if reduction == "none" else (), dtype)
    args = (grad_loss, log_prob.astype(DTYPES[dtype]), target)
    if params["weight"]:
        args += (rng.uniform(0.5, 2.0, c).astype(np.float32),)
    return args, {"reduction": reduction, "ignore_index": params["ignore_index"]}


def _ce_golden_options(result, args, kwargs) -> dict:
    """The cores and row batches the run used: they fix the order of mean's sum."""
    return {"block_dim": result.tiling.block_dim, "row_batch": result.tiling.row_batch}


def _ce_flops(args, kwargs):
    return CE_VECTOR_OPS * args[1].size


CROSS_ENTROPY_LOSS_GRAD = OpCase(
    name="cross_entropy_loss_grad", aclnn="aclnnCrossEntropyLossGrad",
    summary="xGradOut = exp(logProb) x nll - nll at the target column, nll = gradLoss x "
            "weight[target] (/ the weight sum for mean); ignored rows zero",
    shape_help="N x C: logProb's shape (rows x classes; the vocabulary is C)",
    default_shape=(1024, 32000), demo_shape=(512, 32000), quick_shape=(64, 1000),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_ce_make, flops=_ce_flops, params=CE_PARAMS, golden_options=_ce_golden_options,
    sweep_example="--shape 256x32000 --tiling col_chunk=pow2:2048:16384 --tiling buffer_num=1,2",
    tiling_help="block_dim (AIV cores used), row_batch (rows whose metadata one UB batch "
                "holds), col_chunk (elements of a row per UB chunk, whole 512 bytes), "
                "buffer_num (1 as CANN, 2 double buffering)",
    notes="Streams logProb in and xGradOut out once, so the roofline is those bytes (plus "
          "target, gradLoss and weight) over the HBM bandwidth. TFLOPS counts exp and the "
          "multiply per element. Atlas A2 only; mean sums per-core partials through a "
          "workspace after SyncAll, in a fixed order (deterministic, no atomics).")
