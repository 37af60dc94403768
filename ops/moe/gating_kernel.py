"""The MoeGatingTopKSoftmax kernel on the AIV cores, and its tiling (hicann/ops-transformer
``moe/moe_gating_top_k_softmax``: ``op_host/moe_gating_top_k_softmax_tiling_*.cpp``,
``op_kernel/moe_gating_top_k_softmax_perf.h``).

Split (the tiling's ``blockFormer``): ceil(rows / vector cores) rows per core, the last core the
rest; outputs of ``row_factor`` rows a batch, each row's k outputs in a slot of k rounded to 32
bytes (``kAlignB16`` / ``kAlignB32``), written out with one DataCopyPad per output.

Per row: x in (MTE2), Cast to fp32 (16-bit x), the SoftMax: ReduceMax, Sub of the max (Brcb'd
to a block, block stride 0), Exp, ReduceSum, Div by the sum (likewise); the top k: Sort (Sort32
+ MrgSort, descending, stable: equal values keep the lower expert first) of all E values with
their indices, the first k values cast to y's dtype (fp16: CAST_NONE, bf16: CAST_RINT) and the
first k indices (uint32 read as int32) into the batch; rowIdx = j x rows + row, one int32 Adds
of the row number to [0, rows, 2 rows, ...] (set once per core by the scalar: CANN's
ArithProgression). Where k is not a whole 32-byte block, each batch's slots are first zeroed
(Duplicate): DataCopyPad reads whole blocks of UB.

Differences from CANN, and why: CANN's perf kernel (E <= 1024 a multiple of 8, k <= 8) runs the
SoftMax on a batch of rows at once (BlockReduceMax / WholeReduceMax per row, one Exp over the
batch), pads each row to 32 elements with -1 and sorts them, then GatherMask's the first k;
npusim issues the same operations a row at a time (row batches of the reductions need the
repeat forms of BlockReduce, not modelled for Sort). ``finished`` is not modelled.
"""

from dataclasses import dataclass

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.dsl.scalar_gm import set_values
from npusim.errors import TilingError
from npusim.isa.vector import RepeatParams
from npusim.ops.common import ceil_div, override, round_up
from npusim.ops.common.blocks import copy_exact

OP = "aclnnMoeGatingTopKSoftmax"
SYNC_EVENT_ID = 3          # the queues take event ids 0 and 1 of each pipe pair
FP32_PER_REPEAT = 64
MAX_REPEATS = 255


