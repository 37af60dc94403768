"""aclnnMoeTokenUnpermuteGrad: the gradients of MoeTokenUnpermute.

CANN ``moe/moe_token_unpermute_grad`` (README; kernels.md §5(a)): with out[t] = sum over k of
probs[t, k] x permutedTokens[sortedIndices[t x topK + k]],
permutedTokensGradOut[sortedIndices[t x topK + k]] = unpermutedTokensGrad[t] x probs[t, k] (cast
with round to nearest even) and probsGradOut[t, k] = sum over h of unpermutedTokensGrad[t, h] x
permutedTokens[sortedIndices[t x topK + k], h] (fp32 products summed in the kernel's order, see
``unpermute_grad_kernel.reduce_sum_func``). A copy whose index is at or beyond numOutTokens (the
rows of permutedTokens) was dropped: nothing is written for it and its probs gradient is 0.
Without probs topK is 1: permutedTokensGradOut[sortedIndices[i]] = unpermutedTokensGrad[i], and
there is no probsGradOut (None).

Rows of permutedTokensGradOut that no index names are not written (zeros here; CANN leaves the
memory as it was); an index that names a kept row twice would race, so it is refused. Kernels:
[Contiguous per strided input], MoeTokenUnpermuteGrad (``unpermute_grad_kernel.py`` without
probs, ``unpermute_grad_probs.py`` with). Atlas A2 only. Not modelled: paddedMode=true and
restoreShape (CANN supports neither), the 16 MB system workspace (reported as 0).
"""

import numpy as np

from npusim.engine.launch import MODES
from npusim.engine.sequence import OpRun
from npusim.errors import ACLNN_ERR_PARAM_INVALID, NpusimError, NumericsRequiredError, ParamError
from npusim.ops.common import as_array, check_dtype, check_modelled_product, require, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.moe.token_unpermute import check_indices
from npusim.ops.moe.unpermute_grad_kernel import UnpermuteGradProbNoneKernel
from npusim.ops.moe.unpermute_grad_probs import UnpermuteGradProbsKernel
from npusim.ops.moe.unpermute_grad_tiling import OP, moe_token_unpermute_grad_tiling

__all__ = ["OP", "check_moe_token_unpermute_grad", "moe_token_unpermute_grad"]

DTYPES = {"atlas-a2": ("bfloat16", "float16", "float32")}
INDEX_DTYPES = {"atlas-a2": ("int32",)}
MAX_TOPK = 512


