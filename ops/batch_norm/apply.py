"""The two kernels that apply per-channel values to every element: BNTrainingUpdate (forward)
and BNTrainingReduceGrad (backward), after CANN's TBE kernels of those names.

BNTrainingUpdate, per unit: the parts' sum and square-sum partials added in part order;
mean = sum x (1/M), var = square_sum x (1/M) - mean^2 (biased), invstd = 1 / sqrt(var + eps),
scale = weight x invstd (M = N x H x W, 1/M rounded to fp32 once); the unit of part 0 also
writes saveMean, saveInvstd and the updated running statistics
(running x (1 - momentum) + batch x momentum, the variance unbiased by M / (M - 1)); then every
chunk: y = ((x - mean) x scale) + bias in fp32, cast back (fp16 CAST_NONE, bf16 CAST_RINT).
CANN's BNTrainingUpdate writes the batch statistics to its batch_mean and batch_variance outputs,
which aclnnBatchNorm copies to saveMean and saveInvstd: the second holds 1 / sqrt(var + eps).

BNTrainingReduceGrad, per unit: the parts' partials of diff_scale (the weight's gradient) and
diff_offset (the bias's) added in part order, written to gradWeight and gradBias by the unit of
part 0 (in CANN BNTrainingUpdateGrad's outputs are those tensors); a = diff_scale x (1/M),
b = diff_offset x (1/M), k = weight x invstd; every chunk:
dx = ((dy - b) - ((x - mean) x invstd) x a) x k.

Not modelled: TBE's own formulas (e.g. BNTrainingReduceGrad's multiplier/addend form); the
arithmetic here is one fp32 rounding per step, reproduced by the golden.
"""

from npusim.dsl import get_block_idx
from npusim.dsl import vector as vec
from npusim.ops.batch_norm.base import BatchNormKernelBase
from npusim.ops.batch_norm.tiling import BatchNormTiling, my_units

S, Q, GAMMA, BETA, RMEAN, RVAR, MEAN, INVSTD, TMP, SCALE, ONE, T1, VU = range(13)
P0, P1, P2, P3, P4 = range(14, 19)        # pattern slots


class BNTrainingUpdateKernel(BatchNormKernelBase):
    """y, and (units of part 0) saveMean, saveInvstd and the running statistics."""

    def init(self, x, ws_sum, ws_sq, channel_in, y, channel_out, consts, tiling: BatchNormTiling,
             channels: int):
        self.x, self.y, self.parts_gm = x, y, [ws_sum, ws_sq]
        self.channel_in, self.channel_out = channel_in, channel_out   # 4 tensors each
        self.inv_m, self.eps, self.mom, self.keep, self.unbias = consts
        self.channels = channels
        self.setup(tiling, x.dtype, 1, out_chunks=True)

    def process(self):
        t = self.t
        for unit in my_units(t, get_block_idx()):
            group, part = divmod(unit, t.parts)
            self.statistics(group, part)
            w = self.f32("w")
            for offset, length in self.runs(group, part):
                self.copy_in([self.x], offset, length)
                xf, local = self.take(0, length, "xf")
                self.vop(vec.sub, w, xf, P0, length)
                self.release(0, local)
                self.vop(vec.mul, w, w, P1, length)
                self.vop(vec.add, w, w, P2, length)
                self.store(self.y, offset, w, length)

    def statistics(self, group: int, part: int):
        n, c = self.t.lanes, self.coef
        self.batch_sums(group, part)
        self.load_channels(group, self.channel_in, GAMMA)
        vec.muls(c(MEAN), c(S), self.inv_m, n)
        vec.muls(c(Q), c(Q), self.inv_m, n)
        vec.mul(c(TMP), c(MEAN), c(MEAN), n)
        vec.sub(c(Q), c(Q), c(TMP), n)                 # var (biased)
        vec.adds(c(TMP), c(Q), self.eps, n)
        vec.sqrt(c(TMP), c(TMP), n)
        vec.duplicate(c(ONE), 1.0, n)
        vec.div(c(INVSTD), c(ONE), c(TMP), n)
        vec.mul(c(SCALE), c(GAMMA), c(INVSTD), n)
        if part == 0:
            self.running(group)
        self.pattern(P0, MEAN)
        self.pattern(P1, SCALE)
        self.pattern(P2, BETA)

    def batch_sums(self, group: int, part: int):
        """coef(S), coef(Q): the parts' partials of BNTrainingReduce added in part order."""
        del part
        self.sum_partials(group, self.parts_gm, S)

    def running(self, group: int):
        n, c = self.t.lanes, self.coef
        vec.muls(c(T1), c(MEAN), self.mom, n)
        vec.muls(c(RMEAN), c(RMEAN), self.keep, n)
        vec.add(c(RMEAN), c(RMEAN), c(T1), n)
        vec.muls(c(VU), c(Q), self.unbias, n)
        vec.muls(c(VU), c(VU), self.mom, n)
        vec.muls(c(RVAR), c(RVAR), self.keep, n)
        vec.add(c(RVAR), c(RVAR), c(VU), n)
        valid = min(n, self.channels - group * n)
        self.write_channels(group, list(zip((MEAN, INVSTD, RMEAN, RVAR), self.channel_out,
                                            strict=True)), valid)


class BNTrainingReduceGradKernel(BatchNormKernelBase):
    """dx, and (units of part 0) gradWeight and gradBias."""

    def init(self, dy, x, ws_dg, ws_db, channel_in, dx, channel_out, inv_m: float,
             tiling: BatchNormTiling, channels: int):
        self.dy, self.x, self.dx, self.parts_gm = dy, x, dx, [ws_dg, ws_db]
        self.channel_in, self.channel_out = channel_in, channel_out   # (w, mean, invstd), (dw, db)
        self.inv_m, self.channels = inv_m, channels
        self.setup(tiling, x.dtype, 2, out_chunks=True)

    def process(self):
        t = self.t
        w, u = self.f32("w"), self.f32("acc0")
        for unit in my_units(t, get_block_idx()):
            group, part = divmod(unit, t.parts)
            self.coefficients(group, part)
            for offset, length in self.runs(group, part):
                self.copy_in([self.dy, self.x], offset, length)
                xf, xl = self.take(1, length, "xf")
                self.vop(vec.sub, w, xf, P0, length)
                self.release(1, xl)
                self.vop(vec.mul, w, w, P1, length)
                self.vop(vec.mul, w, w, P2, length)
                dyf, dl = self.take(0, length, "dyf")
                self.vop(vec.sub, u, dyf, P3, length)
                self.release(0, dl)
                vec.sub(u, u, w, length)
                self.vop(vec.mul, u, u, P4, length)
                self.store(self.dx, offset, u, length)

    def coefficients(self, group: int, part: int):
        n, c = self.t.lanes, self.coef
        dg, db, gamma, mean, invstd, a, b, k = range(8)
        self.sum_partials(group, self.parts_gm, dg)
        self.load_channels(group, self.channel_in, gamma)
        if part == 0:
            valid = min(n, self.channels - group * n)
            self.write_channels(group, list(zip((dg, db), self.channel_out, strict=True)), valid)
        vec.muls(c(a), c(dg), self.inv_m, n)
        vec.muls(c(b), c(db), self.inv_m, n)
        vec.mul(c(k), c(gamma), c(invstd), n)
        for pat, src in ((P0, mean), (P1, invstd), (P2, a), (P3, b), (P4, k)):
            self.pattern(pat, src)
