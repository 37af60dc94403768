"""The scale pass of EmbeddingDenseGradV2 (tiling keys x1, kernels.md §4(c), ``_scale.h``).

After the main kernel, the rows of out are split over the cores; per row, the row's count (the
fp32 counts workspace the main kernel atomically added into) is read by the scalar, and the row
is copied in, multiplied by 1/count (Muls; the reciprocal is the scalar's fp32 division, 1 for
a count of 0) and copied back. Counts are read in batches of ``COUNT_BATCH`` per DataCopyPad.

Not modelled: CANN runs this inside the main kernel after a SyncAll; here it is a kernel of its
own right after it, so the two do not overlap (the difference is one SyncAll).
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    Pipe,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_value,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div

COUNT_BATCH = 1024   # counts per DataCopyPad (4 KB)


class ScaleKernel(Kernel):
    """out[i, :] *= 1 / counts[i] for this core's share of the rows of out."""

    reads_data = True

    def init(self, out, counts, num_weights: int, dim: int, dim_chunk: int, per_core: int):
        self.out, self.counts, self.dim, self.chunk = out, counts, dim, dim_chunk
        self.first = min(get_block_idx() * per_core, num_weights)
        self.rows = min(per_core, num_weights - self.first)
        chunk_bytes = ceil_div(dim_chunk * 4, 32) * 32
        self.cnt_que = TQue(TPosition.VECIN, 1, consumer=Pipe.S, name="countQue")
        self.in_que = TQue(TPosition.VECIN, 1, name="rowIn")
        self.out_que = TQue(TPosition.VECOUT, 1, name="rowOut")
        self.pipe.init_buffer(self.cnt_que, 1, COUNT_BATCH * 4)
        self.pipe.init_buffer(self.in_que, 1, chunk_bytes)
        self.pipe.init_buffer(self.out_que, 1, chunk_bytes)

    def process(self):
        for b in range(0, self.rows, COUNT_BATCH):
            n = min(COUNT_BATCH, self.rows - b)
            counts = self.cnt_que.alloc_tensor("float32")
            data_copy_pad(counts, self.counts[self.first + b],
                          DataCopyExtParams(block_count=1, block_len=n * 4))
            self.cnt_que.enque(counts)
            self.cnt_que.deque()
            for i in range(n):
                count = get_value(counts, i)
                scale = float(np.float32(1) / np.float32(count)) if count else 1.0
                self.scale_row(self.first + b + i, scale)
            self.cnt_que.free_tensor(counts)

    def scale_row(self, row: int, scale: float):
        for col in range(0, self.dim, self.chunk):
            n = min(self.chunk, self.dim - col)
            params = DataCopyExtParams(block_count=1, block_len=n * 4)
            x = self.in_que.alloc_tensor("float32")
            data_copy_pad(x, self.out[row * self.dim + col], params)
            self.in_que.enque(x)
            x = self.in_que.deque()
            y = self.out_que.alloc_tensor("float32")
            vec.muls(y, x, scale, n)
            self.out_que.enque(y)
            self.in_que.free_tensor(x)
            y = self.out_que.deque()
            data_copy_pad(self.out[row * self.dim + col], y, params)
            self.out_que.free_tensor(y)
