"""The helper kernels aclnn runs around EmbeddingDenseGradV2 on Atlas A2 (kernels.md §4(b), §6):
``ZerosLike`` of out (and of the scale-count workspace) and the ``Cast`` kernels (indices to
int32, 16-bit grad to fp32, the fp32 result to out's dtype).

Both split their elements over the vector cores in whole 32-byte blocks. ``ZerosKernel`` fills
one UB tile with Duplicate(0) once and copies it out tile after tile; ``CastKernel`` is
copy in -> Cast -> copy out per tile, double-buffered. Round modes: float to narrower float
``rint``, float to int ``trunc`` (aclnn's Cast of float indices truncates), else ``none``.

Modelled: the GM traffic, the vector work, the split. Not modelled: the TBE tilings of CANN's own
ZerosLike and Cast kernels (they are generic elementwise kernels; this one stands for them).
"""

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
)
from npusim.dsl import vector as vec
from npusim.dtypes import is_float
from npusim.ops.common import ceil_div

ZERO_TILE_BYTES = 64 << 10     # UB tile of zeros copied out repeatedly
CAST_UNITS = 2 * 4 + 2 * 4     # per element: 2 input and 2 output buffers of up to 4 bytes


def core_split(total: int, itemsize: int, cores: int, block: int = 32) -> tuple[int, int]:
    """(block_dim, elements per core) in whole 32-byte blocks; the last core takes the rest."""
    per_block = max(1, block // itemsize)
    blocks = ceil_div(max(total, 1), per_block)
    per = ceil_div(blocks, cores) * per_block
    return max(1, ceil_div(max(total, 1), per)), per


def _share(total: int, per: int) -> tuple[int, int]:
    start = min(get_block_idx() * per, total)
    return start, min(per, total - start)


class ZerosKernel(Kernel):
    """dst[:] = 0 (aclnn's ZerosLike / InitOutput)."""

    def init(self, dst, total: int, per_core: int):
        self.start, self.count = _share(total, per_core)
        self.dst, self.dtype = dst, dst.dtype
        self.tile = min(ZERO_TILE_BYTES // self.dtype.itemsize, max(self.count, 1))
        self.out_que = TQue(TPosition.VECOUT, 1, name="zeroQueue")
        self.pipe.init_buffer(self.out_que, 1, self.tile * self.dtype.itemsize)

    def process(self):
        if self.count <= 0:
            return
        zeros = self.out_que.alloc_tensor(self.dtype)
        vec.duplicate(zeros, 0, self.tile)
        self.out_que.enque(zeros)
        zeros = self.out_que.deque()
        for offset in range(0, self.count, self.tile):
            n = min(self.tile, self.count - offset)
            data_copy_pad(self.dst[self.start + offset], zeros,
                          DataCopyExtParams(block_count=1, block_len=n * self.dtype.itemsize))
        self.out_que.free_tensor(zeros)


def round_mode(src, dst) -> str:
    if is_float(src) and not is_float(dst):
        return "trunc"
    if is_float(src) and is_float(dst) and dst.itemsize < src.itemsize:
        return "rint"
    return "none"


class CastKernel(Kernel):
    """dst[i] = cast(src[i]) (aclnn's Cast), tile by tile."""

    def init(self, src, dst, total: int, per_core: int, tile: int):
        self.start, self.count = _share(total, per_core)
        self.src, self.dst, self.tile = src, dst, tile
        self.mode = round_mode(src.dtype, dst.dtype)
        self.in_que = TQue(TPosition.VECIN, 2, name="castIn")
        self.out_que = TQue(TPosition.VECOUT, 2, name="castOut")
        self.pipe.init_buffer(self.in_que, 2, tile * src.dtype.itemsize)
        self.pipe.init_buffer(self.out_que, 2, tile * dst.dtype.itemsize)

    def process(self):
        for offset in range(0, max(self.count, 0), self.tile):
            n = min(self.tile, self.count - offset)
            self.copy_in(offset, n)
            self.compute(n)
            self.copy_out(offset, n)

    def copy_in(self, offset: int, n: int):
        t = self.in_que.alloc_tensor(self.src.dtype)
        data_copy_pad(t, self.src[self.start + offset],
                      DataCopyExtParams(block_count=1, block_len=n * self.src.dtype.itemsize))
        self.in_que.enque(t)

    def compute(self, n: int):
        src = self.in_que.deque()
        dst = self.out_que.alloc_tensor(self.dst.dtype)
        vec.cast(dst, src, self.mode, n)
        self.out_que.enque(dst)
        self.in_que.free_tensor(src)

    def copy_out(self, offset: int, n: int):
        t = self.out_que.deque()
        data_copy_pad(self.dst[self.start + offset], t,
                      DataCopyExtParams(block_count=1, block_len=n * self.dst.dtype.itemsize))
        self.out_que.free_tensor(t)


def launch_zeros(run, dst, total: int, name: str) -> None:
    cores, per = core_split(total, dst.dtype.itemsize, run.chip.vector_core_count)
    run.launch(ZerosKernel, block_dim=cores, name=name,
               args=dict(dst=dst, total=total, per_core=per))


def launch_cast(run, src, dst, total: int, name: str) -> None:
    item = max(src.dtype.itemsize, dst.dtype.itemsize)
    cores, per = core_split(total, item, run.chip.vector_core_count)
    tile = min(run.chip.ub_bytes // CAST_UNITS // 32 * 32, ceil_div(per, 32) * 32)
    run.launch(CastKernel, block_dim=cores, name=name,
               args=dict(src=src, dst=dst, total=total, per_core=per, tile=tile))
