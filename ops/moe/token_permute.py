"""aclnnMoeTokenPermute: each token copied to the rows of its topK experts, grouped by expert.

kernels.md §5(a), CANN ``moe/moe_token_permute`` (paddedMode=false): with the indices flattened
(slot j = t * topK + k holds token t's k-th expert), sortedIndicesFirst = stable argsort of the
experts, sortedIndicesOut = argsort(sortedIndicesFirst) (the row each slot's copy lands in), and
permuteTokensOut[sortedIndicesOut[j]] = tokens[j // topK] for the rows below numOutTokens.
numOutTokens <= 0 counts from the end (numOutTokens + tokens x topK), clamped to 0 ..
tokens x topK; 0 keeps every copy. Atlas A2 only (CANN builds it for 910B and 910_93).

Kernels (``stats["kernels"]``, launch order): [Contiguous per strided input], [Cast (int64
indices to int32)], Sort (the experts: sortedIndicesFirst), Sort (sortedIndicesFirst:
sortedIndicesOut), MoeTokenPermute (the index copy, ``ops/moe/index_copy_kernel.py``). A Sort
of more keys than one UB holds is chunk sorts and merge passes (``ops/common/sort.py``).

Modelled beyond CANN's kernel: the sorts as separate launches of npusim's shared Sort (CANN runs
them as phases of its one kernel, its own VBS / VMS / SortOut sorts, reading int64 indices
directly). Not modelled: paddedMode=true (refused, as CANN refuses it), the workspace.
"""

import numpy as np

from npusim.engine.launch import MODES
from npusim.engine.sequence import OpRun
from npusim.errors import ACLNN_ERR_PARAM_INVALID, NpusimError, NumericsRequiredError, ParamError
from npusim.ops.common import as_array, check_dtype, check_modelled_product, require, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.fill_cast import launch_cast
from npusim.ops.common.sort import sort_keys
from npusim.ops.moe.index_copy_kernel import MoeIndexCopyKernel
from npusim.ops.moe.permute_tiling import (
    OP,
    MoeTokenPermuteTiling,
    Problem,
    moe_token_permute_tiling,
)

__all__ = ["OP", "MoeTokenPermuteTiling", "check_moe_token_permute", "moe_token_permute",
           "moe_token_permute_tiling"]

PRODUCTS = ("atlas-a2",)
DTYPES = {"atlas-a2": ("bfloat16", "float16", "float32", "int8")}
INDEX_DTYPES = {"atlas-a2": ("int32", "int64")}
MAX_TOPK = 512
SORT_LIMIT = 16777215     # indices: fewer elements than this, values below it (the sort is fp32)


