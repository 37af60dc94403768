"""TransData (+ Cast): the layout conversions aclnn runs around the convolution cube kernels.

aclnn turns NCHW tensors into the cube's private formats and back (kernels.md §2(b)1):
gradOutput and input to NC1HWC0 (here per group, channels padded to C0), the weight to a
FRACTAL_Z-style B matrix, and the results back to NCHW, casting where the compute dtype differs
(Contiguous → Cast → TransData in aclnn; here Cast and TransData are one kernel). The kernel is
generic: the host cuts the conversion into *pieces*, each a strided block of the source
(``rows`` rows of ``row_len`` elements) that becomes a strided block of the destination
(``outer`` x ``count`` runs of ``length`` elements). Per piece, on a vector core:
DataCopyPad GM → UB, a vector Gather with a host-made offset table (the permutation, with
zeros for padding), an optional Cast, DataCopyPad UB → GM. In and out tiles are double
buffered; the offset table is loaded into UB when a piece needs a table other than the one
there.

16-bit conversions without a cast move as CANN's TransData moves them, by vnchwconv
(``TransDataTo5HD``, ``isa/vector_transpose.py``), with no offset table: NCHW -> NC1HWC0
(fp16/bf16 gradOutput and input, C0 = 16: per piece the C0 channel rows land in UB, channels
beyond the tensor's read one zeroed row, one TransDataTo5HD per 255 repeats writes positions x
C0) and dx's ND result back to NCHW (one TransDataTo5HD per 16 positions, repeating over the
16-channel blocks). The other conversions (fp32 with C0 = 8, a cast on the way, the weight to
FRACTAL_Z, dw's fp32 workspace back to the weight) use the Gather path above.

Modelled: the GM traffic (burst-rounded), the UB work of the permutation and the cast, the
split of pieces over the vector cores (round robin, or a plan's own ``lanes``, one per core, as
a TIK kernel's tiling splits its loop nest: ``ops/transdata/tik_split.py``), and a plan that is
``serial`` works in one buffer as a TIK kernel does, each piece out before the next comes in.
Not modelled: vnchwconv for the Gather-path conversions (CANN uses it, with its 32-bit and
8-bit forms, for them too), so their vector cycles are an estimate of the same order; the
offset tables are read from GM like any constant; the Cast CANN runs as its own kernel before
TransData is done inside this kernel (one ``TransData`` row in ``stats["kernels"]``).
"""

import numpy as np

