"""The case of aclnnCrossEntropyLoss (the loss's forward): random logits, targets with ignored
rows, flops and help for the command."""

import numpy as np

from npusim.cases.common import OpCase, random_array
from npusim.cases.cross_entropy_loss_grad import CE_IGNORED_EVERY, CE_PARAMS
from npusim.errors import NpusimError

CE_FORWARD_OPS = 5   # max, x - max, exp, sum, - lse per element (casts not counted)


def _make(shape, dtype, params, rng):
    if len(shape) != 2:
        raise NpusimError(f"cross_entropy_loss: --shape is N x C (rows x classes), got "
                          f"{len(shape)} dimensions")
    n, c = shape
    if c < 1:
        raise NpusimError(f"cross_entropy_loss: shape {n}x{c} leaves no class to draw the "
                          "targets from; C (the second dimension) must be at least 1")
    x = random_array(rng, shape, dtype)
    target = rng.integers(0, c, n, dtype=np.int64)
    target[::CE_IGNORED_EVERY] = params["ignore_index"]
    args = (x, target)
    if params["weight"]:
        args += (rng.uniform(0.5, 2.0, c).astype(np.float32),)
    return args, {"reduction": params["reduction"], "ignore_index": params["ignore_index"]}


def _golden_options(result, args, kwargs) -> dict:
    """The cores, row batches and column chunks the run used: they fix the sums' order."""
    t = result.tiling
    return {"block_dim": t.block_dim, "row_batch": t.row_batch, "col_chunk": t.col_chunk}


CROSS_ENTROPY_LOSS = OpCase(
    name="cross_entropy_loss", aclnn="aclnnCrossEntropyLoss",
    summary="logProbOut = log_softmax(input), lossOut = -weight[target] x logProb[target] "
            "(mean over the weights, sum, or per row); ignored rows zero",
    shape_help="N x C: input's shape (rows x classes); ResNet-50's loss at batch 32 is 32x1000",
    default_shape=(32, 1000), demo_shape=(256, 32000), quick_shape=(64, 1000),
    dtypes=("float32", "float16", "bfloat16"), unit="vector",
    make=_make, flops=lambda args, kwargs: CE_FORWARD_OPS * args[0].size, params=CE_PARAMS,
    golden_options=_golden_options,
    sweep_example="--shape 256x32000 --tiling col_chunk=pow2:2048:16384",
    tiling_help="block_dim (AIV cores used), row_batch (rows whose loss slots one batch "
                "holds), col_chunk (elements of a row per chunk: C, or whole 512 bytes; a "
                "chunked row is read three times), buffer_num (1 or 2)",
    notes="Reads input once (a row that fits UB) and writes logProbOut, so the roofline is "
          "those bytes over the HBM bandwidth. Atlas A2 only; mean and sum add per-core "
          "partials through a workspace after SyncAll, in a fixed order (deterministic). "
          "torch's F.cross_entropy on NPU runs aclnnLogSoftmax + aclnnNLLLoss instead (modelled "
          "on the training series: log_softmax, nll_loss); torch_npu.npu_cross_entropy_loss "
          "runs this operator.")