@dataclass(frozen=True, kw_only=True)
class GatingTiling:
    """rows (x's rows), cols (E), k and dtype come from the arguments; users may override
    ``block_dim`` (vector cores: the rows per core follow) and ``row_factor`` (rows a batch)."""

    rows: int
    cols: int
    k: int
    dtype: str
    block_dim: int = 0
    row_factor: int = 64

    @property
    def block_former(self) -> int:
        return ceil_div(self.rows, self.block_dim)

    @property
    def cores_used(self) -> int:
        return ceil_div(self.rows, self.block_former)

    def k_align(self, itemsize: int) -> int:
        """k rounded to a whole 32-byte block of ``itemsize`` elements."""
        return round_up(self.k, 32 // itemsize)


def ub_bytes(t: GatingTiling, itemsize: int) -> int:
    row = round_up(t.cols * itemsize, 32)
    wide = round_up(t.cols * 4, 32)
    batch = t.row_factor * 32 * (ceil_div(t.k * itemsize, 32) + 2 * ceil_div(t.k * 4, 32))
    return 2 * row + 3 * wide + batch + 32 + 256 + t.k_align(4) * 4


def gating_tiling(chip, rows: int, cols: int, k: int, dtype: str, itemsize: int,
                  overrides=None) -> GatingTiling:
    t = GatingTiling(rows=rows, cols=cols, k=k, dtype=dtype, block_dim=chip.vector_core_count,
                     row_factor=min(64, max(1, ceil_div(rows, chip.vector_core_count))))
    fixed = (t.rows, t.cols, t.k, t.dtype)
    t = override(t, overrides, OP)
    if (t.rows, t.cols, t.k, t.dtype) != fixed:
        raise TilingError(f"{OP}: rows, cols, k and dtype come from the arguments, not from "
                          "the tiling")
    if not 1 <= t.block_dim <= chip.vector_core_count:
        raise TilingError(f"{OP}: block_dim = {t.block_dim}; 1-{chip.vector_core_count} vector "
                          f"cores on {chip.name}")
    if not 1 <= t.row_factor <= 1024:
        raise TilingError(f"{OP}: row_factor = {t.row_factor}; 1-1024 rows a batch")
    need = ub_bytes(t, itemsize)
    if need > chip.ub_bytes:
        raise TilingError(f"{OP}: {t.cols} experts and {t.row_factor} rows a batch need {need} "
                          f"bytes of UB, which has {chip.ub_bytes}")
    return t


def _by_block(op, dst, src, block, count: int) -> None:
    """dst = src <op> (the fp32 value broadcast in ``block``): src1 block stride 0."""
    full, rest = divmod(count, FP32_PER_REPEAT)
    for done in range(0, full, MAX_REPEATS):
        n = min(MAX_REPEATS, full - done)
        at = done * FP32_PER_REPEAT
        op(dst[at], src[at], block, repeat=RepeatParams(
            mask=FP32_PER_REPEAT, repeat_times=n, src1_blk_stride=0, src1_rep_stride=0))
    if rest:
        at = full * FP32_PER_REPEAT
        op(dst[at], src[at], block, repeat=RepeatParams(
            mask=rest, repeat_times=1, src1_blk_stride=0, src1_rep_stride=0))


class MoeGatingTopKSoftmaxKernel(Kernel):
    """One vector core's rows: yOut, expertIdxOut, rowIdxOut."""

    def init(self, x, y, expert_idx, row_idx, tiling: GatingTiling):
        t, idx = tiling, get_block_idx()
        self.t, self.row0 = t, idx * t.block_former
        self.rows = max(0, min(t.block_former, t.rows - self.row0))
        self.x_gm, self.y_gm, self.e_gm, self.r_gm = x, y, expert_idx, row_idx
        self.dtype = x.dtype
        self.wide = self.dtype.itemsize == 2
        self.ka_y, self.ka = t.k_align(self.dtype.itemsize), t.k_align(4)
        self.in_x = TQue(TPosition.VECIN, 2, name="inQueueX")
        self.pipe.init_buffer(self.in_x, 2, round_up(t.cols * self.dtype.itemsize, 32))
        self.outs = {}
        for name, size in (("outQueueY", self.ka_y * self.dtype.itemsize),
                           ("outQueueExpertIdx", self.ka * 4), ("outQueueRowIdx", self.ka * 4)):
            self.outs[name] = TQue(TPosition.VECOUT, 1, name=name)
            self.pipe.init_buffer(self.outs[name], 1, t.row_factor * size)
        self.buf = {}
        wide = round_up(t.cols * 4, 32)
        for name, nbytes in (("xFp32Buf", wide), ("sortValueBuf", wide), ("sortIndexBuf", wide),
                             ("reduceBuf", 32), ("brcbBuf", 256), ("rowBaseBuf", self.ka * 4)):
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def process(self):
        if self.rows <= 0:
            return
        t = self.t
        base = self.buf["rowBaseBuf"].get("int32")
        set_values(base, [j * t.rows for j in range(t.k)])      # ArithProgression(0, rows)
        set_flag("S_V", SYNC_EVENT_ID)
        wait_flag("S_V", SYNC_EVENT_ID)
        for start in range(0, self.rows, t.row_factor):
            self.batch(start, min(t.row_factor, self.rows - start))

    def batch(self, start: int, count: int):
        outs = self.outs
        y = outs["outQueueY"].alloc_tensor(self.dtype)
        e = outs["outQueueExpertIdx"].alloc_tensor("int32")
        r = outs["outQueueRowIdx"].alloc_tensor("int32")
        for tensor, align in ((y, self.ka_y), (e, self.ka), (r, self.ka)):
            if align != self.t.k:      # the slots' padding, which DataCopyPad reads
                vec.duplicate(tensor, 0, count * align)
        for i in range(count):
            row = self.row0 + start + i
            x = self.in_x.alloc_tensor(self.dtype)
            copy_exact(x, self.x_gm[row * self.t.cols], self.t.cols)
            self.in_x.enque(x)
            self.compute(i, row, y, e, r)
        first = (self.row0 + start) * self.t.k
        for name, tensor, gm, align in (("outQueueY", y, self.y_gm, self.ka_y),
                                        ("outQueueExpertIdx", e, self.e_gm, self.ka),
                                        ("outQueueRowIdx", r, self.r_gm, self.ka)):
            outs[name].enque(tensor)
            self.copy_out(outs[name], gm[first], count, align)

    def compute(self, i: int, row: int, y, e, r):
        t, n = self.t, self.t.cols
        x = self.in_x.deque()
        xf = self.buf["xFp32Buf"].get("float32")
        if self.wide:
            vec.cast(xf, x, "none", n)
        else:
            vec.adds(xf, x, 0.0, n)
        self.in_x.free_tensor(x)
        red, block = self.buf["reduceBuf"].get("float32"), self.buf["brcbBuf"].get("float32")
        vec.reduce_max(red, xf, n)
        brcb(block, red, 1)
        _by_block(vec.sub, xf, xf, block, n)
        vec.exp(xf, xf, n)
        vec.reduce_sum(red, xf, n)
        brcb(block, red, 1)
        _by_block(vec.div, xf, xf, block, n)
        values = self.buf["sortValueBuf"].get("float32")
        index = self.buf["sortIndexBuf"].get("uint32")
        vec.sort(values, index, xf, n)
        if self.wide:
            vec.cast(y[i * self.ka_y], values, "none" if self.dtype.name == "float16" else "rint",
                     t.k)
        else:
            vec.adds(y[i * self.ka_y], values, 0.0, t.k)
        vec.adds(e[i * self.ka], index.reinterpret_cast("int32"), 0, t.k)
        vec.adds(r[i * self.ka], self.buf["rowBaseBuf"].get("int32"), row, t.k)

    def copy_out(self, queue, gm, count: int, align: int):
        """The batch's rows of k outputs, from slots of ``align`` elements, to GM."""
        local = queue.deque()
        t, item = self.t, local.dtype.itemsize
        if t.k == align:
            copy_exact(gm, local, count * t.k)
        else:
            data_copy_pad(gm, local, DataCopyExtParams(
                block_count=count, block_len=t.k * item, src_stride=0, dst_stride=0))
        queue.free_tensor(local)
