"""The Sort kernel aclnn runs on the int32 indices before EmbeddingDenseGradV2 (kernels.md §4(b)).

aclnn reinterprets the non-negative int32 indices as fp32 bit patterns (they order like their
float patterns) and calls Sort(dim=-1, descending=false, stable=true), getting the sorted keys
and, for each, its original row (posIdx). Here one vector core copies the keys into UB, runs the
vector Sort (``isa/vector_index.py``: Sort32 + MrgSort passes, stable) and copies the sorted
keys and the uint32 positions back out as int32.

Modelled: the traffic and the Sort's cost on one core, for lists one UB holds. Longer lists
are sorted in chunks and merged (``ops/embedding/sort_merge.py``, ``launch_sort``), which stands for
CANN's multi-core Sort kernel (not modelled as such).
"""

from npusim.dsl import DataCopyExtParams, Kernel, TPosition, TQue, data_copy_pad
from npusim.dsl import vector as vec


class SortIndicesKernel(Kernel):
    """(sortedIndices, posIdx) = stable ascending sort of the int32 indices."""

    def init(self, indices, sorted_indices, pos_idx, rows: int, sort_rows: int):
        self.indices, self.sorted, self.pos, self.rows = indices, sorted_indices, pos_idx, rows
        nbytes = sort_rows * 4
        self.in_que = TQue(TPosition.VECIN, 1, name="keyQueue")
        self.val_que = TQue(TPosition.VECOUT, 1, name="sortedQueue")
        self.idx_que = TQue(TPosition.VECOUT, 1, name="posQueue")
        for que in (self.in_que, self.val_que, self.idx_que):
            self.pipe.init_buffer(que, 1, nbytes)

    def process(self):
        self.copy_in()
        self.compute()
        self.copy_out()

    def copy_in(self):
        keys = self.in_que.alloc_tensor("float32")     # int32 bits read as fp32 keys
        data_copy_pad(keys, self.indices, DataCopyExtParams(block_count=1,
                                                            block_len=self.rows * 4))
        self.in_que.enque(keys)

    def compute(self):
        keys = self.in_que.deque()
        values = self.val_que.alloc_tensor("float32")
        positions = self.idx_que.alloc_tensor("uint32")
        vec.sort_ascending(values, positions, keys, self.rows)
        self.val_que.enque(values)
        self.idx_que.enque(positions)
        self.in_que.free_tensor(keys)

    def copy_out(self):
        params = DataCopyExtParams(block_count=1, block_len=self.rows * 4)
        values, positions = self.val_que.deque(), self.idx_que.deque()
        data_copy_pad(self.sorted, values, params)
        data_copy_pad(self.pos, positions, params)
        self.val_que.free_tensor(values)
        self.idx_que.free_tensor(positions)
