"""aclnnNLLLoss and aclnnNLLLossBackward on (N, C) log-probabilities (the training series'
loss after ``log_softmax.py``):

    l_n         = -w[t_n] x self[n, t_n]   (0 where t_n = ignoreIndex)
    out         = l (none, (N,)), sum_n l_n (sum, (1,)), sum_n l_n / totalWeight (mean, (1,))
    totalWeight = sum_n w[t_n] (0 where ignored; mean and sum; none: not written, npusim's 0)
    gradInput[n, t_n] = -w[t_n] x g (sum), x g / totalWeight (mean), x g_n (none); 0 elsewhere

Kernels (CANN's NLLLoss and NLLLossGrad on the training series): rows split over the vector
cores (front/tail). NLLLoss is aclnnCrossEntropyLoss's kernel (``loss_kernel.py``) without the
log-softmax: per row, the element self[n, t_n] in by a 4-byte DataCopyPad into the row's pick
slot, then per batch of rows the same Gather of the slots, Mul by -w[t] (the scalar reads the
targets and weights from GM), the per-core partial sums through a GM workspace after SyncAll,
core 0 summing them in order (deterministic; CANN's default is not, its doc says); the weights'
sum is kept for mean and sum. NLLLossGrad, per batch of rows: -w[t_n] set per row slot by the
scalar, times g / totalWeight (Div once, broadcast over a block) or the row's g_n (a 4-byte
DataCopyPad a row), then each row written: a zero row, then its one value at t_n. Not modelled:
CANN's TBE schedules, FLOAT16 (npusim models FLOAT), a 1-D self.
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    data_copy_pad,
    get_block_idx,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.dsl.scalar_gm import gm_get_value, set_values
from npusim.engine.sequence import OpRun
from npusim.errors import MemoryAccessError
from npusim.ops.common import resolve_chip, round_up
from npusim.ops.common.broadcast import mul_by_block
from npusim.ops.common.contiguous import to_gm
from npusim.ops.cross_entropy.kernel import sync
from npusim.ops.cross_entropy.log_softmax import core_rows
from npusim.ops.cross_entropy.loss_kernel import SLOT, CrossEntropyLossKernel
from npusim.ops.cross_entropy.loss_tiling import cross_entropy_loss_tiling, workspace_bytes
from npusim.ops.cross_entropy.nll_args import (
    OP_NLL,
    OP_NLL_GRAD,
    check_nll_loss,
    check_nll_loss_backward,
)

F32 = np.float32


class NLLLossKernel(CrossEntropyLossKernel):
    """aclnnCrossEntropyLoss's loss steps on log-probabilities already made."""

    def init(self, input, target, weight, out, total_weight, workspace, params, tiling):
        self.tw_gm = total_weight
        super().init(input, target, weight, out, None, workspace,
                     dict(params, sum_weights=params["reduction"] != "none"), tiling)

    def process(self):
        batch = self.tiling.row_batch
        for name in ("lossAccBuf", "weightAccBuf"):
            vec.duplicate(self.t(name), 0.0, SLOT)
        for start in range(0, self.rows, batch):
            count = min(batch, self.rows - start)
            vec.duplicate(self.t("pickBuf"), 0.0, count * SLOT)
            sync("V_MTE2")
            for i in range(count):
                self.pick(i, self.row0 + start + i)
            sync("MTE2_V")
            self.batch_loss(start, count)
        if self.reduction != "none":
            self.finish()

    def pick(self, i: int, row: int) -> None:
        target = self.read_target(row)
        if target is not None:
            data_copy_pad(self.t("pickBuf")[i * SLOT], self.x_gm[row * self.tiling.cols + target],
                          DataCopyExtParams(block_len=4))

    def total_weight_out(self, total) -> None:
        sync("V_MTE3")
        data_copy_pad(self.tw_gm[0], total, DataCopyExtParams(block_len=4))


