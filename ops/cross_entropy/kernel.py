"""The CrossEntropyLossGrad kernel on the AIV cores (kernels.md §3(b)), one core's rows.

Per batch of resident rows: DataCopyPad the targets (int64) -> Cast to fp32 -> Duplicate
ignore_index -> Compare ne -> Select 1/0: the ignore mask; with a weight, the scalar reads
weight[target] from GM row by row (SetValue into the target weight, 0 for ignored negative
targets) and Mul gives mask x weight. The row scale: for mean, each core's ReduceSum of mask x
weight (over its batches, added in order) goes to workspace[core] (MTE3), SyncAll, then every
core copies all partials in and ReduceSums them in the same order (so every core has the same
den, deterministically), scale = gradLoss / den; for sum, scale = gradLoss; for none, the
gradLoss rows are copied in and cast. nll = mask x weight x scale per row.
Per row, per column chunk: DataCopyPad logProb in (MTE2) -> Cast to fp32 (16-bit) -> Exp ->
multiply by the row's nll -> the scalar reads the row's target from GM and, in the chunk holding
it, subtracts nll at that column (read-modify-write, with V->S and S->V flags) -> Cast back with
round-to-nearest-even (or copy, fp32) -> DataCopyPad out (MTE3). Tail chunks are fenced with
PipeBarrier(ALL) as CANN's kernel fences them.

Differences from CANN, and why: CANN reads nll_row into a scalar register (GetValue) and issues
Muls; npusim binds scalar operands when the kernel is recorded, so the kernel broadcasts nll
over a 32-byte block per row (Brcb) and multiplies with block stride 0 (Mul): one Brcb per
batch, and Mul's slope (2.13 cycles per repeat) instead of Muls's (1.0). The scalar's GM reads
(targets, weights, gradLoss) are of inputs, read when the kernel is recorded (see
``isa/scalar_gm.py``). Rows beyond ``row_batch`` are walked in batches (CANN keeps all resident).
A target outside [0, C) that is not ignore_index is a MemoryAccessError (CANN writes out of
bounds).
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy,
    data_copy_pad,
    get_block_idx,
    get_block_num,
    pipe_barrier,
    set_flag,
    sync_all,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.dsl.scalar_gm import get_values, gm_get_value, scalar_sub_value, set_values
from npusim.errors import MemoryAccessError
from npusim.ops.common import ceil_div, round_up
from npusim.ops.common.broadcast import mul_by_block
from npusim.ops.cross_entropy.tiling import BRCB_REPEAT_BYTES, ROW_LANES, CrossEntropyLossGradTiling

FP32_PER_BLOCK = 8        # fp32 elements in one 32-byte block
SYNC_EVENT_ID = 3         # the queues take event ids 0 and 1 of each pipe pair


def sync(event: str) -> None:
    """SetFlag then WaitFlag of one hard event, on an event id the queues do not use."""
    set_flag(event, SYNC_EVENT_ID)
    wait_flag(event, SYNC_EVENT_ID)


class CrossEntropyLossGradKernel(Kernel):
    """One AIV core: its rows' metadata and scale, then every row chunk by chunk."""

    def init(self, grad_loss, log_prob, target, weight, x_grad, workspace, params: dict,
             tiling: CrossEntropyLossGradTiling):
        t, idx = tiling, get_block_idx()
        if idx < t.front_core_num:
            self.row0, self.rows = idx * t.front_row_num, t.front_row_num
        else:
            self.rows = t.tail_row_num
            self.row0 = t.front_core_num * t.front_row_num + (idx - t.front_core_num) * self.rows
        self.g_gm, self.x_gm, self.t_gm, self.w_gm = grad_loss, log_prob, target, weight
        self.y_gm, self.ws_gm, self.tiling, self.dtype = x_grad, workspace, t, log_prob.dtype
        self.reduction, self.ignore = params["reduction"], params["ignore_index"]
        self.keep = 1.0 - params["label_smoothing"]
        self.wide = self.dtype.itemsize == 2
        self.init_row_buffers(t.row_batch)
        self.init_chunk_buffers(t.chunk_buffer, t.buffer_num)

    def init_row_buffers(self, batch: int) -> None:
        lanes = round_up(batch, ROW_LANES)
        specs = [("targetBuf", batch * 8), ("targetCastBuf", lanes * 4), ("scratchBuf", lanes * 4),
                 ("maskBuf", lanes * 4), ("nllBuf", lanes * 4), ("cmpBuf", lanes // 8),
                 ("nllBrcbBuf", round_up(batch, 8) * 32)]
        if self.w_gm is not None:
            specs.append(("targetWeightBuf", lanes * 4))
        if self.reduction == "none":
            specs += [("gradLossBuf", batch * self.dtype.itemsize), ("gradLossFp32Buf", lanes * 4)]
        if self.reduction == "mean":
            specs += [("partialsBuf", round_up(get_block_num(), ROW_LANES) * 4),
                      *((name, 32) for name in ("accBuf", "sumBuf", "denBuf", "gBuf", "scaleBuf")),
                      ("scaleBrcbBuf", BRCB_REPEAT_BYTES)]
        self.buf = {}
        for name, nbytes in specs:
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def init_chunk_buffers(self, elements: int, buffer_num: int) -> None:
        nbytes = round_up(elements * self.dtype.itemsize, 32)
        self.in_q = TQue(TPosition.VECIN, buffer_num, name="inQueueLogProb")
        self.out_q = TQue(TPosition.VECOUT, buffer_num, name="outQueueXGrad")
        self.pipe.init_buffer(self.in_q, buffer_num, nbytes)
        self.pipe.init_buffer(self.out_q, buffer_num, nbytes)
        self.work = TBuf(TPosition.VECCALC, name="workFp32Buf")
        self.pipe.init_buffer(self.work, round_up(elements, FP32_PER_BLOCK) * 4)

    def t(self, name: str, dtype: str = "float32"):
        return self.buf[name].get(dtype)

    # -- the schedule --------------------------------------------------------------------------
    def process(self):
        batch = self.tiling.row_batch
        starts = list(range(0, self.rows, batch))
        loaded = None
        if self.reduction == "mean":
            loaded = self.weight_sum(starts, batch)
        for start in starts:
            count = min(batch, self.rows - start)
            if loaded != start:
                self.load_rows(start, count, first=loaded is None and start == 0)
            loaded = None
            self.row_scale(count)
            for i in range(count):
                self.process_row(i, self.row0 + start + i)

    def process_row(self, i: int, row: int) -> None:
        t = self.tiling
        chunks = [(k * t.col_chunk, t.col_chunk) for k in range(t.col_loop)]
        if t.col_tail:
            chunks.append((t.col_loop * t.col_chunk, t.col_tail))
        for c0, n in chunks:
            self.copy_in(row, c0, n)
            self.compute(i, row, c0, n)
            self.copy_out(row, c0, n)
        if t.col_tail:
            pipe_barrier(Pipe.ALL)

    # -- row metadata ----------------------------------------------------------------------------
    def load_rows(self, start: int, count: int, first: bool) -> None:
        """Targets (and gradLoss rows for none) in; mask x weight into maskBuf."""
        if not first:
            sync("V_MTE2")      # the previous batch's vector reads are done
        row = self.row0 + start
        data_copy_pad(self.t("targetBuf", "int64"), self.t_gm[row],
                      DataCopyExtParams(block_len=count * 8))
        if self.reduction == "none":
            g = self.t("gradLossBuf", self.dtype)
            data_copy_pad(g, self.g_gm[row], DataCopyExtParams(block_len=count * g.dtype.itemsize))
        sync("MTE2_V")
        tgt, scratch, mask = self.t("targetCastBuf"), self.t("scratchBuf"), self.t("maskBuf")
        bits = self.t("cmpBuf", "uint8")
        vec.cast(tgt, self.t("targetBuf", "int64"), "rint", count)
        vec.duplicate(scratch, float(self.ignore), count)
        vec.compare(bits, tgt, scratch, "ne", count)
        vec.duplicate(scratch, 1.0, count)
        vec.select(mask, bits, scratch, 0.0, count)
        if self.w_gm is not None:
            self.load_weights(row, count)
            vec.mul(mask, mask, self.t("targetWeightBuf"), count)

    def load_weights(self, row: int, count: int) -> None:
        """The scalar reads weight[target] from GM for each row (0 for ignored negatives)."""
        sync("V_S")
        values = []
        for i in range(count):
            target = self.read_target(row + i)
            values.append(0.0 if target is None and self.ignore < 0 else gm_get_value(
                self.w_gm, self.ignore if target is None else target))
        set_values(self.t("targetWeightBuf"), values)    # SetValue row by row
        sync("S_V")

    def read_target(self, row: int):
        """The row's target from GM (scalar); None when it is ignore_index; out of range is an
        error, never a write outside the row."""
        target = gm_get_value(self.t_gm, row)
        if target == self.ignore:
            return None
        cols = self.tiling.cols
        if not 0 <= target < cols:
            raise MemoryAccessError(
                f"aclnnCrossEntropyLossGrad: target[{row}] = {target} is outside [0, {cols}) "
                f"and is not ignore_index ({self.ignore}): the kernel would write outside "
                f"row {row} of xGradOut")
        return target

    def weight_sum(self, starts: list, batch: int):
        """mean: this core's sum of mask x weight to the workspace, SyncAll, den from every
        core's partial (same order on every core), scale = gradLoss / den. Returns the start
        of the batch still loaded."""
        acc, part = self.t("accBuf"), self.t("sumBuf")
        vec.duplicate(acc, 0.0, FP32_PER_BLOCK)
        for start in starts:
            count = min(batch, self.rows - start)
            self.load_rows(start, count, first=start == 0)
            vec.reduce_sum(part, self.t("maskBuf"), count)
            vec.add(acc, acc, part, 1)
        sync("V_MTE3")
        data_copy_pad(self.ws_gm[get_block_idx()], acc, DataCopyExtParams(block_len=4))
        sync_all()
        cores = get_block_num()
        partials, den = self.t("partialsBuf"), self.t("denBuf")
        data_copy_pad(partials, self.ws_gm[0], DataCopyExtParams(block_len=cores * 4))
        sync("MTE2_V")
        vec.reduce_sum(den, partials, cores)
        g = self.t("gBuf")
        vec.duplicate(g, self.grad_scalar(), 1)
        vec.div(self.t("scaleBuf"), g, den, 1)
        brcb(self.t("scaleBrcbBuf"), self.t("scaleBuf"), 1)
        return starts[-1]

    def grad_scalar(self) -> float:
        """gradLoss (0-D) read by the scalar from GM, times (1 - label_smoothing), in fp32."""
        g = np.float32(gm_get_value(self.g_gm, 0))
        return float(g * np.float32(self.keep))

    def row_scale(self, count: int) -> None:
        """nll per row = mask x weight x scale, its broadcast blocks (Brcb), and the scalar's
        copy of it (GetValue row by row) for the target columns."""
        mask, nll = self.t("maskBuf"), self.t("nllBuf")
        sync("S_V")             # the scalar's reads of the previous batch's nll are done
        if self.reduction == "mean":
            mul_by_block(nll, mask, self.t("scaleBrcbBuf"), count)
        elif self.reduction == "sum":
            vec.muls(nll, mask, self.grad_scalar(), count)
        else:
            g32, g = self.t("gradLossFp32Buf"), self.t("gradLossBuf", self.dtype)
            if self.wide:
                vec.cast(g32, g, "none", count)
                vec.muls(g32, g32, self.keep, count)
            else:
                vec.muls(g32, g, self.keep, count)
            vec.mul(nll, g32, mask, count)
        brcb(self.t("nllBrcbBuf"), nll, ceil_div(count, FP32_PER_BLOCK))
        sync("V_S")
        get_values(nll, count)

    # -- one column chunk ------------------------------------------------------------------------
    def copy_in(self, row: int, c0: int, n: int) -> None:
        x = self.in_q.alloc_tensor(self.dtype)
        data_copy_pad(x, self.x_gm[row * self.tiling.cols + c0],
                      DataCopyExtParams(block_len=n * self.dtype.itemsize))
        self.in_q.enque(x)

    def compute(self, i: int, row: int, c0: int, n: int) -> None:
        x, w = self.in_q.deque(), self.work.get("float32")
        if self.wide:
            vec.cast(w, x, "none", n)
            vec.exp(w, w, n)
        else:
            vec.exp(w, x, n)
        self.in_q.free_tensor(x)
        mul_by_block(w, w, self.t("nllBrcbBuf")[i * FP32_PER_BLOCK], n)
        target = self.read_target(row)
        if target is not None and c0 <= target < c0 + n:
            sync("V_S")
            scalar_sub_value(w, target - c0, self.t("nllBuf"), i, src_loaded=True)
            sync("S_V")
        y = self.out_q.alloc_tensor(self.dtype)
        if self.wide:
            vec.cast(y, w, "rint", n)
        else:
            data_copy(y, w, round_up(n, FP32_PER_BLOCK))
        self.out_q.enque(y)

    def copy_out(self, row: int, c0: int, n: int) -> None:
        y = self.out_q.deque()
        data_copy_pad(self.y_gm[row * self.tiling.cols + c0], y,
                      DataCopyExtParams(block_len=n * self.dtype.itemsize))
        self.out_q.free_tensor(y)
