"""The foreach kernel on the AIV cores (KernelForeachUnary with ForeachOneScalarTernary or
ForeachOneScalarBinary, hicann/ops-nn ``foreach/foreach_utils/op_kernel/``): each core walks its
pieces of the tensors (``ForeachTiling.segments``), each piece in tiles of ``tile_length``
elements: DataCopy (DataCopyPad for a piece's last, partial tile) of every input list's tile into
its double-buffered queue (MTE2), the compute (V), DataCopy / DataCopyPad of the result (MTE3).

Computes (Atlas A2, fp16 and fp32 in their dtype; bf16 cast to fp32 ``cast_length`` elements at
a time, the op in fp32, cast back with CAST_RINT, as InnerComputerCastBase does):
- AddList (aclnnForeachAddListV2): y = x1 + alpha * x2. CANN issues Axpy(x1, x2, alpha) in place
  and copies x1's buffer to y's (UB to UB) **[npusim has no Axpy instruction: it issues Muls of
  x2 by alpha, then Add into y (CANN's integer adapter, AddListNormalAdapter); the result is
  alpha * x2 rounded, then the sum rounded]**.
- MulScalar (aclnnForeachMulScalarV2): y = x * scalar (Muls).
The scalar is read from GM once by every core in CANN (GetValue of the scalar tensor); npusim
binds it when the kernel is recorded. Not modelled: the scalar's reads of the tensor lists'
address tables (GetTensorAddr, one GM read per tensor a core touches).
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy,
    data_copy_pad,
    get_block_idx,
)
from npusim.dsl import vector as vec


class ForeachKernel(Kernel):
    """One vector core's pieces of the lists: tiles in, ``op`` between, tiles out."""

    def init(self, ins: tuple, outs: tuple, tiling, op: str, scalar: float):
        t = self.tiling = tiling
        self.ins, self.outs, self.op, self.scalar = ins, outs, op, scalar
        self.dtype = outs[0].dtype
        self.wide = np.dtype(self.dtype).name == "bfloat16"
        nbytes = t.tile_length * self.dtype.itemsize
        self.in_ques = [TQue(TPosition.VECIN, t.buffer_num, name=f"inQueue{i}")
                        for i in range(len(ins))]
        self.out_que = TQue(TPosition.VECOUT, t.buffer_num, name="outQueue")
        for que in (*self.in_ques, self.out_que):
            self.pipe.init_buffer(que, t.buffer_num, nbytes)
        if self.wide:
            self.f32 = TBuf(TPosition.VECCALC, name="float32Buf")
            self.pipe.init_buffer(self.f32, t.cast_length * 4 * len(ins))

    def process(self):
        n = self.tiling.tile_length
        for tensor, first, count in self.tiling.segments(get_block_idx()):
            for k in range(-(-count // n)):
                size = min(n, count - k * n)
                self.copy_in(tensor, first + k * n, size)
                self.compute(size)
                self.copy_out(tensor, first + k * n, size)

    def copy_in(self, tensor: int, offset: int, size: int) -> None:
        for que, gm in zip(self.in_ques, self.ins, strict=True):
            local = que.alloc_tensor(self.dtype)
            _copy(local, gm[tensor][offset], size, size < self.tiling.tile_length)
            que.enque(local)

    def copy_out(self, tensor: int, offset: int, size: int) -> None:
        out = self.out_que.deque()
        _copy(self.outs[tensor][offset], out, size, size < self.tiling.tile_length)
        self.out_que.free_tensor(out)

    def compute(self, size: int) -> None:
        ins = [que.deque() for que in self.in_ques]
        out = self.out_que.alloc_tensor(self.dtype)
        if self.wide:
            step = self.tiling.cast_length
            for at in range(0, size, step):
                self.cast_step(out[at], [x[at] for x in ins], min(step, size - at))
        else:
            self.apply(out, ins, size)
        self.out_que.enque(out)
        for que, local in zip(self.in_ques, ins, strict=True):
            que.free_tensor(local)

    def cast_step(self, out, ins: list, n: int) -> None:
        """bf16: each input cast to fp32 (its own part of the work buffer), the op, Cast back."""
        step, f = self.tiling.cast_length, self.f32.get("float32")
        parts = [f[i * step] for i in range(len(ins))]
        for part, x in zip(parts, ins, strict=True):
            vec.cast(part, x, "none", n)
        self.apply(parts[0], parts, n)
        vec.cast(out, parts[0], "rint", n)

    def apply(self, out, ins: list, n: int) -> None:
        if self.op == "add_list":
            x1, x2 = ins
            vec.muls(x2, x2, self.scalar, n)
            vec.add(out, x1, x2, n)
        else:
            vec.muls(out, ins[0], self.scalar, n)


def _copy(dst, src, size: int, partial: bool) -> None:
    """DataCopy of a whole tile; DataCopyPad (byte-exact) of a piece's last, partial tile."""
    if partial:
        data_copy_pad(dst, src, DataCopyExtParams(block_len=size * src.dtype.itemsize))
    else:
        data_copy(dst, src, size)
