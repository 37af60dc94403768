"""EmbeddingDenseGradV2 on Atlas A2: the sorted kernels (kernels.md §4(c)).

Both read the indices in sorted order (``sortedIndices``) with each one's original row
(``posIdx``), in D chunks of ``dim_chunk`` fp32 elements. Per row: two 4-byte DataCopyPads
(index, position) each followed by an MTE2->S flag and a scalar GetValue, then a DataCopyPad of
the grad row chunk from row ``posIdx`` (a gather). Rows of one index are Added into the current
of two UB accumulators; a flush is an atomic-add DataCopyPad of the accumulator into
out[index] (``isa/move_atomic.py``) then Duplicate(0). Padding rows are skipped. With scale,
each flush of the first D chunk also atomically adds its row count (fp32) into the counts
workspace that the scale pass reads.

- ``SortedKernel`` (keys 0/1): a core walks its own rows in order; it flushes the current
  accumulator when it holds more than ``flush_rows`` rows (the check follows the add, so such
  a flush carries flush_rows + 1 rows), at its last row and at a padding row, and the previous
  accumulator when the index changes. A run of one index split between cores gets partial sums
  from each, atomically added in simulated-time order: not deterministic.
- ``DeterministicKernel`` (keys 10/11): a core skips its leading rows whose index continues the
  previous core's last run, walks the rest in reverse, then continues past its end while the
  index equals its own last one; flushes at exactly ``flush_rows`` rows. Each output row then
  has a single writer in a fixed order: deterministic.

Single-buffered queues (CANN's DOUBLE_BUFFER constant is 1). Not modelled: the 16-bit path that
keeps fp16/bf16 grads uncast (CANN 8.1.RC1 shipped fp32 binaries only; aclnn casts first).
"""

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
    issue,
    set_flag,
    set_value,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.isa.move_atomic import AtomicAddCopy
from npusim.ops.common import ceil_div

NO_INDEX = -1   # INDICE_INIT_PARAM: no run open


def atomic_add_out(dst, src, nbytes: int) -> None:
    """SetAtomicAdd; DataCopyPad(dst, src, {1, nbytes}); SetAtomicNone."""
    issue(AtomicAddCopy(dst=dst, src=src, block_count=1, block_len=nbytes,
                        src_stride=ceil_div(nbytes, 32) * 32, dst_stride=nbytes))


