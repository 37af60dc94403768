"""l0op::Contiguous: the copy kernel aclnn runs first on a non-contiguous input.

A strided view is its storage (the bytes from its lowest to its highest element) plus a shape and
element strides. The kernel copies it, on every vector core, into a new contiguous GM tensor
through UB: a run of elements that is contiguous in the source (a row when the last stride is 1,
else one element) is a *segment*; segments that follow each other at a fixed source stride move
in one DataCopyPad in (GM gap between them) and one DataCopyPad out (no gap). So a row slice costs
a few large bursts and a transposed view costs one burst per element, as on the chip.

Modelled: the DataCopyPad traffic, its burst cost, double buffering through one MTE2->MTE3
queue, the split of segments over cores. Not modelled: aclnn's choice between ViewCopy,
AsStrided and TransData variants for particular layouts (one generic kernel stands for them).
"""

from dataclasses import dataclass

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    Pipe,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
)
from npusim.ops.common import ceil_div

MAX_BLOCK_COUNT = 4095  # DataCopyPad blockCount limit (12 bits), Ascend C API reference


@dataclass(frozen=True)
class StridedView:
    """A view as the kernel sees it: element offset into its storage, shape and strides
    (elements), grouped as ``groups`` x ``count`` segments of ``seg_len`` elements that are
    ``seg_stride`` apart inside a group."""

    offset: int
    group_shape: tuple
    group_strides: tuple
    count: int
    seg_len: int
    seg_stride: int

    @property
    def segments(self) -> int:
        return int(np.prod(self.group_shape, dtype=np.int64)) * self.count

    def group_offset(self, g: int) -> int:
        off = self.offset
        for n, s in zip(reversed(self.group_shape), reversed(self.group_strides), strict=True):
            g, i = divmod(g, n)
            off += i * s
        return off


def storage_of(arr: np.ndarray) -> tuple[np.ndarray, StridedView]:
    """The flat storage covering every element of ``arr`` and the view of ``arr`` on it."""
    item = arr.itemsize
    shape = [int(n) for n in arr.shape if n != 1] or [1]
    strides = [s // item for n, s in zip(arr.shape, arr.strides, strict=True) if n != 1] or [1]
    low = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    high = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides, strict=True))
    first = tuple(slice(n - 1, n) if s < 0 else slice(0, 1)
                  for n, s in zip(arr.shape, arr.strides, strict=True))
    storage = np.lib.stride_tricks.as_strided(arr[first], shape=(high - low + 1,),
                                              strides=(item,)).copy()
    if strides[-1] == 1 and len(shape) > 1:   # segments are rows, grouped along dim -2
        view = StridedView(-low, tuple(shape[:-2]), tuple(strides[:-2]), shape[-2], shape[-1],
                           strides[-2])
    else:                                      # segments are single elements along the last dim
        seg_len = shape[-1] if strides[-1] == 1 else 1
        count = 1 if strides[-1] == 1 else shape[-1]
        view = StridedView(-low, tuple(shape[:-1]), tuple(strides[:-1]), count, seg_len,
                           strides[-1])
    return storage, view


class ContiguousKernel(Kernel):
    """dst[:] = the view's elements in row-major order, split by segments over the cores."""

    def init(self, src, dst, view: StridedView, per_core: int, tile_bytes: int):
        self.src, self.dst, self.view, self.item = src, dst, view, src.dtype.itemsize
        total = view.segments
        self.first = min(get_block_idx() * per_core, total)
        self.last = min(self.first + per_core, total)
        self.seg_bytes = view.seg_len * self.item
        self.pad_bytes = ceil_div(self.seg_bytes, 32) * 32
        self.tile_bytes = tile_bytes
        self.que = TQue(TPosition.VECIN, 2, consumer=Pipe.MTE3, name="copyQueue")
        self.pipe.init_buffer(self.que, 2, tile_bytes)

    def process(self):
        v, seg = self.view, self.first
        per_tile = max(1, min(self.tile_bytes // self.pad_bytes, MAX_BLOCK_COUNT))
        while seg < self.last:
            g, j = divmod(seg, v.count)
            k = min(self.last - seg, v.count - j, per_tile)
            src = v.group_offset(g) + j * v.seg_stride
            if self.pad_bytes > self.tile_bytes:
                self.copy_long(src, seg * v.seg_len)
                k = 1
            elif k > 1 and v.seg_stride < v.seg_len:   # overlapping or reversed: one by one
                for i in range(k):
                    self.copy(src + i * v.seg_stride, (seg + i) * v.seg_len, 1, self.seg_bytes)
            else:
                self.copy(src, seg * v.seg_len, k, self.seg_bytes,
                          (v.seg_stride - v.seg_len) * self.item)
            seg += k

    def copy_long(self, src: int, dst: int):
        """One segment longer than a tile, in tile-sized pieces."""
        step = self.tile_bytes // self.item
        for start in range(0, self.view.seg_len, step):
            n = min(step, self.view.seg_len - start)
            self.copy(src + start, dst + start, 1, n * self.item)

    def copy(self, src: int, dst: int, count: int, nbytes: int, gap: int = 0):
        t = self.que.alloc_tensor(self.src.dtype)
        data_copy_pad(t, self.src[src], DataCopyExtParams(block_count=count, block_len=nbytes,
                                                          src_stride=gap))
        self.que.enque(t)
        t = self.que.deque()
        data_copy_pad(self.dst[dst], t, DataCopyExtParams(block_count=count, block_len=nbytes))
        self.que.free_tensor(t)


def to_gm(run, name: str, arr: np.ndarray):
    """A contiguous GM tensor holding ``arr``: directly when ``arr`` is already contiguous, else
    through the Contiguous kernel, which shows in the run's timing and trace."""
    if arr.flags.c_contiguous or arr.size == 0:
        return run.gm.tensor(name, arr.dtype, arr.size, arr)
    storage, view = storage_of(arr)
    src = run.gm.tensor(f"{name}.storage", arr.dtype, storage.size, storage)
    dst = run.gm.tensor(name, arr.dtype, arr.size)
    cores = run.chip.vector_core_count
    per_core = ceil_div(view.segments, cores)
    block_dim = ceil_div(view.segments, per_core)
    tile_bytes = run.chip.ub_bytes // 2 // 2 // 32 * 32
    run.launch(ContiguousKernel, block_dim=block_dim, name=f"Contiguous({name})",
               args=dict(src=src, dst=dst, view=view, per_core=per_core, tile_bytes=tile_bytes))
    return dst