class NLLLossGradKernel(Kernel):
    """One vector core's rows of gradInput: zeros and the one value at the target."""

    def init(self, grad, target, weight, total_weight, out, params: dict, tiling):
        t = tiling
        self.g_gm, self.t_gm, self.w_gm, self.tw_gm, self.out_gm = (grad, target, weight,
                                                                    total_weight, out)
        self.t, self.reduction, self.ignore = t, params["reduction"], params["ignore_index"]
        self.row0, self.rows = core_rows(t, get_block_idx())
        self.bufs = {}
        slots = t.row_batch * SLOT * 4
        for name, nbytes in (("zeroBuf", round_up(t.cols * 4, 32)), ("negWeightBuf", slots),
                             ("gradBuf", slots), ("valueBuf", slots), ("scaleBuf", 32),
                             ("totalBuf", 32), ("scaleBrcbBuf", 256)):
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], nbytes)

    def buf(self, name: str):
        return self.bufs[name].get("float32")

    def process(self):
        vec.duplicate(self.buf("zeroBuf"), 0.0, self.t.cols)
        vec.duplicate(self.buf("negWeightBuf"), 0.0, self.t.row_batch * SLOT)
        if self.reduction != "none":
            self.scale()
        for start in range(0, self.rows, self.t.row_batch):
            self.batch(start, min(self.t.row_batch, self.rows - start))

    def scale(self) -> None:
        """g (sum) or g / totalWeight (mean), broadcast over a block."""
        sync("V_MTE2")
        data_copy_pad(self.buf("scaleBuf"), self.g_gm[0], DataCopyExtParams(block_len=4))
        if self.reduction == "mean":
            data_copy_pad(self.buf("totalBuf"), self.tw_gm[0], DataCopyExtParams(block_len=4))
        sync("MTE2_V")
        if self.reduction == "mean":
            vec.div(self.buf("scaleBuf"), self.buf("scaleBuf"), self.buf("totalBuf"), 1)
        brcb(self.buf("scaleBrcbBuf"), self.buf("scaleBuf"), 1)

    def targets(self, start: int, count: int) -> list:
        """The rows' targets (None: ignored) as the scalar reads them from GM."""
        out = []
        for row in range(self.row0 + start, self.row0 + start + count):
            target = int(gm_get_value(self.t_gm, row))
            if target == self.ignore:
                out.append(None)
                continue
            if not 0 <= target < self.t.cols:
                raise MemoryAccessError(
                    f"{OP_NLL_GRAD}: target[{row}] = {target} is outside [0, {self.t.cols}) and "
                    f"is not ignoreIndex ({self.ignore}): the kernel would write outside row "
                    f"{row} of gradInput")
            out.append(target)
        return out

    def batch(self, start: int, count: int) -> None:
        targets = self.targets(start, count)
        neg = [0.0 if t is None else -float(gm_get_value(self.w_gm, t)) for t in targets]
        sync("V_S")
        for i, w in enumerate(neg):
            set_values(self.buf("negWeightBuf")[i * SLOT], [w])
        sync("S_V")
        n, value = count * SLOT, self.buf("valueBuf")
        if self.reduction == "none":
            sync("V_MTE2")
            for i in range(count):
                data_copy_pad(self.buf("gradBuf")[i * SLOT], self.g_gm[self.row0 + start + i],
                              DataCopyExtParams(block_len=4))
            sync("MTE2_V")
            vec.mul(value, self.buf("negWeightBuf"), self.buf("gradBuf"), n)
        else:
            mul_by_block(value, self.buf("negWeightBuf"), self.buf("scaleBrcbBuf"), n)
        sync("V_MTE3")
        for i, target in enumerate(targets):
            row = self.row0 + start + i
            data_copy_pad(self.out_gm[row * self.t.cols], self.buf("zeroBuf"),
                          DataCopyExtParams(block_len=self.t.cols * 4))
            if target is not None:
                data_copy_pad(self.out_gm[row * self.t.cols + target], value[i * SLOT],
                              DataCopyExtParams(block_len=4))
        sync("MTE3_V")


def _tiling(chip, op, a, tiling):
    return cross_entropy_loss_tiling(chip, *a.self_.shape, a.self_.dtype, reduction=a.reduction,
                                     overrides=tiling, op=op)


def nll_loss(self_, target, weight, reduction=1, ignore_index=-100, *, chip="atlas-training",
             tiling=None, mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnNLLLoss on ``chip`` (the training series): ``outputs["out"]`` ((N,) for
    reduction 0, else (1,)) and ``outputs["totalWeightOut"]`` ((1,))."""
    chip = resolve_chip(chip)
    a = check_nll_loss(chip, self_, target, weight, reduction, ignore_index)
    t = _tiling(chip, OP_NLL, a, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    x_gm = to_gm(run, "self", a.self_)
    t_gm = run.gm.tensor("target", a.target.dtype, a.target.size, np.ascontiguousarray(a.target))
    w_gm = run.gm.tensor("weight", F32, a.weight.size, np.ascontiguousarray(a.weight))
    shape = (a.self_.shape[0],) if a.reduction == "none" else (1,)
    out, total = run.gm.tensor("out", F32, shape[0]), run.gm.tensor("totalWeightOut", F32, 1)
    ws = workspace_bytes(t, a.reduction)
    ws_gm = run.gm.tensor("workspace", F32, ws // 4) if ws else None
    run.launch(NLLLossKernel, block_dim=t.block_dim, name="NLLLoss", impl="tbe",
               args=dict(input=x_gm, target=t_gm, weight=w_gm, out=out, total_weight=total,
                         workspace=ws_gm, params=dict(reduction=a.reduction,
                                                      ignore_index=a.ignore_index), tiling=t))
    return run.result({"out": (out, shape), "totalWeightOut": (total, (1,))}, tiling=t,
                      workspace_bytes=ws)


def nll_loss_backward(grad_output, self_, target, weight, reduction=1, ignore_index=-100,
                      total_weight=None, *, chip="atlas-training", tiling=None, mode="timed",
                      numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnNLLLossBackward on ``chip`` (the training series): ``outputs["out"]``,
    self's shape."""
    chip = resolve_chip(chip)
    g, tw, a = check_nll_loss_backward(chip, grad_output, self_, target, weight, reduction,
                                       ignore_index, total_weight)
    t = _tiling(chip, OP_NLL_GRAD, a, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    to_gm(run, "self", a.self_)               # its shape only
    g_gm = run.gm.tensor("gradOutput", F32, g.size, np.ascontiguousarray(g).reshape(-1))
    tw_gm = run.gm.tensor("totalWeight", F32, 1, np.ascontiguousarray(tw).reshape(-1))
    t_gm = run.gm.tensor("target", a.target.dtype, a.target.size, np.ascontiguousarray(a.target))
    w_gm = run.gm.tensor("weight", F32, a.weight.size, np.ascontiguousarray(a.weight))
    out = run.gm.tensor("out", F32, a.self_.size)
    run.launch(NLLLossGradKernel, block_dim=t.block_dim, name="NLLLossGrad", impl="tbe",
               args=dict(grad=g_gm, target=t_gm, weight=w_gm, total_weight=tw_gm, out=out,
                         params=dict(reduction=a.reduction, ignore_index=a.ignore_index),
                         tiling=t))
    return run.result({"out": (out, a.self_.shape)}, tiling=t)
