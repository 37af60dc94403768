"""CrossEntropyLossGrad's host tiling (kernels.md §3(b-c)): rows over the AIV cores, per-core row
metadata in UB, column chunks sized from the UB left and aligned down to 512 bytes.

Rows are split front/tail: the first ``front_core_num`` cores take ``front_row_num`` =
ceil(N / cores) rows, the others ``tail_row_num`` = floor(N / cores). Each core keeps the
metadata of its rows in UB (target int64, target as fp32, an fp32 scratch row, the compare bits,
mask x weight, nll, the nll broadcast blocks, plus the target weight with a weight and gradLoss
with reduction none). CANN keeps all of a core's rows resident and has no guard when they do not
fit; npusim's ``row_batch`` caps the resident rows (by default at half of UB) and walks a core's
rows in batches, so every shape the argument rules accept runs. The column chunk takes the UB
left: in and out buffers of the input dtype (``buffer_num`` each; CANN uses 1) and one fp32 work
buffer, i.e. 8 bytes per element for fp16/bf16 and 12 for fp32 with one buffer, rounded down to
512 bytes of the input dtype; when that leaves no whole aligned chunk (C below 512 bytes) the
whole row is the tail.

``cann_col_chunk`` is CANN's own formula (CELossGradCoreSplitInfo), which reproduces kernels.md
§3(b)'s worked example (8192 x 32000 bf16 mean on 40 cores: chunk 23808, tail 8192). npusim's
default chunk is smaller by what its kernel keeps beside CANN's buffers: a fp32 scratch row, the nll
row, the nll broadcast blocks (32 bytes a row: ``ops/cross_entropy/kernel.py`` multiplies by nll
with Brcb + Mul where CANN reads it into a scalar register, as npusim binds scalar operands when a
kernel is recorded) and the mean's scalars; in the worked example that is 8704 bytes, 1088 elements,
so the chunk is 22784 and the tail 9216. CANN's chunk does not fit UB beside them.
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up
from npusim.ops.cross_entropy.args import OP

CHUNK_ALIGN_BYTES = 512   # column chunks are whole 512-byte pieces of logProb (alignColLoopNum)
ROW_LANES = 64            # row vectors span whole 256-byte repeats of fp32
BRCB_BLOCK_BYTES = 32     # one broadcast block of nll per row
ROW_META_SHARE = 2        # by default the row metadata takes at most 1/2 of UB
MEAN_SCALARS = 5          # acc, ReduceSum result, den, gradLoss, scale: one 32-byte block each
BRCB_REPEAT_BYTES = 256   # Brcb of the scale writes one repeat (8 blocks)
USER_FIELDS = ("block_dim", "row_batch", "col_chunk", "buffer_num")


@dataclass(frozen=True, kw_only=True)
class CrossEntropyLossGradTiling:
    """Host tiling of CrossEntropyLossGrad. Users may override ``block_dim``, ``row_batch``,
    ``col_chunk`` and ``buffer_num``; the other fields are derived from them and the shape."""

    rows: int              # N, rows of logProb (rowVal)
    cols: int              # C, classes per row (colVal)
    block_dim: int         # AIV cores used (usedCoreNum), min(N, cores) by default
    front_core_num: int    # the first cores, which take front_row_num rows (frontCoreNum)
    front_row_num: int     # rows per front core, ceil(N / block_dim) (frontRowNum)
    tail_row_num: int      # rows per other core, floor(N / block_dim) (tailRowNum)
    row_batch: int         # rows whose metadata is resident in UB at once (CANN: all of them)
    col_chunk: int         # elements per full column chunk, whole 512 bytes (alignColLoopNum);
    #                        0 when the whole row is the tail
    col_loop: int          # full chunks per row, C // col_chunk (colLoop)
    col_tail: int          # elements of the last, partial chunk, C % col_chunk (colLoopNumTail)
    buffer_num: int        # buffers of the in and out queues: 1 as CANN, 2 double buffering

    @property
    def chunk_buffer(self) -> int:
        """Elements each chunk buffer holds: the larger of a full chunk and the tail."""
        return max(self.col_chunk, self.col_tail)


def _a32(n: int) -> int:
    return round_up(n, 32)


def meta_bytes(rows: int, itemsize: int, weighted: bool, reduction: str, cores: int) -> int:
    """UB bytes of the metadata of ``rows`` rows (every buffer 32-byte aligned)."""
    lanes = round_up(rows, ROW_LANES)
    total = _a32(rows * 8) + 4 * _a32(lanes * 4) + _a32(lanes // 8) \
        + round_up(rows, 8) * BRCB_BLOCK_BYTES
    if weighted:
        total += _a32(lanes * 4)
    if reduction == "none":
        total += _a32(rows * itemsize) + _a32(lanes * 4)
    if reduction == "mean":
        total += _a32(round_up(cores, ROW_LANES) * 4) + MEAN_SCALARS * 32 + BRCB_REPEAT_BYTES
    return total


def chunk_bytes(elements: int, itemsize: int, buffer_num: int) -> int:
    """UB bytes of the column buffers: in and out queues and the fp32 work buffer."""
    return 2 * buffer_num * _a32(elements * itemsize) + _a32(elements * 4)


def _chunks(cols: int, chunk: int) -> dict:
    if chunk == 0:
        return dict(col_chunk=0, col_loop=0, col_tail=cols)
    return dict(col_chunk=chunk, col_loop=cols // chunk, col_tail=cols % chunk)


def _fit_chunk(ub: int, cols: int, item: int, bn: int, meta: int) -> int | None:
    """The largest aligned chunk that fits beside ``meta`` bytes of row metadata; 0 when C is
    below one aligned chunk (the whole row is the tail) and fits; None when nothing fits."""
    align = CHUNK_ALIGN_BYTES // item
    if cols < align:
        return 0 if meta + chunk_bytes(cols, item, bn) <= ub else None
    chunk = min(cols, max(ub - meta, 0) // (2 * bn * item + 4)) // align * align
    while chunk and meta + chunk_bytes(chunk, item, bn) > ub:
        chunk -= align
    return chunk or None


def _largest_batch(limit: int, budget: int, meta_of) -> int:
    """The most rows (<= limit) whose metadata fits in ``budget`` bytes; 0 when none."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if meta_of(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def cann_col_chunk(ub_bytes: int, rows: int, cols: int, itemsize: int, *, reduction: str,
                   weighted: bool, cores: int) -> int:
    """alignColLoopNum as CANN's host tiling computes it (ops-nn
    loss/cross_entropy_loss_grad/op_host/cross_entropy_loss_grad_tiling.cpp,
    CELossGradCoreSplitInfo): the UB left after the per-row buffers of frontRowNum rows, over
    12 (fp32) or 8 (fp16/bf16) bytes per element, aligned down to 512 bytes."""
    front = ceil_div(rows, min(rows, cores))
    taken = _a32(front * 8) + 2 * _a32(front * 4) + _a32(front)   # target, cast, ignore, mask
    if weighted:
        taken += _a32(front * 4)
    if reduction == "none":
        taken += _a32(front * itemsize) + (_a32(front * 4) if itemsize == 2 else 0)
    if reduction == "mean":
        taken += 32 + _a32(max(cores, front) * 4)                  # tBuf2, tBuf3
    per = 12 if itemsize == 4 else 8
    align = CHUNK_ALIGN_BYTES // itemsize
    return min((ub_bytes - taken) // per, cols) // align * align


def _split(rows: int, block_dim: int) -> dict:
    front_core_num = rows % block_dim or block_dim
    return dict(block_dim=block_dim, front_core_num=front_core_num,
                front_row_num=ceil_div(rows, block_dim), tail_row_num=rows // block_dim)


def cross_entropy_loss_grad_tiling(chip, rows: int, cols: int, dtype, *, reduction: str,
                                   weighted: bool, overrides: dict | None = None):
    """The tiling for logProb (rows, cols) of ``dtype``: the defaults, with ``overrides`` set
    first and every field they leave open derived from them."""
    user = dict(overrides_of(overrides, OP))
    base = _default_fields(chip, rows, cols)
    if user:
        probe = override(CrossEntropyLossGradTiling(**base), user, OP)   # names and types
        for key in set(user) - set(USER_FIELDS):
            raise TilingError(f"{OP}: tiling {key} is derived from the shape; override "
                              f"{', '.join(USER_FIELDS)}")
        user = {k: getattr(probe, k) for k in user}
    item = np.dtype(dtype).itemsize
    limit = max(min(rows, chip.vector_core_count), 1)
    block_dim = user.get("block_dim", limit)
    if not 1 <= block_dim <= limit:
        raise TilingError(f"{OP}: block_dim = {block_dim}: {chip.name} has "
                          f"{chip.vector_core_count} vector cores and logProb {rows} rows; "
                          f"allowed 1 to {limit}")
    bn = user.get("buffer_num", 1)
    if bn not in (1, 2):
        raise TilingError(f"{OP}: buffer_num = {bn}: allowed 1 or 2")
    split = _split(rows, block_dim)
    batch, chunk = _batch_and_chunk(chip, cols, item, bn, split, user,
                                    lambda r: meta_bytes(r, item, weighted, reduction, block_dim))
    return CrossEntropyLossGradTiling(rows=rows, cols=cols, row_batch=batch, buffer_num=bn,
                                      **split, **_chunks(cols, chunk))


def _default_fields(chip, rows, cols) -> dict:
    return dict(rows=rows, cols=cols, row_batch=1, buffer_num=1, **_split(rows, 1),
                **_chunks(cols, 0))


def _batch_and_chunk(chip, cols, item, bn, split, user, meta_of) -> tuple[int, int]:
    ub, front = chip.ub_bytes, max(split["front_row_num"], 1)
    align = CHUNK_ALIGN_BYTES // item
    smallest = min(cols, align)            # the least a chunk buffer can be
    batch = user.get("row_batch")
    if batch is not None and not 1 <= batch <= front:
        raise TilingError(f"{OP}: row_batch = {batch}: a core has at most {front} rows; "
                          f"allowed 1 to {front}")
    chunk = user.get("col_chunk")
    if chunk is not None:
        if chunk <= 0 or chunk % align:
            raise TilingError(f"{OP}: col_chunk = {chunk}: must be a positive multiple of "
                              f"{align} elements (512 bytes of logProb)")
        buf = max(chunk, cols % chunk)
        if batch is None:
            batch = _largest_batch(front, ub - chunk_bytes(buf, item, bn), meta_of)
            if batch < 1:
                fits = _fit_chunk(ub, cols, item, bn, meta_of(1))
                raise TilingError(f"{OP}: col_chunk = {chunk} with buffer_num = {bn} needs "
                                  f"{chunk_bytes(buf, item, bn)} bytes of UB for the column "
                                  f"buffers; beside one row's metadata ({meta_of(1)} bytes) "
                                  f"{chip.name}'s {ub} bytes hold at most {fits} elements")
        elif meta_of(batch) + chunk_bytes(buf, item, bn) > ub:
            fits = _fit_chunk(ub, cols, item, bn, meta_of(batch))
            need = meta_of(batch) + chunk_bytes(buf, item, bn)
            raise TilingError(f"{OP}: col_chunk = {chunk} with row_batch = {batch} and "
                              f"buffer_num = {bn} needs {need} bytes of UB; {chip.name} has "
                              f"{ub}: at most {fits or 'no aligned'} elements fit")
        return batch, chunk
    if batch is None:
        room = ub - chunk_bytes(smallest, item, bn)
        batch = _largest_batch(front, min(ub // ROW_META_SHARE, room), meta_of)
    chunk = _fit_chunk(ub, cols, item, bn, meta_of(batch))
    if chunk is None:
        most = _largest_batch(front, ub - chunk_bytes(smallest, item, bn), meta_of)
        raise TilingError(f"{OP}: row_batch = {batch} needs {meta_of(batch)} bytes of UB for "
                          f"row metadata, leaving too little of {chip.name}'s {ub} for a column "
                          f"chunk; at most {most} rows fit")
    return batch, chunk
