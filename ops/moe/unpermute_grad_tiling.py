"""Host tiling of MoeTokenUnpermuteGrad (CANN's ``moe_token_unpermute_grad_tiling.cpp``).

Between cores: all AIV cores are launched; the first ``former_core_num`` = tokens mod cores
take ``token_num_each_core`` = floor + 1 tokens, the rest ``token_num_tail_core`` = floor
(``row_id_map_*`` = those x topK sortedIndices).

Within a core, without probs (topK 1): ``indices_reserve_num`` rows a loop, as many as two
buffers of rows of ``hidden_size_align`` (hidden rounded up to 32 bytes) and their indices fit
UB (floored to 8 indices, at least 8); when even that is too wide, the row is cut to what fits
(``hidden_size_align`` smaller, ``hidden_size_loop_times`` chunks, ``hidden_size_tail`` last).
With probs: ``indices_reserve_num`` = min(a core's tokens x topK, 256 floored to topK) (topK
when topK > 256) indices a loop; permuted rows are gathered ``input_reserve_num`` at a time, the
largest divisor of topK whose two buffers fit UB beside the fp32 work rows (hidden rounded up to
512 bytes); when not even one fits, the row is cut into chunks of what fits (a multiple of 512
bytes) and rows are gathered one at a time.

Overrides: none (CANN's tiling has no free parameter; ``tiling={}`` is accepted).
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, overrides_of, round_up

OP = "aclnnMoeTokenUnpermuteGrad"
BUFFER_NUM = 2
INDICES_RESERVE_MAX_NUM = 256
INDEX_BYTES = 4
FLOAT_BYTES = 4
RESERVE_BYTES = 256        # tmpBufferReserve


@dataclass(frozen=True, kw_only=True)
class MoeTokenUnpermuteGradTiling:
    """MoeTokenUnpermuteGradTilingData (names as in the CANN source, snake case)."""

    tokens_num: int
    top_k: int
    hidden_size: int
    num_out_tokens: int
    block_dim: int
    former_core_num: int
    token_num_each_core: int
    token_num_tail_core: int
    hidden_size_align: int        # elements of a row chunk (its UB stride)
    hidden_size_loop_times: int
    hidden_size_tail: int         # elements of the last chunk
    input_reserve_num: int        # permuted rows a gather holds
    indices_reserve_num: int      # indices a loop
    indices_reserve_num_align: int


def _prob_none(ub: int, item: int, hidden: int):
    align = round_up(hidden, 32 // item)
    rows = ub // (BUFFER_NUM * (align * item + INDEX_BYTES)) // 8 * 8
    rows = max(rows, 8)
    most = (ub - rows * BUFFER_NUM * INDEX_BYTES) // (BUFFER_NUM * item * rows)
    if most < align:
        align = most // (32 // item) * (32 // item)
    return align, rows, rows, rows


def _prob_not_none(ub: int, item: int, p_item: int, hidden: int, top_k: int, each: int):
    align = round_up(hidden, 512 // item)
    if top_k <= INDICES_RESERVE_MAX_NUM:
        indices = min(each * top_k, INDICES_RESERVE_MAX_NUM // top_k * top_k)
    else:
        indices = top_k
    indices_align = round_up(indices, 32 // p_item)
    fixed = BUFFER_NUM * p_item * indices_align * 2 + indices_align * FLOAT_BYTES * 3 + \
        RESERVE_BYTES
    most = (ub - fixed - (BUFFER_NUM * item * 2 + 3 * FLOAT_BYTES) * align) // \
        (BUFFER_NUM * item * align)
    if most >= 1:
        most = min(most, top_k)
        rows = next(d for d in range(most, 0, -1) if top_k % d == 0)
        return align, 1, hidden, rows, indices, indices_align
    chunk = (ub - fixed) // (3 * BUFFER_NUM * item + 3 * FLOAT_BYTES)
    chunk = chunk // (512 // item) * (512 // item)
    times = ceil_div(hidden, chunk)
    return chunk, times, hidden - (times - 1) * chunk, 1, indices, indices_align


def moe_token_unpermute_grad_tiling(chip, *, tokens: int, top_k: int, hidden: int,
                                    num_out_tokens: int, item: int, probs_item: int | None,
                                    overrides: dict | None = None):
    """The tiling for ``tokens`` x ``top_k`` copies of rows of ``hidden`` on ``chip``
    (``probs_item`` None: no probs)."""
    if overrides_of(overrides, OP):
        raise TilingError(f"{OP}: the tiling has no field to override (CANN derives every one "
                          f"from the shape); got {', '.join(sorted(overrides))}")
    cores = chip.vector_core_count
    tail, former = divmod(tokens, cores)
    each = tail + 1 if former else tail
    ub = chip.ub_bytes
    if probs_item is None:
        align, rows, indices, indices_align = _prob_none(ub, item, hidden)
        times = ceil_div(hidden, align)
        last = hidden - (times - 1) * align
    else:
        align, times, last, rows, indices, indices_align = _prob_not_none(
            ub, item, probs_item, hidden, top_k, each)
    return MoeTokenUnpermuteGradTiling(
        tokens_num=tokens, top_k=top_k, hidden_size=hidden, num_out_tokens=num_out_tokens,
        block_dim=cores, former_core_num=former, token_num_each_core=each,
        token_num_tail_core=tail, hidden_size_align=align, hidden_size_loop_times=times,
        hidden_size_tail=last, input_reserve_num=rows, indices_reserve_num=indices,
        indices_reserve_num_align=indices_align)
