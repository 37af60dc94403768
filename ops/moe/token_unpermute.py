"""aclnnMoeTokenUnpermute: each token's topK expert rows gathered back, weighted by probs, summed.

CANN ``moe/moe_token_unpermute`` (kernels.md §5(a)): out[t] = sum over k of probs[t, k] x
permutedTokens[sortedIndices[t x topK + k]], in fp32, cast to permutedTokens' dtype with round to
nearest even; a copy whose index is at or beyond the rows of permutedTokens (numOutTokens, the
forward dropped it) or whose prob is 0 is skipped, and a token whose first copy is skipped
starts from zero. Without probs topK is 1: out[i] = permutedTokens[sortedIndices[i]] (zero when
dropped). probs may have another float dtype than the tokens (the tiling key's mixed bits).

The kernel is the MoeTokenPermuteGrad kernel (``permute_grad_kernel.py``; with probs,
``unpermute_kernel.py``) and its tiling the same host code (``permute_grad_tiling.py``: probs
take UB beside the indices). Atlas A2 (CANN also builds it for the 310P, whose kernel variant
npusim does not model).

Kernels: [Contiguous per strided input], MoeTokenUnpermute (none when tokens or hidden is 0).
Not modelled: paddedMode=true and restoreShape (refused / not taken, as CANN supports neither),
the system workspace.
"""

import numpy as np

from npusim.engine.launch import MODES
from npusim.engine.sequence import OpRun
from npusim.errors import ACLNN_ERR_PARAM_INVALID, NpusimError, NumericsRequiredError, ParamError
from npusim.ops.common import as_array, check_dtype, check_modelled_product, require, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.moe.permute_grad_kernel import MoeTokenPermuteGradKernel
from npusim.ops.moe.permute_grad_tiling import Problem, moe_token_permute_grad_tiling
from npusim.ops.moe.unpermute_kernel import MoeTokenUnpermuteKernel

__all__ = ["OP", "check_moe_token_unpermute", "moe_token_unpermute"]

OP = "aclnnMoeTokenUnpermute"
FLOATS = ("bfloat16", "float16", "float32")
DTYPES = {"atlas-a2": FLOATS}
INDEX_DTYPES = {"atlas-a2": ("int32",)}
MAX_TOPK = 512


def _invalid(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def check_indices(op: str, indices, rows: int) -> None:
    """sortedIndices >= 0 (an index >= ``rows`` is a dropped copy)."""
    negative = np.flatnonzero(indices < 0)
    if negative.size:
        i = int(negative[0])
        raise ParamError(f"{op}: sortedIndices[{i}] = {int(indices[i])}: indices must be >= 0 "
                         f"(an index >= the {rows} rows of permutedTokens is a dropped copy); "
                         f"{negative.size} are negative", code=ACLNN_ERR_PARAM_INVALID)


def check_moe_token_unpermute(chip, permuted_tokens, sorted_indices, probs, padded_mode):
    """The documented rules; returns (tokens, indices, probs or None, topK)."""
    require(OP, permutedTokens=permuted_tokens, sortedIndices=sorted_indices)
    check_modelled_product(OP, chip, ("atlas-a2",), ("atlas-inference",))
    x = as_array(OP, "permutedTokens", permuted_tokens)
    indices = as_array(OP, "sortedIndices", sorted_indices)
    check_dtype(OP, "permutedTokens", x, DTYPES, chip)
    check_dtype(OP, "sortedIndices", indices, INDEX_DTYPES, chip)
    if x.ndim != 2:
        raise _invalid(f"permutedTokens has {x.ndim} dimensions {tuple(x.shape)}; it must be "
                       "2-D (numOutTokens, hidden)")
    if indices.ndim != 1:
        raise _invalid(f"sortedIndices has {indices.ndim} dimensions {tuple(indices.shape)}; "
                       "it must be 1-D (tokens * topK)")
    top_k = 1
    if probs is not None:
        probs = as_array(OP, "probsOptional", probs)
        check_dtype(OP, "probsOptional", probs, DTYPES, chip)
        if probs.ndim != 2:
            raise _invalid(f"probsOptional has {probs.ndim} dimensions {tuple(probs.shape)}; "
                           "it must be 2-D (tokens, topK)")
        top_k = probs.shape[1]
        if not 1 <= top_k <= MAX_TOPK:
            raise _invalid(f"topK (probsOptional's dim 1) = {top_k}: allowed 1 to {MAX_TOPK}")
        if probs.size != indices.size:
            raise _invalid(f"sortedIndices has {indices.size} elements; probsOptional "
                           f"{tuple(probs.shape)} needs tokens x topK = {probs.size}")
    if not isinstance(padded_mode, bool | np.bool_) or padded_mode:
        raise _invalid(f"paddedMode = {padded_mode!r}: only False is supported")
    check_indices(OP, indices, x.shape[0])
    return x, indices, probs, top_k


def moe_token_unpermute(permuted_tokens, sorted_indices, probs=None, *, padded_mode=False,
                        chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
                        sanitize=True, jitter=None):
    """Run aclnnMoeTokenUnpermute; ``outputs["unpermutedTokens"]`` is (tokens, hidden)."""
    chip = resolve_chip(chip)
    x, indices, probs, top_k = check_moe_token_unpermute(chip, permuted_tokens, sorted_indices,
                                                         probs, padded_mode)
    if mode not in MODES:
        raise NpusimError(f"{OP}: mode {mode!r}: allowed {', '.join(MODES)}")
    if numerics is False or numerics is np.False_:
        raise NumericsRequiredError(f"{OP}: numerics=False is not possible: the scalar reads "
                                    "each sortedIndices value to choose the rows to gather, "
                                    "so the control flow follows the data")
    tokens, hidden = indices.size // top_k, x.shape[1]
    problem = Problem(tokens=tokens, top_k=top_k, num_out_tokens=x.shape[0], hidden=hidden,
                      item=x.itemsize, probs_item=0 if probs is None else probs.itemsize, op=OP)
    t = moe_token_permute_grad_tiling(chip, problem, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    args = dict(grad=to_gm(run, "permutedTokens", x), indices=to_gm(run, "sortedIndices", indices),
                out=run.gm.tensor("unpermutedTokens", x.dtype, tokens * hidden), tiling=t)
    kernel = MoeTokenPermuteGradKernel
    if probs is not None:
        kernel, args["probs"] = MoeTokenUnpermuteKernel, to_gm(run, "probsOptional", probs)
    if tokens and hidden:
        run.launch(kernel, block_dim=t.block_dim, name="MoeTokenUnpermute", args=args)
    return run.result({"unpermutedTokens": (args["out"], (tokens, hidden))}, tiling=t)
