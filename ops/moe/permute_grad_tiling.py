"""Host tiling of MoeTokenPermuteGrad: CANN's MoeTokenUnpermute tiling, reused (kernels.md §5(b)).

The output tokens are split evenly over the AIV cores (the first ``tokens_core_remain`` cores take
one more); a row of ``hidden_size`` elements is moved in chunks of ``hidden_splited_length`` that
fit UB next to their queues and fp32 work rows; the sortedIndices of a core are read into UB in
batches of ``tokens_splited_length`` tokens. The input-row queue is ``buffer_num`` deep: the
largest of 4, 3, 2 whose UB need still fits the chunk (``SetBufferNum`` of the host code).

UB per element of a chunk (``ComputeUnitHSpace``): ``dtype * (buffer_num + 1)`` for the input-row
queue and the output queue, plus ``4 * 2`` for the two fp32 work rows of a 16-bit dtype. The
largest chunk for a queue depth (``ComputeMaxHiddenSize``) keeps ``RESERVE_BYTES`` for the
indices and is a multiple of 512 elements; a chunk's buffers are sized for its length rounded up
to 512 elements.

Overrides (``tiling={...}``): ``block_dim``, ``hidden_splited_length``, ``buffer_num`` and
``tokens_splited_length``. The fields a user does not set are derived from those they set (a
``buffer_num`` alone picks the largest chunk that fits at that depth; a chunk length alone picks
the deepest queue it fits), then everything is validated. The other fields follow from the shape.
"""

from dataclasses import dataclass

from npusim.errors import TilingError
from npusim.ops.common import override, overrides_of, round_up

OP = "aclnnMoeTokenPermuteGrad"
RESERVE_BYTES = 5120      # UB kept for sortedIndices: topK 512 needs 2 KB a token (reserveSpace)
ALIGN_ELEMENTS = 512      # chunk buffers are sized in 512-element units (ALIGN_512)
TAIL_BYTES = 256          # ALIGN_256 kept off the indices' share (and temp_buffer0's extra 256)
QUE_NUM = 2               # input-row queue + output queue, one buffer each at depth 1
CAST_NUM = 2              # fp32 work rows of a 16-bit dtype (temp_buffer0, temp_buffer1)
FLOAT_BYTES = 4           # an fp32 work element
INDEX_BYTES = 4           # an int32 sortedIndices element
MIN_BUFFER_NUM, MAX_BUFFER_NUM = 2, 4   # the depths the host code chooses from
USER_FIELDS = ("block_dim", "hidden_splited_length", "buffer_num", "tokens_splited_length")


@dataclass(frozen=True, kw_only=True)
class MoeTokenPermuteGradTiling:
    """MoeTokenPermuteGradTilingData plus the launch's block_dim; names as in the CANN source."""

    hidden_size: int             # H: elements of a row of permutedOutputGrad and out
    top_k: int                   # numTopk: copies of each token
    num_out_tokens: int          # rows of permutedOutputGrad; an index >= it is a dropped copy
    block_dim: int               # AIV cores used: min(AIV cores, tokens) (usedCoreNum)
    hidden_splited_length: int   # elements of a row moved and summed per chunk
    hidden_splited_num: int      # whole chunks per row
    hidden_splited_remain: int   # elements of the last, shorter chunk (0: none)
    tokens_core_length: int      # output tokens per core ...
    tokens_core_remain: int      # ... and the first this many cores take one more
    tokens_splited_length: int   # tokens whose indices one UB batch holds
    tokens_splited_num: int      # whole batches of a core with tokens_core_length tokens
    tokens_splited_remain: int   # tokens of its last batch (a core with one token more puts the
    #                              extra token here, as the kernel does)
    buffer_num: int              # input-row queue depth: gathers run this far ahead of the adds

    @property
    def chunk_buffer_elements(self) -> int:
        """Elements a chunk's queue buffers and work rows are sized for."""
        return round_up(self.hidden_splited_length, ALIGN_ELEMENTS)


