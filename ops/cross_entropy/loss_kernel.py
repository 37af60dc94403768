"""The CrossEntropyLoss kernel on the AIV cores, one core's rows (the A2 kernel's steps as the
ops-nn arch35 full-load kernel takes them, ``cross_entropy_loss_full_load.h``: ReduceMax, x - max
and Exp, ReduceSum, (x - max) - Ln(sum) as logProb, cast out; the loss from logProb at the
target, weight and ignore mask; per-core partial sums through the workspace after SyncAll).

Per row: pass 1, each chunk in (DataCopyPad, MTE2), cast to fp32 (16-bit inputs), ReduceMax
(chunks combined by Max); the max broadcast over a block (Brcb). Pass 2: x - max (Sub with a
block-stride-0 operand), Exp, ReduceSum (chunks added in order); lse = Ln(sum), broadcast.
Pass 3: logProb = (x - max) - lse; when the chunk holds the row's target, Gather copies
logProb[target] into the row's 32-byte pick slot; Cast to the input dtype (CAST_RINT; fp32 is
written into the output buffer directly) and DataCopyPad out (MTE3). A row that fits UB is read
once (its chunk stays resident over the passes); a longer one is read once per pass.
Per batch of rows: Gather compacts the pick slots, Mul by -weight[target] (0 for an ignored row),
the scalar having set those per row (SetValue) from the targets and weights it reads from GM.
none: cast and copied out to lossOut. mean/sum: ReduceSum of the batch added to the core's
partial (and of weight[target] for mean); each core writes its partials to the workspace, SyncAll,
core 0 reads them all, ReduceSums them (loss / weight for mean), casts and writes lossOut.

Differences from CANN, and why: CANN reads per-row values into scalar registers and issues
Adds/Muls; npusim binds scalar operands when a kernel is recorded, so max and lse are broadcast
over a block (Brcb) and subtracted with block stride 0. The ignore mask and weight[target] are
set by the scalar (CANN builds them with vector compares and a gather of the weight). A target
outside [0, C) that is not ignore_index is a MemoryAccessError (the kernel would read outside
the row).
"""

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_block_num,
    sync_all,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.dsl.scalar_gm import gm_get_value, set_values
from npusim.errors import MemoryAccessError
from npusim.ops.common import round_up
from npusim.ops.common.broadcast import sub_by_block
from npusim.ops.cross_entropy.kernel import sync
from npusim.ops.cross_entropy.loss_tiling import ROW_LANES

FP32_PER_REPEAT, MAX_REPEATS, SLOT = 64, 255, 8


