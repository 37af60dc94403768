"""The A2 host tiling of the foreach operators (ForeachCommonTiling, hicann/ops-nn
``foreach/foreach_utils/op_host/foreach_tiling_class.h``): the tensors of a list, taken end to
end, are split over the vector cores in whole 32-byte blocks, so a core may start and end inside
a tensor; each core's buffers take an equal share of UB.

- cores: min(ceil(total elements / elements per block), AIV cores, 64) (GetNeedCoreNum);
- split (AssignDataToEachCore): blocks / cores blocks per core, the first blocks % cores cores one
  block more, walked tensor by tensor: each core has a first tensor and offset and a last tensor
  and offset (tensorStartList, tensorStartOffsetList, tensorEndList, tensorEndOffsetList);
- UB (DivideUbMemory): (UB - the tiling data's 3336 bytes) / 6 for AddList (x1, x2 and y queues,
  two buffers each), rounded down to 32 bytes; for bf16 the UB is first divided by 10
  (UB_DIVIDER_FOR_TEMP_CASTING) and rounded down to 64 bytes, the queues take 9 times that
  (COPY_SPACE_MULTIPLE) and an fp32 work buffer 2 times (kernel_foreach_base.h). MulScalar (x
  and y queues): CANN's DivideUbMemory7 divides by 2, which its two double-buffered queues
  would overflow (its A2 kernel was not read); npusim divides by 4 **[assumed: the buffers of
  the modelled kernel]**.

``tile_length`` is maxDataCount (elements a queue buffer holds), ``cast_length``
maxCastDataCount (the fp32 elements a bf16 tile is cast through at once; 0 otherwise).
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of

TILING_DATA_BYTES = 8 + 256 * 8 + 64 * 2 * 2 + 64 * 8 * 2   # ForeachCommonTilingData, packed
MAX_CORES = 64            # MAX_CORE_CONT
CAST_DIVIDER = 10         # UB_DIVIDER_FOR_TEMP_CASTING
COPY_SPACE = 9            # COPY_SPACE_MULTIPLE
BF16_ALIGN = 64           # BYTE_BLOCK_FOR_BF16
UB_DIVIDERS = {"add_list": 6, "mul_scalar": 4}
BUFFER_NUM = 2            # BUFFER_NUM of kernel_foreach_unary.h


@dataclass(frozen=True, kw_only=True)
class ForeachTiling:
    """Host tiling of a foreach operator. Users may override ``block_dim`` and
    ``tile_length``; the split is derived from them and the tensors' sizes."""

    counts: tuple              # elements of every tensor of the list (tensorDataCountList)
    block_dim: int             # vector cores used
    starts: tuple              # (tensor, offset) where each core starts
    ends: tuple                # (tensor, offset) of each core's last element
    ub_bytes: int              # inputsTensorUbSize
    tile_length: int           # elements per queue buffer (maxDataCount)
    cast_length: int           # fp32 elements per cast step (bf16; maxCastDataCount), else 0
    buffer_num: int = BUFFER_NUM

    def segments(self, core: int) -> list:
        """(tensor, first element, elements) of every piece of the lists core ``core`` does."""
        (t0, o0), (t1, o1) = self.starts[core], self.ends[core]
        out = []
        for t in range(t0, t1 + 1):
            first = o0 if t == t0 else 0
            last = o1 if t == t1 else self.counts[t] - 1
            out.append((t, first, last - first + 1))
        return out


def split(counts: tuple, per_block: int, cores: int) -> tuple:
    """AssignDataToEachCore: (starts, ends) of ``cores`` cores over the tensors' elements."""
    blocks = ceil_div(sum(counts), per_block)
    base, extra = blocks // cores * per_block, blocks % cores
    starts, ends = [(0, 0)], []
    core, filled, cursor, i = 0, 0, 0, 0
    while i < len(counts):
        want = base + per_block if core < extra else base
        left = counts[i] - cursor
        if filled + left < want:
            filled, cursor, i = filled + left, 0, i + 1
            continue
        cursor += want - filled
        ends.append((i, cursor - 1))
        filled, core = 0, core + 1
        if cursor < counts[i]:
            starts.append((i, cursor))
            continue
        cursor, i = 0, i + 1
        if core != cores:
            starts.append((i, 0))
    if filled:
        ends.append((len(counts) - 1, counts[-1] - 1))
    return tuple(starts[:len(ends)]), tuple(ends)


def ub_bytes(chip, kind: str, dtype) -> int:
    """inputsTensorUbSize of ``kind`` ("add_list" or "mul_scalar") for ``dtype``."""
    total = chip.ub_bytes - TILING_DATA_BYTES
    if np.dtype(dtype).name == "bfloat16":
        total //= CAST_DIVIDER
        return total // UB_DIVIDERS[kind] // BF16_ALIGN * BF16_ALIGN
    return total // UB_DIVIDERS[kind] // chip.block_bytes * chip.block_bytes


def foreach_tiling(chip, op: str, kind: str, counts: tuple, dtype, overrides=None):
    """The tiling of a list of tensors of ``counts`` elements of ``dtype``."""
    user = overrides_of(overrides, op)
    item = np.dtype(dtype).itemsize
    per_block = chip.block_bytes // item
    limit = max(1, min(ceil_div(sum(counts), per_block), chip.vector_core_count, MAX_CORES))
    ub = ub_bytes(chip, kind, dtype)
    wide = np.dtype(dtype).name == "bfloat16"
    tile = ub * COPY_SPACE // item if wide else ub // item
    starts, ends = split(counts, per_block, limit)
    t = ForeachTiling(counts=tuple(counts), block_dim=limit, starts=starts, ends=ends,
                      ub_bytes=ub, tile_length=tile, cast_length=ub // 4 if wide else 0)
    if not user:
        return t
    for key in set(user) - {"block_dim", "tile_length"}:
        raise TilingError(f"{op}: tiling {key} is derived from the tensors; override "
                          "block_dim or tile_length")
    t = override(t, user, op)
    if not 1 <= t.block_dim <= limit:
        raise TilingError(f"{op}: block_dim = {t.block_dim}: the list's {sum(counts)} elements "
                          f"fill {ceil_div(sum(counts), per_block)} 32-byte blocks and "
                          f"{chip.name} has {chip.vector_core_count} vector cores; allowed 1 to "
                          f"{limit}")
    if not per_block <= t.tile_length <= tile or t.tile_length % per_block:
        raise TilingError(f"{op}: tile_length = {t.tile_length}: a multiple of {per_block} "
                          f"elements (32 bytes) up to {tile}, what a queue buffer holds")
    starts, ends = split(counts, per_block, t.block_dim)
    return override(t, {"starts": starts, "ends": ends}, op)