def _invalid(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def _two_d(name: str, arr, what: str) -> None:
    if arr.ndim != 2:
        raise _invalid(f"{name} has {arr.ndim} dimensions {tuple(arr.shape)}; it must be 2-D "
                       f"({what})")


def _check_shapes(x, grad, indices, probs) -> int:
    """topK, after the shape rules."""
    if grad.dtype != x.dtype:
        raise _invalid(f"unpermutedTokensGrad is {grad.dtype.name}, permutedTokens "
                       f"{x.dtype.name}: they must have one dtype")
    if grad.shape[1] != x.shape[1]:
        raise _invalid(f"unpermutedTokensGrad's hidden size {grad.shape[1]} differs from "
                       f"permutedTokens' {x.shape[1]}")
    top_k = 1
    if probs is not None:
        _two_d("probsOptional", probs, "tokens, topK")
        top_k = probs.shape[1]
        if not 1 <= top_k <= MAX_TOPK:
            raise _invalid(f"topK (probsOptional's dim 1) = {top_k}: allowed 1 to {MAX_TOPK}")
        if probs.shape[0] != grad.shape[0]:
            raise _invalid(f"probsOptional has {probs.shape[0]} rows; unpermutedTokensGrad "
                           f"has {grad.shape[0]} tokens")
    if indices.size != grad.shape[0] * top_k:
        raise _invalid(f"sortedIndices has {indices.size} elements; tokens x topK = "
                       f"{grad.shape[0]} x {top_k} = {grad.shape[0] * top_k} are needed")
    if 0 in (grad.shape[0], x.shape[0], x.shape[1]):
        raise _invalid(f"empty tensors (tokens {grad.shape[0]}, numOutTokens {x.shape[0]}, "
                       f"hidden {x.shape[1]}): CANN's tiling refuses a zero dimension")
    return top_k


def _check_no_repeats(indices, rows: int) -> None:
    kept = indices[indices < rows]
    values, counts = np.unique(kept, return_counts=True)
    if (counts > 1).any():
        v = int(values[np.argmax(counts > 1)])
        where = np.flatnonzero(indices == v)[:2].tolist()
        raise _invalid(f"sortedIndices[{where[0]}] and sortedIndices[{where[1]}] are both {v}: "
                       f"each kept row of permutedTokensGradOut has one writer (sortedIndices "
                       "is a permutation, as MoeTokenPermute makes it)")


def check_moe_token_unpermute_grad(chip, permuted_tokens, unpermuted_tokens_grad,
                                   sorted_indices, probs, padded_mode):
    """The documented rules; returns (permutedTokens, grad, indices, probs or None, topK)."""
    require(OP, permutedTokens=permuted_tokens, unpermutedTokensGrad=unpermuted_tokens_grad,
            sortedIndices=sorted_indices)
    check_modelled_product(OP, chip, ("atlas-a2",))
    x = as_array(OP, "permutedTokens", permuted_tokens)
    grad = as_array(OP, "unpermutedTokensGrad", unpermuted_tokens_grad)
    indices = as_array(OP, "sortedIndices", sorted_indices)
    check_dtype(OP, "permutedTokens", x, DTYPES, chip)
    check_dtype(OP, "unpermutedTokensGrad", grad, DTYPES, chip)
    check_dtype(OP, "sortedIndices", indices, INDEX_DTYPES, chip)
    _two_d("permutedTokens", x, "numOutTokens, hidden")
    _two_d("unpermutedTokensGrad", grad, "tokens, hidden")
    if indices.ndim != 1:
        raise _invalid(f"sortedIndices has {indices.ndim} dimensions {tuple(indices.shape)}; "
                       "it must be 1-D (tokens * topK)")
    if probs is not None:
        probs = as_array(OP, "probsOptional", probs)
        check_dtype(OP, "probsOptional", probs, DTYPES, chip)
    top_k = _check_shapes(x, grad, indices, probs)
    if not isinstance(padded_mode, bool | np.bool_) or padded_mode:
        raise _invalid(f"paddedMode = {padded_mode!r}: only False is supported")
    check_indices(OP, indices, x.shape[0])
    _check_no_repeats(indices, x.shape[0])
    return x, grad, indices, probs, top_k


def moe_token_unpermute_grad(permuted_tokens, unpermuted_tokens_grad, sorted_indices,
                             probs=None, *, padded_mode=False, chip="atlas-a2", tiling=None,
                             mode="timed", numerics=True, trace=True, sanitize=True,
                             jitter=None):
    """Run aclnnMoeTokenUnpermuteGrad; outputs ``permutedTokensGradOut`` (numOutTokens, hidden)
    and ``probsGradOut`` (tokens, topK; None without probs)."""
    chip = resolve_chip(chip)
    x, grad, indices, probs, top_k = check_moe_token_unpermute_grad(
        chip, permuted_tokens, unpermuted_tokens_grad, sorted_indices, probs, padded_mode)
    if mode not in MODES:
        raise NpusimError(f"{OP}: mode {mode!r}: allowed {', '.join(MODES)}")
    if numerics is False or numerics is np.False_:
        raise NumericsRequiredError(f"{OP}: numerics=False is not possible: the scalar reads "
                                    "each sortedIndices value to choose the rows to write, "
                                    "so the control flow follows the data")
    rows, hidden = x.shape
    t = moe_token_unpermute_grad_tiling(
        chip, tokens=grad.shape[0], top_k=top_k, hidden=hidden, num_out_tokens=rows,
        item=x.itemsize, probs_item=None if probs is None else probs.itemsize, overrides=tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    args = dict(grad=to_gm(run, "unpermutedTokensGrad", grad),
                indices=to_gm(run, "sortedIndices", indices),
                out=run.gm.tensor("permutedTokensGradOut", x.dtype, rows * hidden), tiling=t)
    outputs = {"permutedTokensGradOut": (args["out"], (rows, hidden)), "probsGradOut": None}
    kernel = UnpermuteGradProbNoneKernel
    if probs is not None:
        kernel = UnpermuteGradProbsKernel
        args.update(permuted=to_gm(run, "permutedTokens", x),
                    probs=to_gm(run, "probsOptional", probs),
                    probs_out=run.gm.tensor("probsGradOut", probs.dtype, probs.size))
        outputs["probsGradOut"] = (args["probs_out"], probs.shape)
    run.launch(kernel, block_dim=t.block_dim, name="MoeTokenUnpermuteGrad", args=args)
    return run.result(outputs, tiling=t)
