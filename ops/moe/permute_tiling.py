"""Host tiling of MoeTokenPermute (CANN's ``moe_token_permute_tiling.cpp``, its index copy).

The index copy splits the tokens over all AIV cores (``realCoreNumAiv``): ``front_core_num``
cores take ``core_calc_num`` = ceil(tokens / cores) tokens, the others ``core_calc_tail`` =
floor. When two 32-byte-aligned token rows fit UB beside 2 KB of indices (``ubLeft``), a core
copies ``once_ub_token_nums`` rows at once (UB / (2 x row + 2 x topK x 4), at most 4095, the
DataCopyPad block count) into a 2-deep queue and reads the indices of ``once_indices_token_nums``
tokens per batch (what UB has left). Otherwise (split-D) a row moves in pieces of
``one_token_once_move`` elements (half of ``ubLeft`` floored to 512 bytes) and a batch holds the
indices of 512 // topK tokens.

The two sorts before it (sortedIndicesFirst = argsort of the flattened indices,
sortedIndicesOut = argsort of that) are npusim's shared Sort (``ops/common/sort.py``): up to
``sort_chunk`` keys on one core, more in chunks merged ``merge_window`` keys at a time. CANN's
own VBS / VMS / SortOut phases (one core up to 6080 keys at UB 192 KB, else up to 4^x cores
with 4-way merges) are not reproduced.

Overrides (``tiling={...}``): ``block_dim`` (cores for the index copy), ``once_ub_token_nums``
(rows per copy-in, normal mode), ``sort_chunk`` and ``merge_window``; the rest follows.
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up
from npusim.ops.common.sort import merge_window, sort_capacity

OP = "aclnnMoeTokenPermute"
MAX_INDICES_NUM = 512     # indices UB kept aside (MAX_INDICES_NUM x 4 bytes) and split-D batch
INDEX_BYTES = 4           # int32 sortedIndices
BUFFER_NUM = 2            # the row queue's depth
MAX_BLOCK_COUNT = 4095    # DataCopyPad's block count limit
DATA_MOVE_ALIGN = 512     # split-D pieces are whole 512-byte units
BLOCK_BYTES = 32
USER_FIELDS = ("block_dim", "once_ub_token_nums", "sort_chunk", "merge_window")


@dataclass(frozen=True, kw_only=True)
class MoeTokenPermuteTiling:
    """IndexCopyComputeTilingData (names as in the CANN source) and the sorts' sizes."""

    tokens: int                  # n: rows of tokens (indices' dim 0)
    top_k: int                   # indices' dim 1 (1 for 1-D indices)
    cols: int                    # elements of a token row
    num_out_tokens: int          # rows of permuteTokensOut; a copy ranked >= it is dropped
    block_dim: int               # cores of the index copy (needCoreNum)
    front_core_num: int          # cores taking core_calc_num tokens ...
    core_calc_num: int
    core_calc_tail: int          # ... the others this many
    split_d: bool                # a row does not fit twice in UB: moved in pieces
    once_ub_token_nums: int      # rows per copy-in (normal mode; 1 in split-D)
    once_indices_token_nums: int  # tokens whose indices one batch holds
    one_token_once_move: int     # elements per piece of a row (split-D; cols otherwise)
    token_ub: int                # bytes of one row-queue buffer
    indices_ub: int              # bytes of the indices buffer (CANN passes UpAlign(onceIndices,
    #                              32), a count of indices, as the bytes; its copy-in then writes
    #                              4 bytes an index on into UB the tiling left free. Here the
    #                              buffer is sized in bytes, so the copy stays inside it.)
    sort_chunk: int              # keys one UB sorts
    merge_window: int            # keys of each run a merge step holds


@dataclass(frozen=True)
class Problem:
    """What the tiling depends on."""

    tokens: int
    top_k: int
    cols: int
    num_out_tokens: int
    item: int


def moe_token_permute_tiling(chip, p: Problem, overrides: dict | None = None):
    """The host tiling for ``p`` on ``chip`` with the user's ``overrides``."""
    overrides = overrides_of(overrides, OP)
    default = _derive(chip, p, {})
    if not overrides:
        return default
    checked = override(default, overrides, OP)
    derived = sorted(set(overrides) - set(USER_FIELDS))
    if derived:
        raise TilingError(f"{OP}: tiling {', '.join(derived)} follows from the shape and the "
                          f"other fields; override {', '.join(USER_FIELDS)}")
    fixed = {key: getattr(checked, key) for key in overrides}
    _check(chip, p, default, fixed)
    return _derive(chip, p, fixed)