from npusim.dsl import (
    DataCopyExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_block_num,
    set_atomic_add,
    set_atomic_none,
    set_flag,
    steady,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.dsl.transpose import trans_data_to_5hd_at
from npusim.ops.transdata.plan import C0_B16, Piece, TransPlan

TABLE_EVENT = 5   # event id of the table hand-over flags (the queues use ids from 0 up)
SERIAL_EVENT = 6  # event id of a serial plan's copy-out -> next copy-in hand-over
MAX_REPEATS = 255


def run_transdata(run, plan: TransPlan, src, dst) -> None:
    """Launch the TransData kernel for ``plan`` (nothing to do for an empty plan)."""
    if not plan.pieces:
        return
    table = np.concatenate(plan.tables) if plan.tables else np.zeros(8, np.uint32)
    starts = np.cumsum([0] + [t.size for t in plan.tables])
    tables = run.gm.tensor(f"{plan.name}.tables", np.uint32, table.size, table)
    cores = len(plan.lanes) if plan.lanes else min(run.chip.vector_core_count, len(plan.pieces))
    run.launch(TransDataKernel, block_dim=cores, name=plan.name, impl="tik",
               args=dict(src=src, dst=dst, tables=tables, starts=starts, plan=plan))


class TransDataKernel(Kernel):
    """Pieces ``block_idx``, ``block_idx + block_num``, ... of a TransPlan."""

    def init(self, src, dst, tables, starts, plan: TransPlan):
        self.src, self.dst, self.tables, self.starts, self.plan = src, dst, tables, starts, plan
        self.cast = plan.in_item != plan.out_item
        depth = 1 if plan.serial else 2
        self.in_que = TQue(TPosition.VECIN, depth, name="inQueue")
        self.out_que = TQue(TPosition.VECOUT, depth, name="outQueue")
        self.pipe.init_buffer(self.in_que, depth, plan.in_elems * plan.in_item + 32)
        self.pipe.init_buffer(self.out_que, depth, plan.out_elems * plan.out_item)
        if not plan.vnchwconv:
            self.table_buf = TBuf(TPosition.VECCALC, name="tableBuf")
            self.pipe.init_buffer(self.table_buf, max(t.size for t in plan.tables) * 4)
        if self.cast:
            self.gathered = TBuf(TPosition.VECCALC, name="gatherBuf")
            self.pipe.init_buffer(self.gathered, plan.out_elems * plan.in_item)
        self.loaded = -1

    def my_pieces(self):
        """This core's piece indices: its lane, or every block_num-th piece."""
        if self.plan.lanes:
            return self.plan.lanes[get_block_idx()]
        return range(get_block_idx(), len(self.plan.pieces), get_block_num())

    def process(self):
        for i in steady(self.my_pieces(), key=self.piece_key, mode="stream"):
            piece = self.plan.pieces[i]
            if not self.plan.vnchwconv:
                self.load_table(piece.table)
            self.copy_in(piece)
            if self.plan.vnchwconv == "to_5hd":
                self.transpose(piece)
            elif self.plan.vnchwconv == "from_nd":
                self.transpose_back(piece)
            else:
                self.compute(piece)
            self.copy_out(piece)
            if self.plan.serial:   # the next copy-in reuses the buffer this one copied out of
                set_flag("MTE3_MTE2", SERIAL_EVENT)
                wait_flag("MTE3_MTE2", SERIAL_EVENT)

    def piece_key(self, i: int) -> tuple:
        """What piece ``i``'s instructions depend on besides addresses (npusim.dsl.steady):
        its geometry, and its table when the plan gathers by table."""
        p = self.plan.pieces[i]
        return (p.rows, p.row_len, p.row_stride, p.outer, p.outer_stride, p.count,
                p.count_stride, p.length, p.src_outer, p.src_outer_stride,
                None if self.plan.vnchwconv else p.table)

    def load_table(self, t: int):
        if t == self.loaded:
            return
        size = self.plan.tables[t].size
        if self.loaded >= 0:   # the gathers reading the old table are done before it changes
            set_flag("V_MTE2", TABLE_EVENT)
            wait_flag("V_MTE2", TABLE_EVENT)
        data_copy_pad(self.table_buf.get("uint32"), self.tables[int(self.starts[t])],
                      DataCopyExtParams(block_count=1, block_len=size * 4))
        set_flag("MTE2_V", TABLE_EVENT)
        wait_flag("MTE2_V", TABLE_EVENT)
        self.loaded = t

    def copy_in(self, p: Piece):
        t = self.in_que.alloc_tensor(self.plan.src_dtype)
        item, block = self.plan.in_item, p.rows * self.plan.in_pitch(p.row_len)
        for o in range(p.src_outer):
            data_copy_pad(t[o * block] if o else t, self.src[p.src + o * p.src_outer_stride],
                          DataCopyExtParams(block_count=p.rows, block_len=p.row_len * item,
                                            src_stride=(p.row_stride - p.row_len) * item))
        self.in_que.enque(t)

    def compute(self, p: Piece):
        t = self.in_que.deque()
        zero_at = p.src_outer * p.rows * self.plan.in_pitch(p.row_len)
        vec.duplicate(t[zero_at], 0, 32 // self.plan.in_item)
        n = p.outer * p.count * self.plan.out_pitch(p.length)
        out = self.out_que.alloc_tensor(self.plan.dst_dtype)
        if self.cast:
            g = self.gathered.get(self.plan.src_dtype)
            vec.gather(g, t, self.table_buf.get("uint32"), 0, n)
            vec.cast(out, g, "rint" if self.plan.out_item < self.plan.in_item else "none", n)
        else:
            vec.gather(out, t, self.table_buf.get("uint32"), 0, n)
        self.in_que.free_tensor(t)
        self.out_que.enque(out)

    def transpose(self, p: Piece):
        """C0 rows of ``row_len`` positions -> positions x C0 by TransDataTo5HD; channels
        beyond ``rows`` read a zeroed row."""
        t = self.in_que.deque()
        pitch = self.plan.in_pitch(p.row_len)
        if p.rows < C0_B16:
            vec.duplicate(t[p.rows * pitch].reinterpret_cast(np.int16), 0, pitch)   # 0 bits
        src = [min(i, p.rows) * pitch for i in range(C0_B16)]
        out = self.out_que.alloc_tensor(self.plan.dst_dtype)
        repeats = pitch // C0_B16
        for r0 in range(0, repeats, MAX_REPEATS):
            n = min(MAX_REPEATS, repeats - r0)
            trans_data_to_5hd_at(out, tuple(range(r0 * C0_B16 * C0_B16, (r0 + 1) * C0_B16 * C0_B16,
                                                  C0_B16)),
                                 t, tuple(s + r0 * C0_B16 for s in src), n,
                                 dst_rep_stride=C0_B16, src_rep_stride=1)
        self.in_que.free_tensor(t)
        self.out_que.enque(out)

    def transpose_back(self, p: Piece):
        """``rows`` positions of ``row_len`` channels -> channel rows of positions, one
        TransDataTo5HD per 16 positions repeating over the 16-channel blocks (the rows and
        columns past the piece are padding, never copied out)."""
        t = self.in_que.deque()
        in_pitch, out_pitch = self.plan.in_pitch(p.row_len), self.plan.out_pitch(p.length)
        out = self.out_que.alloc_tensor(self.plan.dst_dtype)
        for pb in range(out_pitch // C0_B16):
            trans_data_to_5hd_at(out, tuple(range(pb * C0_B16, pb * C0_B16 + C0_B16 * out_pitch,
                                                  out_pitch)),
                                 t, tuple(range(pb * C0_B16 * in_pitch,
                                                (pb + 1) * C0_B16 * in_pitch, in_pitch)),
                                 in_pitch // C0_B16, dst_rep_stride=out_pitch,
                                 src_rep_stride=1)
        self.in_que.free_tensor(t)
        self.out_que.enque(out)

    def copy_out(self, p: Piece):
        out = self.out_que.deque()
        item, pitch = self.plan.out_item, self.plan.out_pitch(p.length)
        per_outer = p.count * pitch
        # UB runs are ``pitch`` elements apart: past the 32-byte rounding of a run when a
        # widening cast (16 -> 32 bits) pitches them to the narrower dtype's 32 bytes
        gap = (pitch * item - -(-p.length * item // 32) * 32) // 32
        if self.plan.atomic:
            set_atomic_add()
        for o in range(p.outer):
            data_copy_pad(self.dst[p.dst + o * p.outer_stride], out[o * per_outer],
                          DataCopyExtParams(block_count=p.count, block_len=p.length * item,
                                            src_stride=gap,
                                            dst_stride=(p.count_stride - p.length) * item))
        if self.plan.atomic:
            set_atomic_none()
        self.out_que.free_tensor(out)
