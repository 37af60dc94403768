"""The cube core's side of the FlashAttentionScore mix kernel (Atlas A2): bmm1 S = Q K^T, bmm2
O = P V, each through GM workspace to and from the core's two vector cores.

Per task (one query block of one head) the Q block goes to L1 once (ND -> NZ); per key block g:

- bmm1: K's block to L1 (ND -> NZ, as a ColumnMajor B: S = Q . K^T), Q and K to L0A / L0B,
  one Mmad (m = the block's rows, n = its keys, k = D) into L0C, FixPipe of the fp32 scores to
  the S slot g % 3 of this core's workspace, then CrossCoreSetFlag ``FLAG_S`` from FIX;
- bmm2 of the block two before (CANN's "Cube double issue", its FAG design note: the cube
  issues two blocks' bmm1 ahead, so that the vector cores never wait for a score block and the
  cube's bmm1 overlaps their softmax): V's block to L1 first, then CrossCoreWaitFlag on MTE2 of
  each vector
  core's ``FLAG_P`` id (set once its half of P is in the P slot; one id each, so that a core
  running ahead, one with no rows, cannot stand in for the other), P's block (bf16, ND -> NZ,
  its k = the block's keys, the copy zero-filling the last fractal) and V's block (RowMajor B,
  transposing loads) to L1, one Mmad into L0C, FixPipe of the fp32 product to the O slot, then
  ``FLAG_O`` from FIX.

Why the slots are safe without more flags: the cube writes S slot g % 3 after it waited for
P of block g - 3 (its bmm2 of block g - 3 came first), which each vector core sets after reading
S of block g - 3; P and O have two slots each: the vector cores
write P slot g % 2 after reading O of block g - 2, which the cube writes after it read P of
block g - 2; the cube writes O slot g % 2 after P of block g, set after the vector cores read
O of block g - 2. Not modelled: CANN's Matmul API message queue (cross-core flags here), the
L1 reuse of K and V between bmm1 and bmm2 (reloaded), its unit flag.
"""

from npusim.dsl import Pipe, TPosition, TQue, cross_core_set_flag, cross_core_wait_flag, cube
from npusim.ops.attention.tiling import FRAC
from npusim.ops.common import ceil_div, round_up

FLAG_S, FLAG_O = 1, 2       # cross-core flag ids, AIC -> AIVs: S ready, O ready
FLAG_P = (3, 4)              # AIV sub-block 0 / 1 -> AIC: its half of P ready
QUANT = cube.QuantMode.NoQuant          # the scores and P V leave L0C in fp32
LOOKAHEAD = 2      # bmm1 of block g + 2 before bmm2 of block g (CANN's "Cube double issue")
S_SLOTS = 3        # S slots: g, g + 1 and g + 2 may be live at once