def _derive(chip, p: Problem, fixed: dict) -> MoeTokenPermuteTiling:
    cores = fixed.get("block_dim") or chip.vector_core_count
    front = p.tokens % cores or cores
    block_dim = front + (0 if p.tokens <= cores else cores - front)
    ub = chip.ub_bytes // BLOCK_BYTES * BLOCK_BYTES
    ub_left = ub - MAX_INDICES_NUM * INDEX_BYTES
    row = round_up(p.cols * p.item, BLOCK_BYTES)
    common = dict(tokens=p.tokens, top_k=p.top_k, cols=p.cols, num_out_tokens=p.num_out_tokens,
                  block_dim=max(block_dim, 1), front_core_num=front,
                  core_calc_num=ceil_div(p.tokens, cores), core_calc_tail=p.tokens // cores,
                  sort_chunk=fixed.get("sort_chunk") or sort_capacity(chip),
                  merge_window=fixed.get("merge_window") or merge_window(chip))
    if ub_left >= BUFFER_NUM * row:
        per_index = p.top_k * BUFFER_NUM * INDEX_BYTES
        rows = fixed.get("once_ub_token_nums") or \
            min(ub // (row * BUFFER_NUM + per_index), MAX_BLOCK_COUNT)
        left = ub - rows * row * BUFFER_NUM
        times = left // (rows * p.top_k * INDEX_BYTES)
        return MoeTokenPermuteTiling(
            **common, split_d=False, once_ub_token_nums=rows,
            once_indices_token_nums=times * rows, one_token_once_move=p.cols,
            token_ub=rows * row,
            indices_ub=round_up(times * rows * p.top_k * INDEX_BYTES, BLOCK_BYTES))
    piece = ub_left // BUFFER_NUM // DATA_MOVE_ALIGN * DATA_MOVE_ALIGN // p.item
    return MoeTokenPermuteTiling(
        **common, split_d=True, once_ub_token_nums=1,
        once_indices_token_nums=MAX_INDICES_NUM // p.top_k, one_token_once_move=piece,
        token_ub=piece * p.item, indices_ub=MAX_INDICES_NUM * INDEX_BYTES)


def _check(chip, p: Problem, default, fixed: dict) -> None:
    """Each field the user set: the range the shape and the chip allow."""
    cores = chip.vector_core_count
    if "block_dim" in fixed and not 1 <= fixed["block_dim"] <= cores:
        raise TilingError(f"{OP}: block_dim = {fixed['block_dim']}: {chip.name} has {cores} "
                          f"AIV cores; allowed 1 to {cores}")
    if "once_ub_token_nums" in fixed:
        if default.split_d:
            raise TilingError(f"{OP}: once_ub_token_nums = {fixed['once_ub_token_nums']}: rows "
                              f"of {p.cols} elements are moved in pieces (split-D); only 1 "
                              "row at a time")
        most = default.once_ub_token_nums
        if not 1 <= fixed["once_ub_token_nums"] <= most:
            raise TilingError(f"{OP}: once_ub_token_nums = {fixed['once_ub_token_nums']}: "
                              f"allowed 1 to {most} (two buffers of rows of {p.cols} elements "
                              f"beside their indices fit UB)")
    most = sort_capacity(chip)
    if "sort_chunk" in fixed and (not 32 <= fixed["sort_chunk"] <= most
                                  or fixed["sort_chunk"] % 32):
        raise TilingError(f"{OP}: tiling sort_chunk = {fixed['sort_chunk']}: a multiple of 32 "
                          f"from 32 to {most} (keys one UB sorts)")
    most = merge_window(chip)
    if "merge_window" in fixed and (not 8 <= fixed["merge_window"] <= most
                                    or fixed["merge_window"] % 8):
        raise TilingError(f"{OP}: tiling merge_window = {fixed['merge_window']}: a multiple of "
                          f"8 from 8 to {most}")
