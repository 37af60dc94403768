"""The elementwise template: one multi-core, double-buffered vector kernel for every operator
whose output element depends only on the same element of its inputs.

The schedule is SiluGrad's Ascend C one (kernels.md §1(c), ``ops/silu/``): the flat tensors are
cut into 32-byte blocks shared over the vector cores (the first ``big_core_num`` cores take one
block more), each core walks its share in UB tiles, double-buffered when it has more than two
tiles, each tile ``copy_in`` (MTE2, one queue per input) -> ``compute`` (V) -> ``copy_out``
(MTE3). What differs between operators is only the per-tile compute (``computes.py``): how many
inputs it reads, how much fp32 work space it needs, and the vector instructions it issues.

UB is cut into ``units`` tile-sized pieces, as SiluGrad's host code does: ``buffer_num`` buffers
of the input dtype for each input queue and the output queue, plus the compute's work space
counted in input-dtype tiles (rounded up). ``units(inputs=2, fp16, work=5 fp32 tiles)`` gives
SiluGrad's 13 and 16.

Modelled: the split, the tile loop, the queues' flags, DataCopyPad for a byte-exact tail.
Not modelled: the TBE DSL auto-schedule's own tile sizes (coexisting buffers decided at compile
time, the 32767-element split cap): CANN ships Relu, ReluGrad, ThresholdGradV2D, Add and Axpy
for Atlas training and A2 as TBE DSL kernels whose pipes per tile are the same
(kernels.md §1(b)); their launch pays the TBE kernel start-up (``impl="tbe"``).
"""

from dataclasses import dataclass

import numpy as np

from npusim.dsl import (
    Kernel,
    TBuf,
    TPosition,
    TQue,
    get_block_idx,
)
from npusim.errors import TilingError
from npusim.ops.common import ceil_div, override, overrides_of
from npusim.ops.common.blocks import copy_exact, core_slice, split_blocks

MULTI_TILE = 2       # a core with more tiles than this double-buffers (SiluGrad's rule)
ELEMS_PER_CORE = 1024   # a core for every 1024 elements at least (SiluGrad's host code)


@dataclass(frozen=True, kw_only=True)
class ElementwiseTiling:
    """Host tiling of an elementwise operator. Users may override ``block_dim``,
    ``tile_length`` and ``buffer_num``; the split fields are recomputed from them."""

    total_length: int          # elements in every input and in the output
    block_dim: int             # vector cores used (AIVs on Atlas A2, cores on Atlas training)
    big_core_num: int          # the first cores, which take one 32-byte block more
    big_core_length: int       # elements per big core
    small_core_length: int     # elements per other core (the last may hold fewer)
    tile_length: int           # elements per UB tile, whole 32-byte blocks
    buffer_num: int            # buffers per queue: 1 single, 2 double buffering


def ub_units(compute, dtype, buffer_num: int) -> int:
    """Tile-sized pieces of UB one tile needs: the queues' buffers and the work space."""
    item = np.dtype(dtype).itemsize
    return (compute.inputs + 1) * buffer_num + ceil_div(compute.work_bytes(dtype), item)


def max_tile_length(chip, compute, dtype, buffer_num: int) -> int:
    """The largest tile (elements) that fits UB: (UB / 32 / units) * 32 / bytes."""
    item = np.dtype(dtype).itemsize
    return chip.ub_bytes // chip.block_bytes // ub_units(compute, dtype, buffer_num) \
        * chip.block_bytes // item


def elementwise_tiling(chip, op: str, compute, total: int, dtype, overrides=None):
    """The default tiling of ``compute`` for ``total`` elements of ``dtype`` on ``chip``,
    with the user's ``overrides`` (errors name ``op``)."""
    overrides = overrides_of(overrides, op)
    item = np.dtype(dtype).itemsize
    blocks = ceil_div(total * item, chip.block_bytes)
    cores = max(1, min(chip.vector_core_count, ceil_div(total, ELEMS_PER_CORE), blocks))
    split = split_blocks(total, item, cores, chip.block_bytes)
    single = max_tile_length(chip, compute, dtype, 1)
    buffer_num = 1 if ceil_div(split["big_core_length"], single) <= MULTI_TILE else 2
    tiling = ElementwiseTiling(total_length=total, buffer_num=buffer_num, tile_length=(
        max_tile_length(chip, compute, dtype, buffer_num)), **split)
    if not overrides:
        return tiling
    derived = {"total_length", "big_core_num", "big_core_length", "small_core_length"}
    for key in sorted(set(overrides) & derived):
        raise TilingError(f"{op}: tiling {key} is derived from the shape and block_dim; "
                          "override block_dim, tile_length or buffer_num")
    tiling = override(tiling, overrides, op)
    if "tile_length" not in overrides and tiling.buffer_num in (1, 2):   # derive, then check
        tiling = override(tiling, {"tile_length": max_tile_length(
            chip, compute, dtype, tiling.buffer_num)}, op)
    _validate(chip, op, compute, dtype, tiling, blocks)
    return override(tiling, split_blocks(total, item, tiling.block_dim, chip.block_bytes), op)


