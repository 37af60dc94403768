"""aclnnLogSoftmax and aclnnLogSoftmaxBackward over the class axis of (N, C), the training
series' loss as torch runs ``cross_entropy`` there: ``log_softmax`` then ``nll_loss``
(``nll_loss.py``); the backward ``nll_loss_backward`` then ``log_softmax_backward``.

    out[n, c]       = (x[n, c] - max_n) - ln(sum_c exp(x[n, c] - max_n))
    gradInput[n, c] = g[n, c] - exp(out[n, c]) x sum_c g[n, c]

Kernels (one each, CANN's TBE LogSoftmaxV2 and LogSoftmaxGrad on the training series): rows
split over the vector cores (front/tail), each row through UB. The forward is the per-row
log-softmax of aclnnCrossEntropyLoss's kernel (``loss_kernel.py``: ReduceMax, x - max, Exp,
ReduceSum, Ln, (x - max) - lse, its chunks when a row does not fit), without the loss. The
backward, per row: gradOutput and output in (fp16 widened to fp32), ReduceSum of gradOutput
broadcast over a block (Brcb), Exp of output, Mul by the sum (block stride 0), Sub from
gradOutput, cast and out. Not modelled: CANN's TBE schedules (npusim's row loop stands for
them), a dim other than the class axis, a row of the backward longer than UB holds.
"""

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.engine.sequence import OpRun
from npusim.errors import TilingError
from npusim.ops.common import resolve_chip, round_up
from npusim.ops.common.broadcast import mul_by_block
from npusim.ops.common.contiguous import to_gm
from npusim.ops.cross_entropy.loss_kernel import (
    CrossEntropyLossKernel,
)
from npusim.ops.cross_entropy.loss_tiling import cross_entropy_loss_tiling
from npusim.ops.cross_entropy.nll_args import (
    OP_LSM,
    OP_LSM_GRAD,
    check_log_softmax,
    check_log_softmax_backward,
)


class LogSoftmaxKernel(CrossEntropyLossKernel):
    """aclnnCrossEntropyLoss's per-row log-softmax, every row of the core, no target."""

    def init(self, input, out, tiling):
        super().init(input, None, None, None, out, None,
                     dict(reduction="none", ignore_index=None), tiling)

    def read_target(self, row: int):
        return None

    def process(self):
        for i in range(self.rows):
            self.process_row(0, self.row0 + i)


def core_rows(t, idx: int) -> tuple:
    """(first row, rows) of core ``idx`` in the front/tail split."""
    if idx < t.front_core_num:
        return idx * t.front_row_num, t.front_row_num
    return t.front_core_num * t.front_row_num + (idx - t.front_core_num) * t.tail_row_num, \
        t.tail_row_num


class LogSoftmaxGradKernel(Kernel):
    """One vector core's rows, each resident in UB."""

    def init(self, grad, output, out, tiling):
        t = tiling
        self.g_gm, self.y_gm, self.out_gm, self.t, self.dtype = grad, output, out, t, grad.dtype
        self.row0, self.rows = core_rows(t, get_block_idx())
        self.wide = self.dtype.itemsize == 2
        item, cols = self.dtype.itemsize, t.cols
        self.g_q, self.y_q = TQue(TPosition.VECIN, 1, name="gradQueue"), TQue(
            TPosition.VECIN, 1, name="outputQueue")
        self.o_q = TQue(TPosition.VECOUT, 1, name="gradInputQueue")
        for q in (self.g_q, self.y_q, self.o_q):
            self.pipe.init_buffer(q, 1, round_up(cols * item, 32))
        self.bufs = {}
        specs = [("sumBuf", 32), ("sumBrcbBuf", 256), ("expBuf", round_up(cols * 4, 256))]
        if self.wide:
            specs += [("gradF", round_up(cols * 4, 256)), ("outputF", round_up(cols * 4, 256))]
        for name, nbytes in specs:
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], nbytes)

    def buf(self, name: str):
        return self.bufs[name].get("float32")

    def process(self):
        for i in range(self.rows):
            row = self.row0 + i
            g, y = self.load(self.g_q, self.g_gm, row), self.load(self.y_q, self.y_gm, row)
            self.compute(g, y)
            self.copy_out(row)

    def load(self, que, gm, row: int):
        x = que.alloc_tensor(self.dtype)
        data_copy_pad(x, gm[row * self.t.cols], DataCopyExtParams(
            block_len=self.t.cols * self.dtype.itemsize))
        que.enque(x)
        return que.deque()

    def compute(self, g, y):
        n, e = self.t.cols, self.buf("expBuf")
        gf, yf = (self.buf("gradF"), self.buf("outputF")) if self.wide else (g, y)
        if self.wide:
            vec.cast(gf, g, "none", n)
            vec.cast(yf, y, "none", n)
        vec.reduce_sum(self.buf("sumBuf"), gf, n)
        brcb(self.buf("sumBrcbBuf"), self.buf("sumBuf"), 1)
        vec.exp(e, yf, n)
        mul_by_block(e, e, self.buf("sumBrcbBuf"), n)
        out = self.o_q.alloc_tensor(self.dtype)
        if self.wide:
            vec.sub(e, gf, e, n)
            vec.cast(out, e, "rint", n)
        else:
            vec.sub(out, gf, e, n)
        self.g_q.free_tensor(g)
        self.y_q.free_tensor(y)
        self.o_q.enque(out)

    def copy_out(self, row: int):
        out = self.o_q.deque()
        data_copy_pad(self.out_gm[row * self.t.cols], out, DataCopyExtParams(
            block_len=self.t.cols * self.dtype.itemsize))
        self.o_q.free_tensor(out)


def log_softmax(self_, dim=-1, *, chip="atlas-training", tiling=None, mode="timed",
                numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnLogSoftmax on ``chip`` (the training series): ``outputs["out"]``."""
    chip = resolve_chip(chip)
    x = check_log_softmax(chip, self_, dim)
    t = cross_entropy_loss_tiling(chip, *x.shape, x.dtype, reduction="none", overrides=tiling,
                                  op=OP_LSM)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x_gm = to_gm(run, "self", x)
    out = run.gm.tensor("out", x.dtype, x.size)
    run.launch(LogSoftmaxKernel, block_dim=t.block_dim, name="LogSoftmaxV2", impl="tbe",
               args=dict(input=x_gm, out=out, tiling=t))
    return run.result({"out": (out, x.shape)}, tiling=t)


def log_softmax_backward(grad_output, output, dim=-1, *, chip="atlas-training", tiling=None,
                         mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnLogSoftmaxBackward on ``chip`` (the training series): ``outputs["out"]``."""
    chip = resolve_chip(chip)
    g, y = check_log_softmax_backward(chip, grad_output, output, dim)
    t = cross_entropy_loss_tiling(chip, *g.shape, g.dtype, reduction="none", overrides=tiling,
                                  op=OP_LSM_GRAD)
    if t.col_chunk != t.cols:
        raise TilingError(f"{OP_LSM_GRAD}: a row of {t.cols} does not fit {chip.name}'s UB: "
                          "npusim's kernel keeps a row resident")
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    g_gm, y_gm = to_gm(run, "gradOutput", g), to_gm(run, "output", y)
    out = run.gm.tensor("out", g.dtype, g.size)
    run.launch(LogSoftmaxGradKernel, block_dim=t.block_dim, name="LogSoftmaxGrad", impl="tbe",
               args=dict(grad=g_gm, output=y_gm, out=out, tiling=t))
    return run.result({"out": (out, g.shape)}, tiling=t)


