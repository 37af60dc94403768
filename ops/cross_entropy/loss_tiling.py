"""CrossEntropyLoss's host tiling: rows over the AIV cores (front/tail split as
CrossEntropyLossGrad's), each row in column chunks (the whole row when it fits UB), and the
rows whose per-row loss slots are resident at once.

UB holds: the input and logProbOut queues (``buffer_num`` buffers of ``col_chunk`` elements of
the input dtype each), two fp32 work rows of ``col_chunk`` (x - max, and exp or logProb), and
the row metadata of ``row_batch`` rows: one 32-byte pick slot per row (the gathered
logProb[target]), the compaction offsets, the loss, -weight[target] and (mean) weight[target]
rows, plus the scalars (max, sum, lse, their broadcast repeats, the partial sums). The chunk is
the whole row when it fits beside one row's metadata, else the largest whole 512 bytes that
fits; rows then take three passes over their chunks (max, sum of exp, logProb) and read the
input three times. **[The A2 kernel's own tiling was not read (the stored sources hold the
arch35 kernels, which keep a batch of whole rows resident); npusim's choice.]**
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import override, overrides_of, round_up
from npusim.ops.cross_entropy.loss_args import OP
from npusim.ops.cross_entropy.tiling import _split

CHUNK_ALIGN_BYTES = 512
ROW_LANES = 64
SCALAR_BLOCKS = 9          # max, sum, part, lse, gather offset, loss acc, weight acc, results
BRCB_BYTES = 256           # the broadcast repeats of max and lse
DEFAULT_BATCH = 256        # rows whose metadata one batch holds at most, by default
USER_FIELDS = ("block_dim", "row_batch", "col_chunk", "buffer_num")


@dataclass(frozen=True, kw_only=True)
class CrossEntropyLossTiling:
    """Users may override ``block_dim``, ``row_batch``, ``col_chunk`` and ``buffer_num``."""

    rows: int
    cols: int
    block_dim: int
    front_core_num: int
    front_row_num: int
    tail_row_num: int
    row_batch: int
    col_chunk: int         # elements of a row per chunk; == cols: the row is resident
    buffer_num: int

    @property
    def chunks(self) -> list:
        """(first column, columns) of every chunk of a row."""
        return [(c, min(self.col_chunk, self.cols - c)) for c in range(0, self.cols,
                                                                          self.col_chunk)]


def meta_bytes(batch: int, itemsize: int, reduction: str, cores: int) -> int:
    lanes = round_up(batch, ROW_LANES)
    total = batch * 32 + round_up(batch * 4, 32) + 2 * lanes * 4 \
        + SCALAR_BLOCKS * 32 + 2 * BRCB_BYTES
    if reduction == "mean":
        total += lanes * 4
    if reduction == "none":
        total += round_up(batch * itemsize, 32)
    else:
        total += 2 * round_up(cores * 4, 32)
    return total


def chunk_bytes(chunk: int, itemsize: int, buffer_num: int) -> int:
    return 2 * buffer_num * round_up(chunk * itemsize, 32) + 2 * round_up(chunk * 4, 256)


def _fit_chunk(ub: int, cols: int, item: int, bn: int, meta: int) -> int:
    if meta + chunk_bytes(cols, item, bn) <= ub:
        return cols
    align = CHUNK_ALIGN_BYTES // item
    chunk = (ub - meta) // (2 * bn * item + 8) // align * align
    while chunk > 0 and meta + chunk_bytes(chunk, item, bn) > ub:
        chunk -= align
    return chunk


def cross_entropy_loss_tiling(chip, rows: int, cols: int, dtype, *, reduction: str,
                              overrides=None, op: str = OP) -> CrossEntropyLossTiling:
    """(``op``: the operator the errors name: the training series' log-softmax and NLL loss
    share this tiling.)"""
    OP = op  # noqa: N806 - the errors below name the operator asked for
    user = dict(overrides_of(overrides, OP))
    item = np.dtype(dtype).itemsize
    limit = max(min(rows, chip.vector_core_count), 1)
    base = dict(rows=rows, cols=cols, row_batch=1, col_chunk=cols, buffer_num=1,
                **_split(rows, limit))
    if user:
        for key in set(user) - set(USER_FIELDS):
            raise TilingError(f"{OP}: tiling {key} is derived from the shape; override "
                              f"{', '.join(USER_FIELDS)}")
        probe = override(CrossEntropyLossTiling(**base), user, OP)
        user = {k: getattr(probe, k) for k in user}
    block_dim, bn = user.get("block_dim", limit), user.get("buffer_num", 1)
    if not 1 <= block_dim <= limit:
        raise TilingError(f"{OP}: block_dim = {block_dim}: {chip.name} has "
                          f"{chip.vector_core_count} vector cores and input {rows} rows; "
                          f"allowed 1 to {limit}")
    if bn not in (1, 2):
        raise TilingError(f"{OP}: buffer_num = {bn}: allowed 1 or 2")
    split = _split(rows, block_dim)
    front = max(split["front_row_num"], 1)
    batch = user.get("row_batch", min(front, DEFAULT_BATCH))
    if not 1 <= batch <= front:
        raise TilingError(f"{OP}: row_batch = {batch}: a core has at most {front} rows; "
                          f"allowed 1 to {front}")
    meta = meta_bytes(batch, item, reduction, block_dim)
    fits = _fit_chunk(chip.ub_bytes, cols, item, bn, meta)
    chunk = user.get("col_chunk", fits)
    align = CHUNK_ALIGN_BYTES // item
    if chunk != cols and (chunk <= 0 or chunk % align or chunk > cols):
        raise TilingError(f"{OP}: col_chunk = {chunk}: C ({cols}) or a positive multiple of "
                          f"{align} elements (512 bytes) below it")
    if chunk <= 0 or meta + chunk_bytes(chunk, item, bn) > chip.ub_bytes:
        raise TilingError(f"{OP}: col_chunk = {chunk} with row_batch = {batch} and "
                          f"buffer_num = {bn} does not fit {chip.name}'s {chip.ub_bytes} bytes "
                          f"of UB; at most {max(fits, 0)} elements fit")
    return CrossEntropyLossTiling(rows=rows, cols=cols, row_batch=batch, col_chunk=chunk,
                                  buffer_num=bn, **split)


def workspace_bytes(tiling: CrossEntropyLossTiling, reduction: str) -> int:
    """mean/sum: each core's loss partial and weight partial, two 32-byte aligned rows."""
    return 0 if reduction == "none" else 2 * round_up(tiling.block_dim, 8) * 4