class FaCube:
    """The AIC's methods of the mix kernel (``FlashAttentionKernel``)."""

    def init_cube(self):
        t, dt = self.t, self.dtype
        self.q1 = TQue(TPosition.A1, 1, name="l1Q")
        self.k1 = TQue(TPosition.B1, 2, name="l1K")
        self.p1 = TQue(TPosition.A1, 1, name="l1P")
        self.v1 = TQue(TPosition.B1, 1, name="l1V")
        self.a2, self.b2 = TQue(TPosition.A2, 2, name="l0A"), TQue(TPosition.B2, 2, name="l0B")
        self.co1 = TQue(TPosition.CO1, 2, name="l0C")
        size = dt.itemsize
        self.pipe.init_buffer(self.q1, 1, t.s1_base * t.d * size)
        self.pipe.init_buffer(self.k1, 2, t.s2_base * t.d * size)
        self.pipe.init_buffer(self.p1, 1, t.s1_base * t.s2_base * size)
        self.pipe.init_buffer(self.v1, 1, t.s2_base * t.d * size)
        self.pipe.init_buffer(self.a2, 2, t.s1_base * max(t.d, t.s2_base) * size)
        self.pipe.init_buffer(self.b2, 2, t.s2_base * t.d * size)
        self.pipe.init_buffer(self.co1, 2, t.s1_base * max(t.d, t.s2_base) * 4)

    def process_cube(self):
        t, core = self.t, self.core
        g = 0
        for task in t.core_tasks(core):
            b, n, r0, rows = t.task(task)
            blocks = t.key_blocks(r0, rows)
            q1 = self.q1.alloc_tensor(self.dtype)
            cube.data_copy_nd2nz(q1, self.q_gm[t.offset(b, n, r0, t.s1)], cube.Nd2NzParams(
                n_value=rows, d_value=t.d, src_d_value=t.row_stride(),
                dst_nz_c0_stride=round_up(rows, FRAC), dst_nz_n_stride=1))
            self.q1.enque(q1)
            q1 = self.q1.deque()
            for idx in range(len(blocks) + LOOKAHEAD):
                if idx < len(blocks):
                    self.bmm1(q1, b, n, rows, *blocks[idx], (g + idx) % S_SLOTS)
                j = idx - LOOKAHEAD
                if j >= 0:
                    self.bmm2(b, n, rows, blocks[j], (g + j) % 2)
            self.q1.free_tensor(q1)
            g += len(blocks)

    def bmm1(self, q1, b, n, rows, c0, cols, slot):
        """S = Q . K^T of one block into S slot ``slot``; FLAG_S."""
        t, dt = self.t, self.dtype
        m16, n16, kf = round_up(rows, FRAC), round_up(cols, FRAC), t.d // FRAC
        k1 = self.k1.alloc_tensor(dt)
        cube.data_copy_nd2nz(k1, self.k_gm[t.offset(b, n, c0, t.s2)], cube.Nd2NzParams(
            n_value=cols, d_value=t.d, src_d_value=t.row_stride(), dst_nz_c0_stride=n16,
            dst_nz_n_stride=1))
        self.k1.enque(k1)
        k1 = self.k1.deque()
        a2 = self.a2.alloc_tensor(dt)
        load_zz(a2, q1, m16 // FRAC, kf)
        self.a2.enque(a2)
        b2 = self.b2.alloc_tensor(dt)
        cube.load_data(b2, k1, cube.LoadData2DParams(start_index=0, repeat_times=kf * n16 // FRAC,
                                                     src_stride=1))
        self.b2.enque(b2)
        self.k1.free_tensor(k1)
        self.mmad_out(rows, cols, t.d, self.s_ws[self.slot_at("s", slot)], t.s2_base, FLAG_S)

    def bmm2(self, b, n, rows, block, slot):
        """O = P . V of one block from P slot ``slot`` into O slot ``slot``; FLAG_O."""
        t, dt = self.t, self.dtype
        c0, cols = block
        m16, kf, nf = round_up(rows, FRAC), ceil_div(cols, FRAC), t.d // FRAC
        v1 = self.v1.alloc_tensor(dt)       # V first: it does not wait for the vector cores
        k16 = kf * FRAC
        cube.data_copy_nd2nz(v1, self.v_gm[t.offset(b, n, c0, t.s2)], cube.Nd2NzParams(
            n_value=cols, d_value=t.d, src_d_value=t.row_stride(), dst_nz_c0_stride=k16,
            dst_nz_n_stride=1))
        self.v1.enque(v1)
        for flag in FLAG_P:       # one id per vector core: a count of sets is that core's
            cross_core_wait_flag(flag, Pipe.MTE2)
        p1 = self.p1.alloc_tensor(dt)
        cube.data_copy_nd2nz(p1, self.p_ws[self.slot_at("p", slot)], cube.Nd2NzParams(
            n_value=rows, d_value=cols, src_d_value=t.s2_base, dst_nz_c0_stride=m16,
            dst_nz_n_stride=1))
        self.p1.enque(p1)
        p1, v1 = self.p1.deque(), self.v1.deque()
        a2 = self.a2.alloc_tensor(dt)
        load_zz(a2, p1, m16 // FRAC, kf)
        self.a2.enque(a2)
        b2 = self.b2.alloc_tensor(dt)
        for kk in range(kf):     # zN V (keys x D) -> L0B: one transposing load per k row
            cube.load_data(b2[kk * nf * FRAC * FRAC], v1, cube.LoadData2DParams(
                start_index=kk, repeat_times=nf, src_stride=kf, if_transpose=True))
        self.b2.enque(b2)
        self.p1.free_tensor(p1)
        self.v1.free_tensor(v1)
        self.mmad_out(rows, t.d, cols, self.o_ws[self.slot_at("o", slot)], t.d, FLAG_O)

    def mmad_out(self, rows, cols, k, dst, dst_stride, flag):
        """One Mmad of the loaded L0A x L0B, FixPipe fp32 to ``dst``, the flag of its kind."""
        mmad_fixpipe(self, rows, cols, k, dst, dst_stride)
        cross_core_set_flag(flag, Pipe.FIX)


def load_zz(a2, a1, mf: int, kf: int) -> None:
    """L1 zN (``mf`` fractal rows, ``kf`` fractal columns) -> L0A zZ: one LoadData2D a row."""
    for mb in range(mf):
        cube.load_data(a2[mb * kf * FRAC * FRAC], a1, cube.LoadData2DParams(
            start_index=mb, repeat_times=kf, src_stride=mf))


def mmad_fixpipe(core, rows, cols, k, dst, dst_stride) -> None:
    """One Mmad of the L0A x L0B tiles ``core`` loaded (its a2, b2 and co1 queues), then
    FixPipe of the fp32 result to ``dst`` (GM workspace rows ``dst_stride`` apart)."""
    a2, b2 = core.a2.deque(), core.b2.deque()
    c = core.co1.alloc_tensor("float32")
    m16 = round_up(rows, FRAC)
    cube.mmad(c, a2, b2, cube.MmadParams(m=m16, n=round_up(cols, FRAC), k=k))
    core.a2.free_tensor(a2)
    core.b2.free_tensor(b2)
    core.co1.enque(c)
    c = core.co1.deque()
    cube.fixpipe(dst, c, cube.FixpipeParamsV220(m_size=rows, n_size=cols, src_stride=m16,
                                                dst_stride=dst_stride, quant_pre=QUANT))
    core.co1.free_tensor(c)
