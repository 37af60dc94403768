"""The vector kernels of ConvolutionBackward: gradBias, and the deterministic dw reduction.

``BiasGradKernel`` is aclnn's separate ReduceSum of gradOutput over N and the spatial dims
(kernels.md §2(a)): channels are shared over the vector cores; per channel, every (n, chunk)
of ``bias_tile`` elements is copied in (DataCopyPad), cast to fp32 if needed and added
element-wise into an fp32 accumulator tile (in increasing n, then chunk); at the end one
ReduceSum (the documented halving tree over the tile's lanes) gives the channel's sum, which is
cast to gradBias's dtype (round to nearest even) and written. The order is fixed, so the result
is deterministic.

``PartialSumKernel`` is the deterministic variant's reduction of the dw partials (one fp32
workspace slot per K part) on coupled chips (Atlas training, Atlas inference): the elements are
shared over the vector cores and each tile is summed slot 0 + slot 1 + ... in that fixed order,
as a kernel of its own after the cube kernel. On Atlas A2 the same sums run inside the mixed
dw kernel (``ops/convolution/dw_mixed.py``), as CANN's Conv3DBackpropFilterV2 does (§2(e)).
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
)
from npusim.dsl import vector as vec


class BiasGradKernel(Kernel):
    """gradBias[c] = sum over n and positions of gradOutput[n, c, :]."""

    def init(self, dy, db, n: int, channels: int, positions: int, tile: int):
        self.dy, self.db, self.n, self.c, self.s, self.tile = dy, db, n, channels, positions, tile
        self.dtype = dy.dtype
        self.in_que = TQue(TPosition.VECIN, 2, name="inQueue")
        self.pipe.init_buffer(self.in_que, 2, tile * self.dtype.itemsize)
        self.out_que = TQue(TPosition.VECOUT, 1, name="outQueue")
        self.pipe.init_buffer(self.out_que, 1, 32)
        self.acc = TBuf(TPosition.VECCALC, name="accBuf")
        self.pipe.init_buffer(self.acc, tile * 4)
        self.work = TBuf(TPosition.VECCALC, name="workBuf")
        self.pipe.init_buffer(self.work, tile * 4 + 32)

    def process(self):
        for ch in range(get_block_idx(), self.c, get_block_num()):
            acc = self.acc.get("float32")
            vec.duplicate(acc, 0, self.tile)
            for ni in range(self.n):
                for s0 in range(0, self.s, self.tile):
                    count = min(self.tile, self.s - s0)
                    self.copy_in((ni * self.c + ch) * self.s + s0, count)
                    self.accumulate(acc, count)
            self.finish(acc, ch)

    def copy_in(self, offset: int, count: int):
        t = self.in_que.alloc_tensor(self.dtype)
        data_copy_pad(t, self.dy[offset], DataCopyExtParams(
            block_count=1, block_len=count * self.dtype.itemsize))
        self.in_que.enque(t)

    def accumulate(self, acc, count: int):
        t = self.in_que.deque()
        if self.dtype.itemsize != 4:
            x = self.work.get("float32")
            vec.cast(x, t, "none", count)
            vec.add(acc, acc, x, count)
        else:
            vec.add(acc, acc, t, count)
        self.in_que.free_tensor(t)

    def finish(self, acc, ch: int):
        total = self.work.get("float32")
        vec.reduce_sum(total, acc, self.tile)
        out = self.out_que.alloc_tensor(self.dtype)
        if self.dtype.itemsize != 4:
            vec.cast(out, total, "rint", 1)
        else:
            vec.adds(out, total, 0.0, 1)
        self.out_que.enque(out)
        out = self.out_que.deque()
        data_copy_pad(self.db[ch], out, DataCopyExtParams(block_count=1,
                                                          block_len=self.dtype.itemsize))
        self.out_que.free_tensor(out)


class PartialSumKernel(Kernel):
    """dst[i] = ((src[0][i] + src[1][i]) + src[2][i]) + ... over ``parts`` slots, fp32."""

    def init(self, src, dst, parts: int, total: int, tile: int):
        self.src, self.dst, self.parts, self.total, self.tile = src, dst, parts, total, tile
        self.in_que = TQue(TPosition.VECIN, 2, name="inQueue")
        self.pipe.init_buffer(self.in_que, 2, tile * 4)
        self.out_que = TQue(TPosition.VECOUT, 1, name="outQueue")
        self.pipe.init_buffer(self.out_que, 1, tile * 4)

    def process(self):
        tiles = -(-self.total // self.tile)
        for i in range(get_block_idx(), tiles, get_block_num()):
            start = i * self.tile
            count = min(self.tile, self.total - start)
            acc = sum_parts(self.in_que, self.out_que,
                            [self.src[part * self.total + start] for part in range(self.parts)],
                            count)
            data_copy_pad(self.dst[start], acc, DataCopyExtParams(block_count=1,
                                                                  block_len=count * 4))
            self.out_que.free_tensor(acc)


def sum_parts(in_que, out_que, sources, count: int):
    """acc = ((sources[0] + sources[1]) + sources[2]) + ... over ``count`` fp32 elements: each
    source copied into ``in_que`` in turn and added in that fixed order; returns the sum, dequeued
    from ``out_que`` for its copy out (the caller frees it)."""
    acc = out_que.alloc_tensor("float32")
    for part, src in enumerate(sources):
        x = in_que.alloc_tensor("float32")
        data_copy_pad(x, src, DataCopyExtParams(block_count=1, block_len=count * 4))
        in_que.enque(x)
        x = in_que.deque()
        if part == 0:
            vec.adds(acc, x, 0.0, count)
        else:
            vec.add(acc, acc, x, count)
        in_que.free_tensor(x)
    out_que.enque(acc)
    return out_que.deque()
