"""The two statistics kernels: BNTrainingReduce (forward: per channel the sum and the sum of
squares of x) and BNTrainingUpdateGrad (backward: per channel the sum of dy x x_hat, the weight's
gradient, and the sum of dy, the bias's), after CANN's TBE kernels of those names.

Per unit (one channel group over one slice of the batch): two fp32 accumulators of ``tile``
elements start at zero; every chunk of the unit's runs comes in (DataCopy, double buffered),
is cast to fp32 (16-bit activations) and added in elementwise; at the end each accumulator is
halved down to the group's lanes and written as the unit's partial to a [parts, channels] fp32
workspace. The kernel after it adds the partials in part order. BNTrainingUpdateGrad computes
x_hat = (x - mean) x invstd with the saved statistics as pattern operands (``base.py``).

Not modelled: TBE's own split (CANN adds the cores' partials into one output by atomic adds; the
workspace and the fixed order here keep the result reproducible), its reduce instructions.
"""

from npusim.dsl import get_block_idx
from npusim.dsl import vector as vec
from npusim.ops.batch_norm.base import BatchNormKernelBase
from npusim.ops.batch_norm.tiling import BatchNormTiling, my_units

P_MEAN, P_INVSTD = 8, 9         # coefficient slots of the backward's patterns


class BNTrainingReduceKernel(BatchNormKernelBase):
    """sum[c] and square_sum[c] partials of one core's units."""

    def init(self, x, ws_sum, ws_sq, tiling: BatchNormTiling):
        self.x, self.gms = x, [ws_sum, ws_sq]
        self.setup(tiling, x.dtype, 1, out_chunks=False)

    def process(self):
        t = self.t
        acc_s, acc_q, sq = self.f32("acc0"), self.f32("acc1"), self.f32("w")
        for unit in my_units(t, get_block_idx()):
            group, part = divmod(unit, t.parts)
            vec.duplicate(acc_s, 0.0, t.tile)
            vec.duplicate(acc_q, 0.0, t.tile)
            for offset, length in self.runs(group, part):
                self.copy_in([self.x], offset, length)
                xf, local = self.take(0, length, "xf")
                vec.add(acc_s, acc_s, xf, length)
                vec.mul(sq, xf, xf, length)
                vec.add(acc_q, acc_q, sq, length)
                self.release(0, local)
            self.fold_out([acc_s, acc_q], self.gms, group, part)


class BNTrainingUpdateGradKernel(BatchNormKernelBase):
    """diff_scale[c] = sum dy x (x - mean) x invstd and diff_offset[c] = sum dy partials."""

    def init(self, dy, x, mean, invstd, ws_dg, ws_db, tiling: BatchNormTiling):
        self.dy, self.x, self.mean, self.invstd = dy, x, mean, invstd
        self.gms = [ws_dg, ws_db]
        self.setup(tiling, x.dtype, 2, out_chunks=False)

    def process(self):
        t = self.t
        for unit in my_units(t, get_block_idx()):
            group, part = divmod(unit, t.parts)
            self.load_channels(group, [self.mean, self.invstd])
            self.pattern(P_MEAN, 0)
            self.pattern(P_INVSTD, 1)
            self.unit(group, part)

    def unit(self, group: int, part: int):
        t = self.t
        acc_g, acc_b, w = self.f32("acc0"), self.f32("acc1"), self.f32("w")
        vec.duplicate(acc_g, 0.0, t.tile)
        vec.duplicate(acc_b, 0.0, t.tile)
        for offset, length in self.runs(group, part):
            self.copy_in([self.dy, self.x], offset, length)
            xf, xl = self.take(1, length, "xf")
            self.vop(vec.sub, w, xf, P_MEAN, length)
            self.release(1, xl)
            self.vop(vec.mul, w, w, P_INVSTD, length)
            dyf, dl = self.take(0, length, "dyf")
            vec.mul(w, w, dyf, length)
            vec.add(acc_g, acc_g, w, length)
            vec.add(acc_b, acc_b, dyf, length)
            self.release(0, dl)
        self.fold_out([acc_g, acc_b], self.gms, group, part)