def unit_bytes(item: int, buffer_num: int) -> int:
    """UB bytes per element of a chunk (ComputeUnitHSpace)."""
    cast_rows = 0 if item == FLOAT_BYTES else CAST_NUM
    return item * (QUE_NUM + buffer_num - 1) + FLOAT_BYTES * cast_rows


def max_chunk(chip, item: int, buffer_num: int) -> int:
    """The longest chunk (elements) that fits UB at this queue depth (ComputeMaxHiddenSize)."""
    fit = (chip.ub_bytes - RESERVE_BYTES) // unit_bytes(item, buffer_num)
    return round_up(fit - ALIGN_ELEMENTS, ALIGN_ELEMENTS)


def index_room(chip, item: int, chunk: int, buffer_num: int) -> int:
    """UB bytes left for the indices of a batch (ComputeRemainMemerySpace)."""
    return (chip.ub_bytes - round_up(chunk, ALIGN_ELEMENTS) * unit_bytes(item, buffer_num)
            - TAIL_BYTES)


def deepest_queue(chip, item: int, chunk: int) -> int:
    """SetBufferNum: the deepest queue, 4 down to 2, whose largest chunk still holds ``chunk``."""
    depth = MAX_BUFFER_NUM
    while depth > MIN_BUFFER_NUM and chunk > max_chunk(chip, item, depth):
        depth -= 1
    return depth


@dataclass(frozen=True)
class Problem:
    """What the tiling depends on: tokens, topK, rows of permutedOutputGrad, H, dtype bytes."""

    tokens: int
    top_k: int
    num_out_tokens: int
    hidden: int
    item: int
    probs_item: int = 0      # bytes of a probs element (MoeTokenUnpermute with probs; 0: none)
    op: str = OP             # the aclnn name errors carry (the Unpermute tiling is the same code)

    @property
    def token_bytes(self) -> int:
        """UB bytes of a token's sortedIndices and probs (TilingToken's unitTokenSpace x topK):
        a 16-bit probs is cast into an fp32 copy beside it."""
        unit = INDEX_BYTES + self.probs_item
        if self.probs_item and self.probs_item != FLOAT_BYTES:
            unit += FLOAT_BYTES
        return self.top_k * unit


def moe_token_permute_grad_tiling(chip, problem: Problem, overrides: dict | None = None):
    """The host tiling for ``problem`` on ``chip``, with the user's ``overrides`` (derive, then
    validate: a TilingError is only ever about a field the user set)."""
    overrides = overrides_of(overrides, problem.op)
    default = _derive(chip, problem, {})
    if not overrides:
        return default
    checked = override(default, overrides, problem.op)      # unknown names and wrong kinds
    derived = sorted(set(overrides) - set(USER_FIELDS))
    if derived:
        raise TilingError(f"{problem.op}: tiling {', '.join(derived)} follows from the shape "
                          f"and the other fields; override {', '.join(USER_FIELDS)}")
    fixed = {key: getattr(checked, key) for key in overrides}
    _check_ranges(chip, problem, fixed)
    return _derive(chip, problem, fixed)