class CrossEntropyLossKernel(Kernel):
    """One AIV core: its rows' logProb and loss, then (mean/sum) the cross-core sum."""

    def init(self, input, target, weight, loss, log_prob, workspace, params: dict, tiling):
        t, idx = tiling, get_block_idx()
        if idx < t.front_core_num:
            self.row0, self.rows = idx * t.front_row_num, t.front_row_num
        else:
            self.rows = t.tail_row_num
            self.row0 = t.front_core_num * t.front_row_num + (idx - t.front_core_num) * self.rows
        self.x_gm, self.t_gm, self.w_gm, self.loss_gm = input, target, weight, loss
        self.lp_gm, self.ws_gm, self.tiling, self.dtype = log_prob, workspace, t, input.dtype
        self.reduction, self.ignore = params["reduction"], params["ignore_index"]
        # the weights' sum is kept for mean (the divisor); aclnnNLLLoss also outputs it for sum
        self.sum_weights = params.get("sum_weights", self.reduction == "mean")
        self.wide = self.dtype.itemsize == 2
        self.init_buffers(t)

    def init_buffers(self, t) -> None:
        b, lanes, item = t.row_batch, round_up(t.row_batch, ROW_LANES), self.dtype.itemsize
        specs = [("pickBuf", b * 32), ("compactBuf", b * 4), ("lossBuf", lanes * 4),
                 ("negWeightBuf", lanes * 4), ("maxBrcbBuf", 256), ("lseBrcbBuf", 256),
                 *((n, 32) for n in ("maxBuf", "sumBuf", "partBuf", "lseBuf", "offsetBuf",
                                     "lossAccBuf", "weightAccBuf", "resultBuf", "resultTBuf"))]
        if self.sum_weights:
            specs.append(("weightBuf", lanes * 4))
        if self.reduction == "none":
            specs.append(("lossTBuf", b * item))
        else:
            cores = round_up(get_block_num() * 4, 32)
            specs += [("lossPartialsBuf", cores), ("weightPartialsBuf", cores)]
        self.buf = {}
        for name, nbytes in specs:
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], round_up(nbytes, 32))
        chunk = t.col_chunk
        self.in_q = TQue(TPosition.VECIN, t.buffer_num, name="inputQueue")
        self.out_q = TQue(TPosition.VECOUT, t.buffer_num, name="logProbQueue")
        self.pipe.init_buffer(self.in_q, t.buffer_num, round_up(chunk * item, 32))
        self.pipe.init_buffer(self.out_q, t.buffer_num, round_up(chunk * item, 32))
        for name in ("subBuf", "tmpBuf"):
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], round_up(chunk * 4, 256))
        set_values(self.t("compactBuf", "uint32"), [SLOT * 4 * i for i in range(b)])

    def t(self, name: str, dtype: str = "float32"):
        return self.buf[name].get(dtype)

    def process(self):
        batch = self.tiling.row_batch
        for name in ("lossAccBuf", "weightAccBuf"):
            vec.duplicate(self.t(name), 0.0, SLOT)
        for start in range(0, self.rows, batch):
            count = min(batch, self.rows - start)
            vec.duplicate(self.t("pickBuf"), 0.0, count * SLOT)
            for i in range(count):
                self.process_row(i, self.row0 + start + i)
            self.batch_loss(start, count)
        if self.reduction != "none":
            self.finish()

    # -- one row -------------------------------------------------------------------------------
    def process_row(self, i: int, row: int) -> None:
        chunks = self.tiling.chunks
        resident = self.load(row, *chunks[0]) if len(chunks) == 1 else None
        for k, (c0, n) in enumerate(chunks):
            x = resident or self.load(row, c0, n)
            src = self.widen(x, n)
            vec.reduce_max(self.t("maxBuf") if k == 0 else self.t("partBuf"), src, n)
            if k:
                vec.max(self.t("maxBuf"), self.t("maxBuf"), self.t("partBuf"), 1)
            if resident is None:
                self.in_q.free_tensor(x)
        brcb(self.t("maxBrcbBuf"), self.t("maxBuf"), 1)
        for k, (c0, n) in enumerate(chunks):
            x = resident or self.load(row, c0, n)
            sub = self.t("subBuf")     # a resident 16-bit row is there in fp32 already
            src = sub if resident is not None and self.wide else self.widen(x, n)
            sub_by_block(sub, src, self.t("maxBrcbBuf"), n)
            vec.exp(self.t("tmpBuf"), sub, n)
            vec.reduce_sum(self.t("sumBuf") if k == 0 else self.t("partBuf"), self.t("tmpBuf"), n)
            if k:
                vec.add(self.t("sumBuf"), self.t("sumBuf"), self.t("partBuf"), 1)
            if resident is None:
                self.in_q.free_tensor(x)
        vec.ln(self.t("lseBuf"), self.t("sumBuf"), 1)
        brcb(self.t("lseBrcbBuf"), self.t("lseBuf"), 1)
        target = self.read_target(row)
        for c0, n in chunks:
            if resident is None:
                x = self.load(row, c0, n)
                sub_by_block(self.t("subBuf"), self.widen(x, n), self.t("maxBrcbBuf"), n)
                self.in_q.free_tensor(x)
            self.log_prob_out(i, row, c0, n, target)
        if resident is not None:
            self.in_q.free_tensor(resident)

    def load(self, row: int, c0: int, n: int):
        x = self.in_q.alloc_tensor(self.dtype)
        data_copy_pad(x, self.x_gm[row * self.tiling.cols + c0],
                      DataCopyExtParams(block_len=n * self.dtype.itemsize))
        self.in_q.enque(x)
        return self.in_q.deque()

    def widen(self, x, n: int):
        """The chunk in fp32: cast into subBuf (16-bit inputs), else the input buffer itself."""
        if not self.wide:
            return x
        vec.cast(self.t("subBuf"), x, "none", n)
        return self.t("subBuf")

    def log_prob_out(self, i: int, row: int, c0: int, n: int, target) -> None:
        y = self.out_q.alloc_tensor(self.dtype)
        lp = self.t("tmpBuf") if self.wide else y
        sub_by_block(lp, self.t("subBuf"), self.t("lseBrcbBuf"), n)
        if target is not None and c0 <= target < c0 + n:
            sync("V_S")
            set_values(self.t("offsetBuf", "uint32"), [(target - c0) * 4])
            sync("S_V")
            vec.gather(self.t("pickBuf")[i * SLOT], lp, self.t("offsetBuf", "uint32"), 0, 1)
        if self.wide:
            vec.cast(y, lp, "rint", n)
        self.out_q.enque(y)
        y = self.out_q.deque()
        data_copy_pad(self.lp_gm[row * self.tiling.cols + c0], y,
                      DataCopyExtParams(block_len=n * self.dtype.itemsize))
        self.out_q.free_tensor(y)

    def read_target(self, row: int):
        """The row's target from GM (scalar); None when it is ignore_index."""
        target = gm_get_value(self.t_gm, row)
        if target == self.ignore:
            return None
        if not 0 <= target < self.tiling.cols:
            raise MemoryAccessError(
                f"aclnnCrossEntropyLoss: target[{row}] = {target} is outside "
                f"[0, {self.tiling.cols}) and is not ignore_index ({self.ignore}): the kernel "
                f"would read outside row {row} of input")
        return target

    # -- the loss ------------------------------------------------------------------------------
    def row_weights(self, start: int, count: int) -> list:
        """weight[target] per row (1 without a weight), 0 for an ignored row."""
        out = []
        for r in range(self.row0 + start, self.row0 + start + count):
            target = self.read_target(r)
            if target is None:
                out.append(0.0)
            else:
                out.append(1.0 if self.w_gm is None else float(gm_get_value(self.w_gm, target)))
        return out

    def batch_loss(self, start: int, count: int) -> None:
        weights = self.row_weights(start, count)
        sync("V_S")
        set_values(self.t("negWeightBuf"), [-w for w in weights])
        if self.sum_weights:
            set_values(self.t("weightBuf"), weights)
        sync("S_V")
        loss = self.t("lossBuf")
        vec.gather(loss, self.t("pickBuf"), self.t("compactBuf", "uint32"), 0, count)
        vec.mul(loss, loss, self.t("negWeightBuf"), count)
        if self.reduction == "none":
            self.loss_rows_out(start, count)
            return
        part = self.t("partBuf")
        vec.reduce_sum(part, loss, count)
        vec.add(self.t("lossAccBuf"), self.t("lossAccBuf"), part, 1)
        if self.sum_weights:
            vec.reduce_sum(part, self.t("weightBuf"), count)
            vec.add(self.t("weightAccBuf"), self.t("weightAccBuf"), part, 1)

    def loss_rows_out(self, start: int, count: int) -> None:
        out = self.t("lossBuf")
        if self.wide:
            out = self.t("lossTBuf", self.dtype)
            vec.cast(out, self.t("lossBuf"), "rint", count)
        sync("V_MTE3")
        data_copy_pad(self.loss_gm[self.row0 + start], out,
                      DataCopyExtParams(block_len=count * self.dtype.itemsize))
        sync("MTE3_V")

    def total_weight_out(self, total) -> None:
        """The weights' sum, on core 0 (aclnnCrossEntropyLoss has no such output)."""

    def finish(self) -> None:
        """Partials to the workspace, SyncAll, core 0 sums every core's partials in order."""
        cores, idx = get_block_num(), get_block_idx()
        second = round_up(cores, SLOT)
        sync("V_MTE3")
        data_copy_pad(self.ws_gm[idx], self.t("lossAccBuf"), DataCopyExtParams(block_len=4))
        data_copy_pad(self.ws_gm[second + idx], self.t("weightAccBuf"),
                      DataCopyExtParams(block_len=4))
        sync_all()
        if idx != 0:
            return
        losses, weights = self.t("lossPartialsBuf"), self.t("weightPartialsBuf")
        data_copy_pad(losses, self.ws_gm[0], DataCopyExtParams(block_len=cores * 4))
        data_copy_pad(weights, self.ws_gm[second], DataCopyExtParams(block_len=cores * 4))
        sync("MTE2_V")
        result = self.t("resultBuf")
        vec.reduce_sum(result, losses, cores)
        if self.sum_weights:
            vec.reduce_sum(self.t("partBuf"), weights, cores)
            self.total_weight_out(self.t("partBuf"))
        if self.reduction == "mean":
            vec.div(result, result, self.t("partBuf"), 1)
        if self.wide:
            vec.cast(self.t("resultTBuf", self.dtype), result, "rint", 1)
            result = self.t("resultTBuf", self.dtype)
        sync("V_MTE3")
        data_copy_pad(self.loss_gm[0], result, DataCopyExtParams(block_len=self.dtype.itemsize))
