"""BatchNormV3, the Ascend C kernel aclnnBatchNorm runs in training on A2 when the input is NCHW
with C >= 64 (``isBNV3Supported`` in ``aclnn_batch_norm.cpp``; hicann/ops-nn
``norm/batch_norm_v3``): one kernel on NCHW, no TransData.

The cores take whole channels (CANN's tiling splits the channel axis, A, over the cores); per
channel: a first pass over its N runs of H x W values accumulates the sum and the sum of squares
(fp32, elementwise into ``tile``-long accumulators, then halved and a ReduceSum over the last 8),
then the statistics, saveMean, saveInvstd and the running statistics as BNTrainingUpdate
computes them (``apply.py``), then a second pass writes y = ((x - mean) x scale) + bias. Short
runs (H x W within a tile) come ``chunk_rows`` at a time, one strided DataCopyPad each way (the
runs padded with zeros to 32 bytes in UB), as CANN's full-reduce branch loads many rows at once.

Not modelled: CANN's Welford update in the first pass (its full-reduce branch for a channel that
fits UB reads x once); the sums here are those of BNTrainingReduce, which the golden reproduces.
"""

import dataclasses

from npusim.dsl import DataCopyExtParams, DataCopyPadExtParams, data_copy_pad
from npusim.dsl import vector as vec
from npusim.ops.batch_norm.apply import BNTrainingUpdateKernel, Q, S
from npusim.ops.batch_norm.args import OP_FWD
from npusim.ops.batch_norm.tiling import batch_norm_tiling

V3_MIN_CHANNELS = 64       # PATTERN_A_MIN in aclnn_batch_norm.cpp


class BatchNormV3Kernel(BNTrainingUpdateKernel):
    """Both passes over one core's channels."""

    def batch_sums(self, group: int, part: int):
        t = self.t
        acc_s, acc_q, sq = self.f32("acc0"), self.f32("acc1"), self.f32("dyf")
        vec.duplicate(acc_s, 0.0, t.tile)
        vec.duplicate(acc_q, 0.0, t.tile)
        for offset, length in self.runs(group, part):
            self.copy_in([self.x], offset, length)
            xf, local = self.take(0, length, "xf")
            vec.add(acc_s, acc_s, xf, length)
            vec.mul(sq, xf, xf, length)
            vec.add(acc_q, acc_q, sq, length)
            self.release(0, local)
        self.fold_into(acc_s, self.coef(S))
        self.fold_into(acc_q, self.coef(Q))

    def runs(self, group: int, part: int):
        """Batched: (first n, UB elements) of each chunk of the channel's runs."""
        t = self.t
        if not t.chunk_rows:
            yield from super().runs(group, part)
            return
        for n0 in range(0, t.n, t.chunk_rows):
            yield (n0, group), min(t.chunk_rows, t.n - n0) * t.pitch

    def copy_in(self, tensors, offset, length: int):
        if not self.t.chunk_rows:
            return super().copy_in(tensors, offset, length)
        t, (n0, c) = self.t, offset
        local = self.ins[0].alloc_tensor(self.dtype)
        item = self.dtype.itemsize
        data_copy_pad(local, tensors[0][(n0 * t.groups + c) * t.run_len], DataCopyExtParams(
            block_count=length // t.pitch, block_len=t.run_len * item,
            src_stride=(t.groups - 1) * t.run_len * item),
            DataCopyPadExtParams(is_pad=True, padding_value=0))
        self.ins[0].enque(local)
        return None

    def put(self, gm, offset, y, length: int) -> None:
        if not self.t.chunk_rows:
            return super().put(gm, offset, y, length)
        t, (n0, c) = self.t, offset
        item = self.dtype.itemsize
        data_copy_pad(gm[(n0 * t.groups + c) * t.run_len], y, DataCopyExtParams(
            block_count=length // t.pitch, block_len=t.run_len * item,
            dst_stride=(t.groups - 1) * t.run_len * item))
        return None


def launch_batch_norm_v3(run, x, y, nchw: tuple, chans: list, outs: list, consts: tuple,
                         tiling=None):
    """Launch BatchNormV3 on the NCHW GM tensor ``x`` into ``y``; returns the tiling."""
    n, c, h, w = nchw
    per_block = 32 // x.dtype.itemsize
    pitch = -(-h * w // per_block) * per_block
    t = batch_norm_tiling(run.chip, OP_FWD, (n, c, n * pitch, 1, n * h * w), x.dtype,
                          inputs=1, parts=1, overrides=tiling)
    rows = min(n, t.tile // pitch)
    t = dataclasses.replace(t, n=n, run_len=h * w, pitch=pitch if rows else 0, chunk_rows=rows)
    run.launch(BatchNormV3Kernel, block_dim=t.block_dim, name="BatchNormV3",
               args=dict(x=x, ws_sum=None, ws_sq=None, channel_in=chans, y=y, channel_out=outs,
                         consts=consts, tiling=t, channels=c))
    return t
