"""Host tiling of the batch-norm kernels: one dataclass for the four of them.

The kernels see the activation as ``n`` x ``groups`` runs of ``run_len`` contiguous elements:
on NC1HWC0 a group is a C1 block and a run is its H x W positions of ``lanes`` = C0 channels
(channel of lane j of group g: g x C0 + j); on NCHW (A2's BatchNormV3) a group is one channel
and a run its H x W values (``lanes`` = 1). A *unit* of work is one group over one *part* of
the batch (``parts`` near-equal slices of N): the statistics kernels write one partial per unit
(fp32, ``lanes`` values) and the kernels after them add the partials in part order. Units go to
the cores round robin. A run is processed in chunks of ``tile`` elements (a power of two, a
multiple of 64), which is also the length of the fp32 accumulators the statistics fold to
``lanes`` values at the end (pairwise halves). A2's BatchNormV3 with short runs (H x W up to
the tile) takes ``chunk_rows`` runs of a channel per chunk instead, each ``pitch`` elements
apart in UB (one DataCopyPad, each run padded with zeros to 32 bytes).
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of

MAX_TILE = 8192
MIN_TILE = 64


@dataclass(frozen=True, kw_only=True)
class BatchNormTiling:
    """Users may override ``parts``, ``tile`` and ``buffer_num``; the rest follows from the
    shape and the chip."""

    n: int                 # batch
    groups: int            # C1 blocks (NC1HWC0) or channels (NCHW)
    run_len: int           # elements of one (n, group) run: H x W x lanes
    lanes: int             # channels per group: C0 (16) on NC1HWC0, 1 on NCHW
    parts: int             # slices of the batch; units = groups x parts
    block_dim: int         # cores used: min(vector cores, units)
    tile: int              # elements per chunk and per fp32 accumulator
    buffer_num: int        # 1 single, 2 double buffering of the chunk queues
    count: int             # N x H x W: the values each channel's statistics average
    pitch: int = 0         # BatchNormV3 batching runs: UB elements per run (H x W, 32 bytes)
    chunk_rows: int = 0    # ... and runs per chunk (0: a chunk is part of one run)


def _ub_per_tile_elem(item: int, buffer_num: int, inputs: int) -> int:
    """UB bytes per tile element: the input queues, the output queue, three fp32 work
    buffers and two fp32 accumulators."""
    return inputs * buffer_num * item + buffer_num * item + 5 * 4


def _fits(chip, tile: int, item: int, buffer_num: int, inputs: int) -> bool:
    return tile * _ub_per_tile_elem(item, buffer_num, inputs) + 16 * 1024 <= chip.ub_bytes


def batch_norm_tiling(chip, op: str, layout: tuple, dtype, *, inputs: int = 2, parts=None,
                      overrides=None) -> BatchNormTiling:
    """The tiling for ``layout`` = (n, groups, run_len, lanes, count); ``inputs`` the
    activations a chunk reads (1 forward, 2 backward). ``parts`` fixed (A2's BatchNormV3
    takes whole channels: 1) or None (enough slices of N to fill the cores)."""
    overrides = overrides_of(overrides, op)
    n, groups, run_len, lanes, count = layout
    item = np.dtype(dtype).itemsize
    cores = chip.vector_core_count
    p = parts or max(1, min(n, cores // max(groups, 1)))
    tile = MIN_TILE
    while tile < run_len and tile * 2 <= MAX_TILE and _fits(chip, tile * 2, item, 2, inputs):
        tile *= 2
    t = BatchNormTiling(n=n, groups=groups, run_len=run_len, lanes=lanes, parts=p,
                        block_dim=min(cores, groups * p), tile=tile, buffer_num=2, count=count)
    if not overrides:
        return t
    allowed = {"tile", "buffer_num"} | ({"parts"} if parts is None else set())
    for key in sorted(set(overrides) - allowed):
        raise TilingError(f"{op}: tiling {key} follows from the shape; override "
                          f"{', '.join(sorted(allowed))}")
    t = override(t, overrides, op)
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{op}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    if not 1 <= t.parts <= n:
        raise TilingError(f"{op}: parts = {t.parts}: allowed 1 to N = {n}")
    if (t.tile < MIN_TILE or t.tile & (t.tile - 1) or t.tile > MAX_TILE
            or not _fits(chip, t.tile, item, t.buffer_num, inputs)):
        raise TilingError(f"{op}: tile = {t.tile}: a power of two from {MIN_TILE} to "
                          f"{MAX_TILE} whose buffers fit {chip.name}'s UB ({chip.ub_bytes} "
                          f"bytes; {_ub_per_tile_elem(item, t.buffer_num, inputs)} per element)")
    return override(t, dict(block_dim=min(cores, groups * t.parts)), op)


def part_range(t: BatchNormTiling, part: int) -> tuple[int, int]:
    """(first n, batches) of ``part``: the first N % parts parts one batch more."""
    small, big = divmod(t.n, t.parts)
    first = part * small + min(part, big)
    return first, small + (1 if part < big else 0)


def my_units(t: BatchNormTiling, idx: int) -> range:
    """Core ``idx``'s units (group = unit // parts, part = unit % parts), round robin."""
    return range(idx, t.groups * t.parts, t.block_dim)


def chunks(t: BatchNormTiling) -> list:
    """(start, length) of the chunks of one run."""
    return [(s, min(t.tile, t.run_len - s)) for s in range(0, t.run_len, t.tile)]


def fold_steps(t: BatchNormTiling) -> list:
    """Sizes the accumulators are halved to: tile/2, ..., lanes (at least 8 fp32, one block:
    a 1-lane group ends with a ReduceSum over the last 8)."""
    sizes, size = [], t.tile
    while size > max(t.lanes, 8):
        size //= 2
        sizes.append(size)
    return sizes


def units(t: BatchNormTiling) -> int:
    return ceil_div(t.groups * t.parts, t.block_dim)
