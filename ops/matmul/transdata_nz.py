"""TransData ND <-> FRACTAL_NZ for aclnnMatmul on the Atlas training series (``training.py``).

aclnnMatmul turns an operand whose shape is not 16-aligned into FRACTAL_NZ before MatMulV2 and
the NZ result back into ND after it (hicann/ops-nn ``matmul_util.cpp``: ``SetMmSupportFormat``,
then ``l0op::TransData`` of self, mat2 and the output). FRACTAL_NZ of an R x C matrix is
[ceil(C/16)][round_up(R, 16)][16]: 16-column strips, each with its rows padded to 16 with zeros;
the columns past C in the last strip are zeros too.

Both kernels cut the matrix into row tiles (multiples of 16 rows) and column chunks (multiples of
16 columns; more of them when there are too few row tiles for every core) and deal them round
robin to the cores **[assumed split]**; each tile moves through UB with one double-buffered
MTE2 -> MTE3 queue:

- ND -> NZ (fp16): the tile's rows into UB, each padded to whole 32-byte blocks with zeros
  (DataCopyPad), then per 16-column strip one strided MTE3 copy of one 32-byte block per row
  to GM, where the strip's rows lie one after the other; the padding rows of the last tile are
  written from a zeroed UB block;
- NZ -> ND (fp16 or fp32): per 16-column strip one MTE2 copy of the tile's rows into UB rows
  (a strided destination), then the rows out with DataCopyPad (the columns past C dropped).

Modelled: the GM traffic (every element read once and written once, the padding written), the
per-row bursts. Not modelled: how CANN's TIK TransData rearranges in UB (vector moves and
vnchwconv; the strided copies here stand for them), and the training series' lack of DataCopyPad
(its kernels move whole 32-byte blocks and overlap the tail; the bytes are the same).
"""

