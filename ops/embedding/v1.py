"""EmbeddingDenseGrad V1 on Atlas training (kernels.md §4(d), the TIK kernel of CANN 8.1.RC1).

``V1Kernel`` (no scale): the grad rows are split over the cores in chunks of a multiple of 128
rows; a core copies a batch of ``batch_rows`` indices and the matching grad row chunks into UB
(one strided DataCopyPad each), and for each row the scalar reads its index and, unless it is
the padding index, issues an atomic-add DataCopyPad of the row chunk into out[index]. Rows of
one index on different cores land in simulated-time order: not deterministic.

``V1ScaleKernel`` (scaleGradByFreq): the rows of out are split over the cores. A core scans
every index twice: first counting, in a UB table, how often each index of its range occurs
(a scalar loop: GetValue, and SetValue into the table for the indices in range), then, for
each row whose index is in its range, copying the row chunk in, multiplying it by 1/count
(Muls) and atomically adding it into out[index]. Each output row has one writer, in row
order: deterministic.

Not modelled: the D == 6, numWeights <= 32 fast path; TIK's exact UB carving (the seed's
embedding-dim limit with scale is checked with the argument rules).
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    HardEvent,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_value,
    scalar_ops,
    set_flag,
    set_value,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div
from npusim.ops.embedding.v2 import atomic_add_out


class V1Base(Kernel):
    """Shared: the index batch read into the scalar."""

    reads_data = True

    def bind(self, grad, indices, out, tiling, padding_idx: int):
        self.grad, self.indices, self.out, self.t = grad, indices, out, tiling
        self.padding, self.item = padding_idx, indices.dtype.itemsize
        self.idx_que = TQue(TPosition.VECIN, 1, consumer=Pipe.S, name="indicesUb")
        self.pipe.init_buffer(self.idx_que, 1, ceil_div(tiling.batch_rows * self.item, 32) * 32)

    def read_indices(self, first: int, n: int):
        t = self.idx_que.alloc_tensor(self.indices.dtype)
        data_copy_pad(t, self.indices[first], DataCopyExtParams(block_count=1,
                                                                block_len=n * self.item))
        self.idx_que.enque(t)
        self.idx_que.deque()
        return t

    def chunks(self):
        for col in range(0, self.t.dim, self.t.dim_chunk):
            yield col, min(self.t.dim_chunk, self.t.dim - col)


class V1Kernel(V1Base):
    """One atomic-add DMA per grad row."""

    def init(self, grad, indices, out, tiling, padding_idx: int):
        self.bind(grad, indices, out, tiling, padding_idx)
        self.start, self.count = tiling.core_rows(get_block_idx())
        self.row_bytes = ceil_div(tiling.dim_chunk * 4, 32) * 32
        self.grad_que = TQue(TPosition.VECIN, 1, consumer=Pipe.MTE3, name="gradUb")
        self.pipe.init_buffer(self.grad_que, 1, tiling.batch_rows * self.row_bytes)

    def process(self):
        for col, n in self.chunks():
            for b in range(0, max(self.count, 0), self.t.batch_rows):
                self.batch(self.start + b, min(self.t.batch_rows, self.count - b), col, n)

    def batch(self, first: int, rows: int, col: int, n: int):
        idx = self.read_indices(first, rows)
        g = self.grad_que.alloc_tensor("float32")
        data_copy_pad(g, self.grad[first * self.t.dim + col], DataCopyExtParams(
            block_count=rows, block_len=n * 4, src_stride=(self.t.dim - n) * 4))
        self.grad_que.enque(g)
        self.grad_que.deque()
        for r in range(rows):
            index = get_value(idx, r)
            if index != self.padding:
                atomic_add_out(self.out[index * self.t.dim + col],
                               g[r * self.row_bytes // 4], n * 4)
        self.grad_que.free_tensor(g)
        self.idx_que.free_tensor(idx)


class V1ScaleKernel(V1Base):
    """Output rows split over cores; each core counts then scales and adds its rows."""

    def init(self, grad, indices, out, tiling, padding_idx: int):
        self.bind(grad, indices, out, tiling, padding_idx)
        per = tiling.rows_per_core
        self.low = min(get_block_idx() * per, tiling.num_weights)
        self.high = min(self.low + per, tiling.num_weights)
        chunk_bytes = ceil_div(tiling.dim_chunk * 4, 32) * 32
        self.counts_buf = TBuf(TPosition.VECCALC, name="countsUb")
        self.pipe.init_buffer(self.counts_buf, ceil_div(max(per, 1) * 4, 32) * 32)
        self.in_que = TQue(TPosition.VECIN, 1, name="rowIn")
        self.out_que = TQue(TPosition.VECOUT, 1, name="rowOut")
        self.pipe.init_buffer(self.in_que, 1, chunk_bytes)
        self.pipe.init_buffer(self.out_que, 1, chunk_bytes)

    def process(self):
        self.count_indices()
        for col, n in self.chunks():
            self.scan(lambda row, index, col=col, n=n: self.add_row(row, index, col, n))

    def scan(self, visit):
        """Every index once: GetValue, compare with the core's range (two scalar ops)."""
        for first in range(0, self.t.rows, self.t.batch_rows):
            rows = min(self.t.batch_rows, self.t.rows - first)
            idx = self.read_indices(first, rows)
            for r in range(rows):
                index = get_value(idx, r)
                scalar_ops(2)
                if self.low <= index < self.high and index != self.padding:
                    visit(first + r, index)
            self.idx_que.free_tensor(idx)

    def count_indices(self) -> None:
        """counts[index - low] += 1 for every index of the core's range (zeroed first)."""
        table = self.counts_buf.get("float32")
        vec.duplicate(table, 0.0, max(self.high - self.low, 1))
        set_flag(HardEvent.V_S)
        wait_flag(HardEvent.V_S)

        def bump(_row, index):
            set_value(table, index - self.low, get_value(table, index - self.low) + 1.0)

        self.scan(bump)

    def add_row(self, row: int, index: int, col: int, n: int):
        params = DataCopyExtParams(block_count=1, block_len=n * 4)
        x = self.in_que.alloc_tensor("float32")
        data_copy_pad(x, self.grad[row * self.t.dim + col], params)
        self.in_que.enque(x)
        x = self.in_que.deque()
        y = self.out_que.alloc_tensor("float32")
        count = get_value(self.counts_buf.get("float32"), index - self.low)
        vec.muls(y, x, float(np.float32(1) / np.float32(count)), n)
        self.out_que.enque(y)
        self.in_que.free_tensor(x)
        y = self.out_que.deque()
        atomic_add_out(self.out[index * self.t.dim + col], y, n * 4)
        self.out_que.free_tensor(y)