def _derive(chip, p: Problem, fixed: dict) -> MoeTokenPermuteGradTiling:
    cores = fixed.get("block_dim") or max(1, min(chip.vector_core_count, p.tokens))
    core_len, core_rem = divmod(p.tokens, cores)
    chunk, depth = _chunk_and_depth(chip, p, fixed)
    h_num, h_rem = (1, 0) if chunk >= p.hidden else divmod(p.hidden, chunk)
    room = index_room(chip, p.item, chunk, depth)
    per_token = p.token_bytes
    if "tokens_splited_length" in fixed:
        batch = fixed["tokens_splited_length"]
        if batch * per_token > room:
            raise TilingError(
                f"{p.op}: tokens_splited_length = {batch} needs {batch * per_token} bytes of UB "
                f"for sortedIndices ({per_token} bytes a token); {room} are left beside "
                f"chunks of {chunk} elements: at most {room // per_token} tokens fit")
    else:
        batch = max(1, core_len if core_len * per_token <= room else room // per_token)
    t_num, t_rem = divmod(core_len, batch)
    return MoeTokenPermuteGradTiling(
        hidden_size=p.hidden, top_k=p.top_k, num_out_tokens=p.num_out_tokens, block_dim=cores,
        hidden_splited_length=chunk, hidden_splited_num=h_num, hidden_splited_remain=h_rem,
        tokens_core_length=core_len, tokens_core_remain=core_rem, tokens_splited_length=batch,
        tokens_splited_num=t_num, tokens_splited_remain=t_rem, buffer_num=depth)


def _chunk_and_depth(chip, p: Problem, fixed: dict) -> tuple[int, int]:
    """TilingHiddenSize and SetBufferNum, from whichever of the two the user fixed."""
    whole = max(p.hidden, 1)
    if "hidden_splited_length" in fixed:
        chunk = fixed["hidden_splited_length"]
        depth = fixed.get("buffer_num") or deepest_queue(chip, p.item, chunk)
        fits = max_chunk(chip, p.item, depth)
        if round_up(chunk, ALIGN_ELEMENTS) > fits:
            need = round_up(chunk, ALIGN_ELEMENTS) * unit_bytes(p.item, depth) + RESERVE_BYTES
            raise TilingError(
                f"{p.op}: hidden_splited_length = {chunk} with buffer_num = {depth} needs {need} "
                f"bytes of UB (with {RESERVE_BYTES} kept for sortedIndices); {chip.name} has "
                f"{chip.ub_bytes}: at most {fits} elements fit")
        return chunk, depth
    depth = fixed.get("buffer_num") or MIN_BUFFER_NUM
    fits = max_chunk(chip, p.item, depth)
    chunk = whole if round_up(whole, ALIGN_ELEMENTS) <= fits else fits
    if "buffer_num" not in fixed:
        depth = deepest_queue(chip, p.item, chunk)
    return chunk, depth


def _check_ranges(chip, p: Problem, fixed: dict) -> None:
    """Each field the user set, on its own: the range the shape and the chip allow."""
    cores = min(chip.vector_core_count, max(p.tokens, 1))
    if "block_dim" in fixed and not 1 <= fixed["block_dim"] <= cores:
        raise TilingError(f"{p.op}: block_dim = {fixed['block_dim']}: {chip.name} has "
                          f"{chip.vector_core_count} AIV cores and the op {p.tokens} tokens; "
                          f"allowed 1 to {cores}")
    if "buffer_num" in fixed and not 1 <= fixed["buffer_num"] <= MAX_BUFFER_NUM:
        raise TilingError(f"{p.op}: buffer_num = {fixed['buffer_num']}: allowed 1 to "
                          f"{MAX_BUFFER_NUM} (CANN chooses 2 to 4)")
    if "hidden_splited_length" in fixed and not 1 <= fixed["hidden_splited_length"] \
            <= max(p.hidden, 1):
        raise TilingError(f"{p.op}: hidden_splited_length = {fixed['hidden_splited_length']}: "
                          f"allowed 1 to the hidden size {max(p.hidden, 1)}")
    if "tokens_splited_length" in fixed:
        core_len, core_rem = divmod(p.tokens, fixed.get("block_dim") or
                                    max(1, min(chip.vector_core_count, p.tokens)))
        most = max(core_len + (1 if core_rem else 0), 1)
        if not 1 <= fixed["tokens_splited_length"] <= most:
            raise TilingError(f"{p.op}: tokens_splited_length = "
                              f"{fixed['tokens_splited_length']}: a core has at most {most} "
                              f"tokens; allowed 1 to {most}")