class V2Base(Kernel):
    """What the two sorted kernels share: buffers, the row copy-in, add and flush."""

    reads_data = True

    def init(self, grad, sorted_indices, pos_idx, out, counts, tiling, padding_idx: int):
        self.t, self.padding = tiling, padding_idx
        self.grad, self.sorted, self.pos, self.out, self.counts = (
            grad, sorted_indices, pos_idx, out, counts)
        self.start, self.count = tiling.core_rows(get_block_idx())
        chunk_bytes = ceil_div(tiling.dim_chunk * 4, 32) * 32
        self.idx_que = TQue(TPosition.VECIN, 1, consumer=Pipe.S, name="indiceQue")
        self.pos_que = TQue(TPosition.VECIN, 1, consumer=Pipe.S, name="posIdxQue")
        self.grad_que = TQue(TPosition.VECIN, 1, name="gradQue")
        self.cnt_que = TQue(TPosition.VECOUT, 1, producer=Pipe.S, name="tmpQue")
        for que, nbytes in ((self.idx_que, 32), (self.pos_que, 32), (self.grad_que, chunk_bytes),
                            (self.cnt_que, 32)):
            self.pipe.init_buffer(que, 1, nbytes)
        self.acc = [TBuf(TPosition.VECCALC, name=f"addRes{i}") for i in (0, 1)]
        for buf in self.acc:
            self.pipe.init_buffer(buf, chunk_bytes)

    def process(self):
        for j in range(ceil_div(self.t.dim, self.t.dim_chunk)):
            self.col = j * self.t.dim_chunk
            self.n = min(self.t.dim_chunk, self.t.dim - self.col)
            self.first_chunk = j == 0
            for buf in self.acc:
                vec.duplicate(buf.get("float32"), 0.0, self.n)
            self.switch, self.last, self.added = 0, NO_INDEX, [0, 0]
            self.walk()

    def walk(self):
        raise NotImplementedError

    def read_int(self, que, gm, row: int) -> int:
        """One 4-byte DataCopyPad, MTE2->S, GetValue."""
        t = que.alloc_tensor("int32")
        data_copy_pad(t, gm[row], DataCopyExtParams(block_count=1, block_len=4))
        que.enque(t)
        que.deque()
        value = get_value(t, 0)
        que.free_tensor(t)
        return value

    def copy_in(self, row: int):
        """The grad row chunk of sorted row ``row`` into gradQue."""
        pos = self.read_int(self.pos_que, self.pos, row)
        g = self.grad_que.alloc_tensor("float32")
        data_copy_pad(g, self.grad[pos * self.t.dim + self.col],
                      DataCopyExtParams(block_count=1, block_len=self.n * 4))
        self.grad_que.enque(g)

    def add_row(self):
        g = self.grad_que.deque()
        acc = self.acc[self.switch].get("float32")
        vec.add(acc, acc, g, self.n)
        self.grad_que.free_tensor(g)
        self.added[self.switch] += 1

    def flush(self, which: int, index: int):
        """Atomic-add accumulator ``which`` into out[index], count it, zero it."""
        acc = self.acc[which].get("float32")
        set_flag(HardEvent.V_MTE3)
        wait_flag(HardEvent.V_MTE3)
        atomic_add_out(self.out[index * self.t.dim + self.col], acc, self.n * 4)
        if self.t.scale and self.first_chunk:
            tmp = self.cnt_que.alloc_tensor("float32")
            set_value(tmp, 0, float(self.added[which]))
            self.cnt_que.enque(tmp)
            self.cnt_que.deque()
            atomic_add_out(self.counts[index], tmp, 4)
            self.cnt_que.free_tensor(tmp)
        set_flag(HardEvent.MTE3_V)
        wait_flag(HardEvent.MTE3_V)
        vec.duplicate(acc, 0.0, self.n)
        self.added[which] = 0

    def step(self, index: int, is_last: bool, full) -> None:
        """ComputeAndCopyOut for one non-padding row already in gradQue."""
        switched = self.last != NO_INDEX and index != self.last
        if switched:
            self.switch = 1 - self.switch
            self.added[self.switch] = 0
        self.add_row()
        if full(self.added[self.switch]) or is_last:
            self.flush(self.switch, index)
        if switched:
            self.flush(1 - self.switch, self.last)
        self.last = index

    def close_run(self) -> None:
        if self.last != NO_INDEX:
            self.flush(self.switch, self.last)
            self.last = NO_INDEX


class SortedKernel(V2Base):
    """Keys 0/1: each core its own sorted rows, in order."""

    def walk(self):
        limit = self.t.flush_rows
        for i in range(self.count):
            row = self.start + i
            index = self.read_int(self.idx_que, self.sorted, row)
            if index == self.padding:
                self.close_run()
                continue
            self.copy_in(row)
            self.step(index, i == self.count - 1, lambda n: n > limit)


class DeterministicKernel(V2Base):
    """Keys 10/11: one writer per output row (kernels.md §4(c), _determinist.h)."""

    def walk(self):
        if self.count == 0:
            return
        before = self.read_int(self.idx_que, self.sorted, self.start - 1) \
            if self.start > 0 else NO_INDEX
        if self.backward(before):
            self.forward()

    def backward(self, before: int) -> bool:
        """Own rows from the end back to the first one continuing the previous core's run;
        True when the core's last run may go on past its end."""
        for i in range(self.count - 1, -1, -1):
            if not self.visit(self.start + i, before, stop_on_equal=True, is_last=i == 0):
                self.close_run()
                return i != self.count - 1
        return True

    def forward(self):
        """Rows after the core's range while they continue its last index."""
        self.last = NO_INDEX
        own = self.read_int(self.idx_que, self.sorted, self.start + self.count - 1)
        for row in range(self.start + self.count, self.t.rows):
            if not self.visit(row, own, stop_on_equal=False, is_last=row == self.t.rows - 1):
                self.close_run()
                return

    def visit(self, row: int, stand: int, *, stop_on_equal: bool, is_last: bool) -> bool:
        index = self.read_int(self.idx_que, self.sorted, row)
        if (index == stand) == stop_on_equal:
            return False
        if index == self.padding:
            self.close_run()
            return True
        self.copy_in(row)
        limit = self.t.flush_rows
        self.step(index, is_last, lambda n: n == limit)
        return True