from npusim.dsl import (
    DataCopyExtParams,
    DataCopyPadExtParams,
    DataCopyParams,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy,
    data_copy_pad,
    get_block_idx,
    get_block_num,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div, round_up

FRAC = 16
ZERO_EVENT = 5
TILE_BYTES = 96 << 10      # one of the two UB tiles


def tiles(rows: int, cols: int, item: int, cores: int) -> tuple[list, int, int]:
    """The (first row, first column) of each tile of a rows x cols matrix, the rows of a tile
    (a multiple of 16, at most a core's share) and the columns of a chunk."""
    chunk = min(round_up(cols, FRAC), TILE_BYTES // (FRAC * item) // FRAC * FRAC)
    per = max(FRAC, TILE_BYTES // (chunk * item) // FRAC * FRAC)
    per = min(per, max(FRAC, round_up(ceil_div(round_up(rows, FRAC), cores), FRAC)))
    row_tiles = ceil_div(round_up(rows, FRAC), per)
    if row_tiles * ceil_div(cols, chunk) < cores:   # few rows: the columns are cut too
        chunk = min(chunk, round_up(ceil_div(cols, cores // row_tiles), FRAC))
    pieces = [(r0, c0) for r0 in range(0, round_up(rows, FRAC), per)
              for c0 in range(0, cols, chunk)]
    return pieces, per, chunk


class _TransNz(Kernel):
    """What both directions share: the tiles of this core and the queue."""

    def setup(self, src, dst, rows, cols, item, split):
        self.src, self.dst, self.rows, self.cols = src, dst, rows, cols
        self.r16 = round_up(rows, FRAC)
        self.pieces, self.per, self.chunk = split
        self.que = TQue(TPosition.VECIN, 2, consumer=Pipe.MTE3, name="transQueue")
        self.pipe.init_buffer(self.que, 2, self.per * self.chunk * item)

    def my_pieces(self):
        return self.pieces[get_block_idx()::get_block_num()]


class NdToNzKernel(_TransNz):
    """fp16 rows x cols ND -> FRACTAL_NZ."""

    def init(self, src, dst, rows: int, cols: int, split: tuple):
        self.setup(src, dst, rows, cols, 2, split)
        self.zeros = TBuf(TPosition.VECCALC, name="zeroBuf")
        self.pipe.init_buffer(self.zeros, FRAC * 32)

    def process(self):
        mine = self.my_pieces()
        if any(self.pad(r0) for r0, _ in mine):   # writes padding rows: zeros ready first
            vec.duplicate(self.zeros.get("float16"), 0, FRAC * FRAC)
            set_flag("V_MTE3", ZERO_EVENT)
            wait_flag("V_MTE3", ZERO_EVENT)
        for r0, c0 in mine:
            nr = max(0, min(self.per, self.rows - r0))
            nc = min(self.chunk, self.cols - c0)
            pitch = round_up(nc, FRAC)
            t = self.que.alloc_tensor("float16")
            if nr:
                data_copy_pad(t, self.src[r0 * self.cols + c0], DataCopyExtParams(
                    block_count=nr, block_len=nc * 2, src_stride=(self.cols - nc) * 2),
                    DataCopyPadExtParams(is_pad=True, padding_value=0))
            self.que.enque(t)
            t = self.que.deque()
            pad = self.pad(r0)
            for j in range(pitch // FRAC):
                at = (c0 // FRAC + j) * self.r16 * FRAC + r0 * FRAC
                if nr:
                    data_copy(self.dst[at], t[j * FRAC], DataCopyParams(
                        block_count=nr, block_len=1, src_stride=pitch // FRAC - 1))
                if pad:
                    data_copy(self.dst[at + nr * FRAC], self.zeros.get("float16"),
                              DataCopyParams(block_count=1, block_len=pad))
            self.que.free_tensor(t)

    def pad(self, r0: int) -> int:
        """Padding rows (past ``rows``, up to the multiple of 16) in the tile at ``r0``."""
        return min(self.per, self.r16 - r0) - max(0, min(self.per, self.rows - r0))


class NzToNdKernel(_TransNz):
    """rows x cols FRACTAL_NZ (fp16 or fp32) -> ND, dropping the padding."""

    def init(self, src, dst, rows: int, cols: int, split: tuple):
        self.item = dst.dtype.itemsize
        self.setup(src, dst, rows, cols, self.item, split)

    def process(self):
        row = FRAC * self.item // 32        # 32-byte blocks per 16-element strip row
        for r0, c0 in self.my_pieces():
            nr = min(self.per, self.rows - r0)
            nc = min(self.chunk, self.cols - c0)
            pitch = round_up(nc, FRAC)
            t = self.que.alloc_tensor(self.dst.dtype)
            for j in range(pitch // FRAC):
                data_copy(t[j * FRAC], self.src[(c0 // FRAC + j) * self.r16 * FRAC + r0 * FRAC],
                          DataCopyParams(block_count=nr, block_len=row,
                                         dst_stride=(pitch // FRAC - 1) * row))
            self.que.enque(t)
            t = self.que.deque()
            gap = (pitch * self.item - round_up(nc * self.item, 32)) // 32
            data_copy_pad(self.dst[r0 * self.cols + c0], t, DataCopyExtParams(
                block_count=nr, block_len=nc * self.item, src_stride=gap,
                dst_stride=(self.cols - nc) * self.item))
            self.que.free_tensor(t)


def nz_size(rows: int, cols: int) -> int:
    """Elements of the FRACTAL_NZ form of a rows x cols matrix."""
    return round_up(rows, FRAC) * round_up(cols, FRAC)


def launch_nd_to_nz(run, src, rows: int, cols: int, name: str):
    """TransData ND -> FRACTAL_NZ of an fp16 rows x cols GM matrix; the NZ tensor."""
    dst = run.gm.tensor(f"{name}.nz", "float16", nz_size(rows, cols))
    split = tiles(rows, cols, 2, run.chip.vector_core_count)
    run.launch(NdToNzKernel, block_dim=min(len(split[0]), run.chip.vector_core_count),
               name=f"TransData({name})",
               args=dict(src=src, dst=dst, rows=rows, cols=cols, split=split))
    return dst


def launch_nz_to_nd(run, src, dst, rows: int, cols: int, name: str) -> None:
    """TransData FRACTAL_NZ -> ND of a rows x cols GM matrix into ``dst``."""
    split = tiles(rows, cols, dst.dtype.itemsize, run.chip.vector_core_count)
    run.launch(NzToNdKernel, block_dim=min(len(split[0]), run.chip.vector_core_count),
               name=f"TransData({name})",
               args=dict(src=src, dst=dst, rows=rows, cols=cols, split=split))
