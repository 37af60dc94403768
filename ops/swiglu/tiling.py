"""SwiGlu's and SwiGluGrad's host tiling (after ops-nn activation/swi_glu's single-tiling kernel):
x is seen as rows of two halves (A, B) of ``half`` elements; a unit of work is one row's chunk of
``col_chunk`` elements (the whole half when it fits a tile, so a tile then holds ``tile_rows``
rows copied with a strided DataCopyPad that skips the other half). The units are split over the
vector cores, the first ``front_core_num`` taking one more. Every tile buffer holds
``tile_length`` elements (rows padded to 32 bytes in UB); UB holds the queues (``buffer_num``
each) and the fp32 work tiles the kernel needs (kernel.py, grad_kernel.py).
"""

from dataclasses import dataclass

import numpy as np

from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of, round_up

USER_FIELDS = ("block_dim", "tile_length", "buffer_num")
# bytes per tile element: (queues of the input dtype per buffer, fp32 work tiles) per kind and
# input width (forward fp32: the ones tile; 16-bit: a and c in fp32; grad fp32: tmp, sig;
# grad 16-bit: tmp, sig, a, l and the result in fp32)
QUEUES = {"forward": 3, "grad": 5}
WORK = {("forward", 4): 1, ("forward", 2): 2, ("grad", 4): 2, ("grad", 2): 5}


@dataclass(frozen=True, kw_only=True)
class SwiGluTiling:
    """Host tiling of SwiGlu/SwiGluGrad. Users may override ``block_dim``, ``tile_length`` and
    ``buffer_num``; the other fields are derived."""

    rows: int              # rows of x before dim (the product of those dims)
    half: int              # elements of each half of a row
    col_chunk: int         # elements of a half per unit (the whole half when it fits a tile)
    chunks: int            # units per row, ceil(half / col_chunk)
    tile_rows: int         # rows per tile when a unit is a whole half (else 1)
    block_dim: int         # vector cores used
    front_core_num: int    # cores that take front_units units
    front_units: int       # units of each front core, ceil(units / block_dim)
    tail_units: int        # units of the others, floor(units / block_dim)
    tile_length: int       # elements of every tile buffer (a multiple of 32 bytes)
    buffer_num: int        # buffers per queue: 2 double buffering (CANN's), 1 single

    @property
    def units(self) -> int:
        return self.rows * self.chunks


def bytes_per_element(kind: str, item: int, buffer_num: int) -> int:
    return buffer_num * QUEUES[kind] * item + WORK[kind, item] * 4


def max_tile(chip, kind: str, item: int, buffer_num: int) -> int:
    per_block = chip.block_bytes // item
    return chip.ub_bytes // bytes_per_element(kind, item, buffer_num) // per_block * per_block


def swi_glu_tiling(chip, op: str, kind: str, rows: int, half: int, dtype,
                   overrides: dict | None = None) -> SwiGluTiling:
    user = dict(overrides_of(overrides, op))
    item = np.dtype(dtype).itemsize
    probe = _make(chip, rows, half, item, chip.vector_core_count, max_tile(chip, kind, item, 2),
                  2)
    if not user:
        return probe
    for key in set(user) - set(USER_FIELDS):
        if key in probe.__dataclass_fields__:
            raise TilingError(f"{op}: tiling {key} is derived from the shape; override "
                              f"{', '.join(USER_FIELDS)}")
    t = override(probe, user, op)
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{op}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    per_block, fits = chip.block_bytes // item, max_tile(chip, kind, item, t.buffer_num)
    tile = t.tile_length if "tile_length" in user else fits
    if tile <= 0 or tile % per_block or tile > fits:
        raise TilingError(f"{op}: tile_length = {tile}: a positive multiple of {per_block} "
                          f"elements (32 bytes) of at most {fits} with buffer_num = "
                          f"{t.buffer_num} ({chip.name}'s UB is {chip.ub_bytes} bytes)")
    if not 1 <= t.block_dim <= chip.vector_core_count:     # before _make divides by it
        raise TilingError(f"{op}: block_dim = {t.block_dim}: allowed 1 to "
                          f"{chip.vector_core_count} ({chip.vector_core_count} vector cores)")
    made = _make(chip, rows, half, item, t.block_dim, tile, t.buffer_num)
    if not 1 <= t.block_dim <= max(min(chip.vector_core_count, made.units), 1):
        raise TilingError(f"{op}: block_dim = {t.block_dim}: allowed 1 to "
                          f"{max(min(chip.vector_core_count, made.units), 1)} ({made.units} "
                          f"units of work, {chip.vector_core_count} vector cores)")
    return made


def _make(chip, rows, half, item, cores, tile, buffer_num) -> SwiGluTiling:
    per_block = chip.block_bytes // item
    padded = round_up(max(half, 1), per_block)
    if padded <= tile:
        chunk, tile_rows = half, max(1, min(tile // padded, ceil_div(rows, cores)))
        if rows < cores and half > per_block:         # few rows: split the halves too
            want = round_up(ceil_div(half, ceil_div(cores, max(rows, 1))), per_block)
            if want < half:
                chunk, tile_rows = want, 1
    else:
        chunk, tile_rows = tile, 1
    chunks = ceil_div(half, chunk) if chunk else 1
    units = rows * chunks
    block_dim = max(1, min(cores, units))
    return SwiGluTiling(rows=rows, half=half, col_chunk=chunk, chunks=chunks,
                        tile_rows=tile_rows, block_dim=block_dim,
                        front_core_num=units % block_dim or block_dim,
                        front_units=ceil_div(units, block_dim), tail_units=units // block_dim,
                        tile_length=tile, buffer_num=buffer_num)
