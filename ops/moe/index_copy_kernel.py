"""MoeTokenPermute's index copy (CANN's ``MoeindexCopyOp`` / ``MoeindexCopySpiltDOp``).

Each AIV core owns a contiguous block of input tokens (tiling: front cores one more). Per batch
of ``once_indices_token_nums`` tokens it copies their sortedIndicesOut into UB (DataCopyPad on
MTE2; the scalar then reads them with GetValue). Normal mode: ``once_ub_token_nums`` token rows
come in with one DataCopyPad (one block per row, each padded to 32 bytes in UB) into a 2-deep
queue bound VECIN -> VECOUT; then, per row and per k, the scalar reads the copy's destination
row and, when it is below numOutTokens, MTE3 writes the row there (DataCopyPad UB -> GM).
Split-D mode (a row too long for two UB buffers): one token at a time, the row in pieces of
``one_token_once_move`` elements, each piece written to its topK destinations.

The indices buffer is freed after the batch; the next batch's copy-in waits for the scalar
(S -> MTE2), written here as a queue whose consumer is the scalar. No vector work: the result is
bytes moved, so it is exact in every dtype. Every destination row has one writer (the ranks are
a permutation), so there are no atomics.

Not modelled: the scalar's address arithmetic and branches (only GetValue and issue are
charged); the SyncAll that separates the index copy from the sorts in CANN's single kernel
(npusim launches the phases as separate kernels).
"""

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
from npusim.ops.common import round_up
from npusim.ops.moe.permute_tiling import BLOCK_BYTES, BUFFER_NUM, INDEX_BYTES


class MoeIndexCopyKernel(Kernel):
    """permuteTokensOut[sortedIndicesOut[t * topK + k]] = tokens[t] for ranks < numOutTokens."""

    reads_data = True    # the scalar reads every destination row

    def init(self, tokens, indices, out, tiling):
        t, idx = tiling, get_block_idx()
        if idx < t.front_core_num:
            self.count, first = t.core_calc_num, idx * t.core_calc_num
        else:
            self.count = t.core_calc_tail
            first = t.core_calc_num * t.front_core_num + (idx - t.front_core_num) * \
                t.core_calc_tail
        self.tiling, self.dtype, self.item = t, tokens.dtype, tokens.dtype.itemsize
        self.src = tokens[first * t.cols]
        self.indices_gm = indices[first * t.top_k]
        self.out = out
        self.cols_align = round_up(t.cols * self.item, BLOCK_BYTES) // self.item
        self.rows = TQue(TPosition.VECIN, BUFFER_NUM, consumer=Pipe.MTE3, name="copyInQueue")
        self.index_que = TQue(TPosition.VECIN, 1, consumer=Pipe.S, name="indicesBuffer")
        self.pipe.init_buffer(self.rows, BUFFER_NUM, t.token_ub)
        self.pipe.init_buffer(self.index_que, 1, t.indices_ub)

    def process(self):
        batch = self.tiling.once_indices_token_nums
        for first in range(0, self.count, batch):
            self.copy_batch(first, min(batch, self.count - first))

    def copy_batch(self, first: int, count: int):
        """One batch of tokens: their indices into UB, then their rows out."""
        t = self.tiling
        indices = self.index_que.alloc_tensor("int32")
        data_copy_pad(indices, self.indices_gm[first * t.top_k],
                      DataCopyExtParams(block_len=count * t.top_k * INDEX_BYTES))
        self.index_que.enque(indices)
        indices = self.index_que.deque()
        if t.split_d:
            for j in range(count):
                self.copy_pieces(indices, first + j, j)
        else:
            step = t.once_ub_token_nums
            for j in range(0, count, step):
                self.copy_rows(indices, first + j, j, min(step, count - j))
        self.index_que.free_tensor(indices)

    def copy_rows(self, indices, token: int, local: int, count: int):
        """CopyIn of ``count`` rows, then CopyOut of each to its topK destinations."""
        t = self.tiling
        rows = self.rows.alloc_tensor(self.dtype)
        data_copy_pad(rows, self.src[token * t.cols],
                      DataCopyExtParams(block_count=count, block_len=t.cols * self.item))
        self.rows.enque(rows)
        rows = self.rows.deque()
        for j in range(count):
            self.scatter(indices, (local + j) * t.top_k, rows[j * self.cols_align], 0, t.cols)
        self.rows.free_tensor(rows)

    def copy_pieces(self, indices, token: int, local: int):
        """Split-D: the row in pieces, each written to the token's topK destinations."""
        t = self.tiling
        for start in range(0, t.cols, t.one_token_once_move):
            n = min(t.one_token_once_move, t.cols - start)
            piece = self.rows.alloc_tensor(self.dtype)
            data_copy_pad(piece, self.src[token * t.cols + start],
                          DataCopyExtParams(block_len=n * self.item))
            self.rows.enque(piece)
            piece = self.rows.deque()
            self.scatter(indices, local * t.top_k, piece, start, n)
            self.rows.free_tensor(piece)

    def scatter(self, indices, at: int, row, start: int, n: int):
        """The topK copies of one row (or piece): each to its rank, unless dropped."""
        t = self.tiling
        for k in range(t.top_k):
            dest = get_value(indices, at + k)
            if dest < t.num_out_tokens:
                data_copy_pad(self.out[dest * t.cols + start], row,
                              DataCopyExtParams(block_len=n * self.item))
