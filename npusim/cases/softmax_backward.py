"""The case of aclnnSoftmaxBackward: inputs (output a softmax of random logits), flops, help.

``--shape ROWS x ... x COLS``: gradOutput's and output's shape; the softmax is over the last dim
(the MoE router's 4096x256)."""

import numpy as np

from npusim.cases.common import OpCase, random_array
from npusim.dtypes import DTYPES

SOFTMAX_GRAD_OPS = 4     # dy * y, the sum, y * s, the sub per element


def _make(shape, dtype, params, rng):
    x = rng.standard_normal(shape).astype(np.float64)
    if x.size == 0:      # a zero axis: nothing to take a softmax of (the op says what it does)
        y = x.astype(DTYPES[dtype])
    else:
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        y = (e / e.sum(axis=-1, keepdims=True)).astype(DTYPES[dtype])
    return (random_array(rng, shape, dtype), y), {"dim": -1}


SOFTMAX_BACKWARD = OpCase(
    name="softmax_backward", aclnn="aclnnSoftmaxBackward",
    summary="gradInput = gradOutput * output - sum(gradOutput * output, dim) * output",
    shape_help="ROWS x ... x COLS: gradOutput's and output's shape, the softmax over the last "
               "dim (the MoE router's 4096x256)",
    default_shape=(4096, 256), demo_shape=(2048, 256), quick_shape=(64, 256),
    dtypes=("bfloat16", "float16", "float32"), unit="vector", make=_make,
    flops=lambda a, k: SOFTMAX_GRAD_OPS * a[0].size,
    tiling_help="block_dim (vector cores; ceil(rows / block_dim) rows a core), row_factor "
                "(rows a batch, up to 255)",
    sweep_example="--tiling row_factor=8,16,32",
    notes="Reads gradOutput and output once and writes gradInput once: the roofline is those "
          "bytes over the HBM bandwidth. Atlas A2 (bf16 too) and the training series.")
