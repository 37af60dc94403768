"""aclnnMoeTokenPermuteGrad: out[t] = sum over k of permutedOutputGrad[sortedIndices[t*topK + k]].

The backward of MoeTokenPermute (kernels.md §5(a)): each token's topK copies were scattered to
rows ``sortedIndices[t * topK + k]`` of the permuted tensor; their gradients are gathered back and
summed. An index at or beyond the rows of permutedOutputGrad is a copy the forward dropped: it is
skipped, and a token with no surviving copy gets a zero row. Atlas A2 only (the seed).

Outputs: ``out`` (tokens x hidden, the input's dtype). Each output row has exactly one writer (a
core owns a block of tokens), summed in the fixed k order: bit-exact, no atomic outputs. The
kernel and its tiling are in ``ops/moe/permute_grad_kernel.py`` and
``ops/moe/permute_grad_tiling.py``.

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input],
MoeTokenPermuteGrad (none when tokens or hidden is 0).

Modelled beyond the kernel: the Contiguous copy of a non-contiguous input. Not modelled: the
system workspace aclnn reserves (reported as 0 bytes), paddedMode=true (the seed refuses it).
"""

import numpy as np

from npusim.dtypes import name_of
from npusim.engine.launch import MODES
from npusim.engine.sequence import OpRun
from npusim.errors import (
    ACLNN_ERR_PARAM_INVALID,
    NpusimError,
    NumericsRequiredError,
    ParamError,
)
from npusim.ops.common import (
    PRODUCT_NAMES,
    as_array,
    check_dtype,
    product_name,
    require,
    resolve_chip,
)
from npusim.ops.common.contiguous import to_gm
from npusim.ops.moe.permute_grad_kernel import MoeTokenPermuteGradKernel
from npusim.ops.moe.permute_grad_tiling import (
    OP,
    MoeTokenPermuteGradTiling,
    Problem,
    moe_token_permute_grad_tiling,
)

__all__ = ["OP", "MoeTokenPermuteGradTiling", "check_moe_token_permute_grad",
           "moe_token_permute_grad", "moe_token_permute_grad_tiling"]

PRODUCTS = ("atlas-a2",)                      # Atlas A2 training / Atlas 800I A2 (the seed)
DTYPES = {"atlas-a2": ("bfloat16", "float16", "float32")}
INDEX_DTYPES = {"atlas-a2": ("int32",)}
MAX_TOPK = 512                                # numTopk <= 512 (the seed's constraint)


def _invalid(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def check_product(chip) -> None:
    """ParamError 161002 on a product the seed does not list."""
    if chip.product not in PRODUCTS:
        supported = ", ".join(f"{p} ({PRODUCT_NAMES.get(p, p)})" for p in PRODUCTS)
        raise _invalid(f"not supported on {chip.name} ({product_name(chip)}); supported "
                       f"products: {supported}")


def _check_int(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise _invalid(f"{name} = {value!r}: an integer is required, {low} to {high}")
    if not low <= value <= high:
        raise _invalid(f"{name} = {value}: allowed {low} to {high}")
    return int(value)


def check_moe_token_permute_grad(chip, permuted_output_grad, sorted_indices, num_topk,
                                 padded_mode, out=None, *, has_output=False):
    """The seed's argument rules; returns (grad, indices, num_topk) as arrays and an int."""
    tensors = {"permutedOutputGrad": permuted_output_grad, "sortedIndices": sorted_indices}
    if has_output:
        tensors["out"] = out
    require(OP, **tensors)
    check_product(chip)
    arrays = {name: as_array(OP, name, value) for name, value in tensors.items()}
    grad, indices = arrays["permutedOutputGrad"], arrays["sortedIndices"]
    check_dtype(OP, "permutedOutputGrad", grad, DTYPES, chip)
    check_dtype(OP, "sortedIndices", indices, INDEX_DTYPES, chip)
    if grad.ndim != 2:
        raise _invalid(f"permutedOutputGrad has {grad.ndim} dimensions {tuple(grad.shape)}; "
                       "it must be 2-D (tokens * topK, hidden)")
    if indices.ndim != 1:
        raise _invalid(f"sortedIndices has {indices.ndim} dimensions {tuple(indices.shape)}; "
                       "it must be 1-D (tokens * topK)")
    topk = _check_int("numTopk", num_topk, 1, MAX_TOPK)
    if not isinstance(padded_mode, bool | np.bool_) or padded_mode:
        raise _invalid(f"paddedMode = {padded_mode!r}: only False is supported")
    if indices.size % topk:
        raise _invalid(f"sortedIndices has {indices.size} elements, not a multiple of "
                       f"numTopk = {topk}")
    negative = np.flatnonzero(indices < 0)
    if negative.size:
        i = int(negative[0])
        raise _invalid(f"sortedIndices[{i}] = {int(indices[i])}: indices must be >= 0 (an "
                       f"index >= the {grad.shape[0]} rows of permutedOutputGrad is a dropped "
                       f"copy); {negative.size} are negative")
    if has_output:
        _check_out(arrays["out"], grad, indices.size // topk)
    return grad, indices, topk


def _check_out(out, grad, tokens: int) -> None:
    want = (tokens, grad.shape[1])
    if out.dtype != grad.dtype or tuple(out.shape) != want:
        raise _invalid(f"out is {name_of(out.dtype)} {tuple(out.shape)}; it must be "
                       f"{name_of(grad.dtype)} {want} (tokens, hidden) like permutedOutputGrad")


def moe_token_permute_grad(permuted_output_grad, sorted_indices, *, num_topk,
                           padded_mode=False, chip="atlas-a2", tiling=None, mode="timed",
                           numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnMoeTokenPermuteGrad on ``chip``; ``outputs["out"]`` is (tokens, hidden)."""
    chip = resolve_chip(chip)
    grad, indices, topk = check_moe_token_permute_grad(chip, permuted_output_grad,
                                                       sorted_indices, num_topk, padded_mode)
    if mode not in MODES:
        raise NpusimError(f"{OP}: mode {mode!r}: allowed {', '.join(MODES)}")
    if numerics is False or numerics is np.False_:
        raise NumericsRequiredError(f"{OP}: numerics=False is not possible: the scalar reads "
                                    "each sortedIndices value to choose the rows to gather, "
                                    "so the control flow follows the data")
    tokens, hidden = indices.size // topk, grad.shape[1]
    problem = Problem(tokens=tokens, top_k=topk, num_out_tokens=grad.shape[0], hidden=hidden,
                      item=grad.dtype.itemsize)
    t = moe_token_permute_grad_tiling(chip, problem, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    grad_gm = to_gm(run, "permutedOutputGrad", grad)
    indices_gm = to_gm(run, "sortedIndices", indices)
    out_gm = run.gm.tensor("out", grad.dtype, tokens * hidden)
    if tokens and hidden:
        run.launch(MoeTokenPermuteGradKernel, block_dim=t.block_dim,
                   name="MoeTokenPermuteGrad",
                   args=dict(grad=grad_gm, indices=indices_gm, out=out_gm, tiling=t))
    return run.result({"out": (out_gm, (tokens, hidden))}, tiling=t)