def _invalid(message: str) -> ParamError:
    return ParamError(f"{OP}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def _check_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise _invalid(f"{name} = {value!r}: an integer is required (int64; <= 0 counts from "
                       "the end, 0 keeps every copy)")
    return int(value)


def out_tokens(num_out_tokens: int, total: int) -> int:
    """numOutTokens as the tiling and InferShape read it."""
    rows = num_out_tokens + total if num_out_tokens <= 0 else num_out_tokens
    return max(min(rows, total), 0)


def check_moe_token_permute(chip, tokens, indices, num_out_tokens, padded_mode):
    """The documented rules; returns (tokens, indices, top_k, rows of permuteTokensOut)."""
    require(OP, tokens=tokens, indices=indices)
    check_modelled_product(OP, chip, PRODUCTS)
    tokens, indices = as_array(OP, "tokens", tokens), as_array(OP, "indices", indices)
    check_dtype(OP, "tokens", tokens, DTYPES, chip)
    check_dtype(OP, "indices", indices, INDEX_DTYPES, chip)
    if tokens.ndim < 2:
        raise _invalid(f"tokens has {tokens.ndim} dimensions {tuple(tokens.shape)}; it must "
                       "have at least 2 (tokens, hidden...)")
    if indices.ndim not in (1, 2):
        raise _invalid(f"indices has {indices.ndim} dimensions {tuple(indices.shape)}; it must "
                       "be 1-D (tokens) or 2-D (tokens, topK)")
    if indices.shape[0] != tokens.shape[0]:
        raise _invalid(f"indices' dim 0 ({indices.shape[0]}) must equal tokens' dim 0 "
                       f"({tokens.shape[0]})")
    top_k = 1 if indices.ndim == 1 else indices.shape[1]
    if not 1 <= top_k <= MAX_TOPK:
        raise _invalid(f"topK (indices' dim 1) = {top_k}: allowed 1 to {MAX_TOPK}")
    if indices.size >= SORT_LIMIT:
        raise _invalid(f"indices has {indices.size} elements; fewer than {SORT_LIMIT} are "
                       "allowed (the sort compares them as fp32)")
    bad = np.flatnonzero((indices.reshape(-1) < 0) | (indices.reshape(-1) >= SORT_LIMIT))
    if bad.size:
        i = int(bad[0])
        raise _invalid(f"indices element {i} = {int(indices.reshape(-1)[i])}: expert indices "
                       f"must be 0 to {SORT_LIMIT - 1}; {bad.size} are outside")
    rows = _check_int("numOutTokens", num_out_tokens)
    if not isinstance(padded_mode, bool | np.bool_) or padded_mode:
        raise _invalid(f"paddedMode = {padded_mode!r}: only False is supported")
    return tokens, indices, top_k, out_tokens(rows, indices.size)


def moe_token_permute(tokens, indices, *, num_out_tokens=0, padded_mode=False, chip="atlas-a2",
                      tiling=None, mode="timed", numerics=True, trace=True, sanitize=True,
                      jitter=None):
    """Run aclnnMoeTokenPermute; outputs ``permuteTokensOut`` (numOutTokens, hidden...) and
    ``sortedIndicesOut`` (tokens x topK, int32)."""
    chip = resolve_chip(chip)
    tokens, indices, top_k, rows = check_moe_token_permute(chip, tokens, indices,
                                                           num_out_tokens, padded_mode)
    if mode not in MODES:
        raise NpusimError(f"{OP}: mode {mode!r}: allowed {', '.join(MODES)}")
    if numerics is False or numerics is np.False_:
        raise NumericsRequiredError(f"{OP}: numerics=False is not possible: the scalar reads "
                                    "each sortedIndicesOut value to choose the row to write, "
                                    "so the control flow follows the data")
    n, cols = tokens.shape[0], int(np.prod(tokens.shape[1:]))
    total = n * top_k
    t = moe_token_permute_tiling(chip, Problem(tokens=n, top_k=top_k, cols=cols,
                                               num_out_tokens=rows, item=tokens.itemsize), tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    tokens_gm, keys = to_gm(run, "tokens", tokens), to_gm(run, "indices", indices)
    if indices.dtype != np.int32 and total:
        cast = run.gm.tensor("indices.int32", np.int32, total)
        launch_cast(run, keys, cast, total, "Cast")
        keys = cast
    out = run.gm.tensor("permuteTokensOut", tokens.dtype, rows * cols)
    ranks = run.gm.tensor("sortedIndicesOut", np.int32, total)
    if total:
        _sort_twice(run, t, keys, ranks, total)
    if n and cols and rows:
        run.launch(MoeIndexCopyKernel, block_dim=t.block_dim, name="MoeTokenPermute",
                   args=dict(tokens=tokens_gm, indices=ranks, out=out, tiling=t))
    return run.result({"permuteTokensOut": (out, (rows, *tokens.shape[1:])),
                       "sortedIndicesOut": (ranks, (total,))}, tiling=t)


def _sort_twice(run, t, keys, ranks, total: int) -> None:
    """sortedIndicesFirst = argsort(experts), then sortedIndicesOut = argsort(that)."""
    def scratch(name):
        return run.gm.tensor(name, np.int32, total)
    first, experts, order = scratch("sortedIndicesFirst"), scratch("sortedExperts"), \
        scratch("sortedOrder")
    sort_keys(run, keys, experts, first, total, chunk=t.sort_chunk, window=t.merge_window)
    sort_keys(run, first, order, ranks, total, chunk=t.sort_chunk, window=t.merge_window)