def _validate(chip, op, compute, dtype, t: ElementwiseTiling, blocks: int) -> None:
    item = np.dtype(dtype).itemsize
    per_block = chip.block_bytes // item
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{op}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    limit = min(chip.vector_core_count, max(blocks, 1))
    if not 1 <= t.block_dim <= limit:
        raise TilingError(f"{op}: block_dim = {t.block_dim}: {chip.name} has "
                          f"{chip.vector_core_count} vector cores and the tensor "
                          f"{blocks} 32-byte blocks; allowed 1 to {limit}")
    if t.tile_length <= 0 or t.tile_length % per_block:
        raise TilingError(f"{op}: tile_length = {t.tile_length}: must be a positive multiple "
                          f"of {per_block} elements (32 bytes)")
    fits = max_tile_length(chip, compute, dtype, t.buffer_num)
    if t.tile_length > fits:
        need = t.tile_length * item * ub_units(compute, dtype, t.buffer_num)
        raise TilingError(f"{op}: tile_length = {t.tile_length} with buffer_num = "
                          f"{t.buffer_num} needs {need} bytes of UB; {chip.name} has "
                          f"{chip.ub_bytes}: at most {fits} elements fit")


class ElementwiseKernel(Kernel):
    """One vector core's share: tiles of every input in, the output out, ``compute`` between."""

    def init(self, ins: tuple, out, tiling: ElementwiseTiling, compute):
        t = tiling
        start, self.length = core_slice(t, get_block_idx())
        self.in_gm = [gm[start] for gm in ins]
        self.out_gm = out[start]
        self.tiling, self.compute, self.dtype = t, compute, out.dtype
        tile_bytes = t.tile_length * self.dtype.itemsize
        self.in_ques = [TQue(TPosition.VECIN, t.buffer_num, name=f"inQueue{i}")
                        for i in range(len(ins))]
        self.out_que = TQue(TPosition.VECOUT, t.buffer_num, name="outQueue")
        for que in (*self.in_ques, self.out_que):
            self.pipe.init_buffer(que, t.buffer_num, tile_bytes)
        work = compute.work_bytes(self.dtype) * t.tile_length
        self.calc = TBuf(TPosition.VECCALC, name="calcBuf")
        if work:
            self.pipe.init_buffer(self.calc, ceil_div(work, 32) * 32)
        if self.length > 0:
            compute.setup(self)

    def work(self, slot: int, dtype="float32"):
        """Work tile ``slot`` (4 bytes an element, ``tile_length`` elements) seen as ``dtype``."""
        n = self.tiling.tile_length
        return self.calc.get("uint8")[slot * 4 * n].reinterpret_cast(dtype)

    def process(self):
        n = self.tiling.tile_length
        for i in range(ceil_div(self.length, n)):
            count = min(n, self.length - i * n)
            self.copy_in(i * n, count)
            self.compute_tile(count)
            self.copy_out(i * n, count)

    def copy_in(self, offset: int, count: int):
        for que, gm in zip(self.in_ques, self.in_gm, strict=True):
            local = que.alloc_tensor(self.dtype)
            copy_exact(local, gm[offset], count)
            que.enque(local)

    def compute_tile(self, count: int):
        ins = [que.deque() for que in self.in_ques]
        out = self.out_que.alloc_tensor(self.dtype)
        self.compute(self, out, ins, count)
        self.out_que.enque(out)
        for que, local in zip(self.in_ques, ins, strict=True):
            que.free_tensor(local)

    def copy_out(self, offset: int, count: int):
        out = self.out_que.deque()
        copy_exact(self.out_gm[offset], out, count)
        self.out_que.free_tensor(out)


def launch_elementwise(run, compute, ins: tuple, out, tiling: ElementwiseTiling):
    """Launch ``compute``'s kernel (named by its op type) on ``tiling.block_dim`` cores."""
    if tiling.total_length:
        run.launch(ElementwiseKernel, block_dim=tiling.block_dim, name=compute.op_type,
                   impl="tbe", args=dict(ins=tuple(ins), out=out, tiling=tiling,
                                         compute=compute))
