"""aclnnSoftmaxBackward's argument rules, from its aclnn document (hicann/ops-nn
``activation/softmax_grad/docs/aclnnSoftmaxBackward.md``).

Products: Atlas A2 and the Atlas training series run it (the inference series too: not modelled
here, 161002 saying so). gradOutput and output: FLOAT16, FLOAT32 or BFLOAT16 (bf16 on A2 only),
one dtype, one shape, 0-8 dims; dim within gradOutput's dims (negative counts from the end).
A None tensor is 161001, every other violation 161002. Modelled: the last dim (the softmax of a
row, as attention and the MoE router take it); another dim is 161002 saying so. An empty tensor
gives an empty out and no kernel.
"""

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_dtype, check_modelled_product, require

OP = "aclnnSoftmaxBackward"
PRODUCTS = ("atlas-a2", "atlas-training")
UNMODELLED = ("atlas-inference",)
DTYPES = {"atlas-a2": ("float16", "float32", "bfloat16"),
          "atlas-training": ("float16", "float32")}
MAX_DIMS = 8


def invalid(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def check_softmax_backward(chip, grad_output, output, dim) -> tuple:
    """(gradOutput, output) as contiguous arrays, and the softmax's length (the last dim)."""
    require(OP, grad_output=grad_output, output=output)
    check_modelled_product(OP, chip, PRODUCTS, UNMODELLED)
    dy, y = as_array(OP, "grad_output", grad_output), as_array(OP, "output", output)
    check_dtype(OP, "grad_output", dy, DTYPES, chip)
    check_dtype(OP, "output", y, DTYPES, chip)
    if dy.dtype != y.dtype or dy.shape != y.shape:
        raise invalid(f"grad_output {name_of(dy.dtype)} {tuple(dy.shape)} and output "
                      f"{name_of(y.dtype)} {tuple(y.shape)} must have one dtype and shape")
    if dy.ndim > MAX_DIMS:
        raise invalid(f"grad_output has {dy.ndim} dims; allowed 0 to {MAX_DIMS}")
    rank = max(dy.ndim, 1)
    if isinstance(dim, bool) or not isinstance(dim, int | np.integer) or \
            not -rank <= dim < rank:
        raise invalid(f"dim = {dim!r}; allowed {-rank} to {rank - 1} for {dy.ndim} dims")
    if dy.ndim and dim % rank != rank - 1:
        raise invalid(f"dim = {dim} is not the last dim ({rank - 1}): npusim models the softmax "
                      "of the last dim only")
    return np.ascontiguousarray(dy), np.ascontiguousarray(y), (dy.shape[-1] if dy.ndim else 1)
