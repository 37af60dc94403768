"""The cube core's side of the FlashAttentionScoreGrad mix kernel (Atlas A2).

Per task (one query block of one head) Q and dO go to L1 once (ND -> NZ: zN, which serves both
as a left matrix, loaded zZ, and as a RowMajor right one, loaded with transposes). Per key
block g, as CANN's FAG S1S2 template (Cube1, then Cube2 of the block before):

- Cube1: K's and V's blocks to L1; S = Q K^T and dP = dO V^T (one Mmad each, K and V read as
  ColumnMajor B), each FixPipe'd in fp32 to its slot g % 2 of the workspace; then
  CrossCoreSetFlag ``FLAG_S`` from FIX;
- Cube2 of block g - 1: CrossCoreWaitFlag of each vector core's ``FLAG_P`` id on MTE2; P and
  dS (q's dtype) from their slots to L1; dV += P^T dO, dQ += dS K, dK += dS^T Q (the
  transposed left matrices by transposing LoadData2D of the zN tile), each FixPipe'd with
  atomic add into its fp32 workspace (zeroed by MemSet first; the post kernel scales dQ and
  dK and casts); then ``FLAG_G`` from FIX: the P and dS slots may be written again.

Slot safety as in the forward (``fa_cube.py``): S and dP slot g % 2 are written after the cube
waited for P of block g - 2, set after the vector cores read S and dP of block g - 2; the vector
cores write P and dS slot g % 2 after ``FLAG_G`` of block g - 2. Not modelled: CANN's Matmul
API message queue, its 128 x 1024 CV blocks (128 x 128 here), L1 reuse between tasks.
"""

from npusim.dsl import (
    Pipe,
    TPosition,
    TQue,
    cross_core_set_flag,
    cross_core_wait_flag,
    cube,
    set_atomic_add,
    set_atomic_none,
)
from npusim.ops.attention.fa_cube import FLAG_P, FLAG_S, load_zz, mmad_fixpipe
from npusim.ops.attention.tiling import FRAC
from npusim.ops.common import ceil_div, round_up

FLAG_G = 5       # AIC -> AIVs: the block's gradients are out, its P and dS slots are free


def load_rows_b(b2, src, kf: int, nf: int) -> None:
    """A zN tile (k rows x n) -> L0B as a RowMajor B: one transposing load per k fractal row."""
    for kk in range(kf):
        cube.load_data(b2[kk * nf * FRAC * FRAC], src, cube.LoadData2DParams(
            start_index=kk, repeat_times=nf, src_stride=kf, if_transpose=True))


def load_t(a2, src, fractals: int) -> None:
    """A zN tile (rows x cols) -> L0A as its transpose, zZ: one transposing load."""
    cube.load_data(a2, src, cube.LoadData2DParams(start_index=0, repeat_times=fractals,
                                                  src_stride=1, if_transpose=True))


class FagCube:
    """The AIC's methods of ``FlashAttentionGradKernel``."""

    def init_cube(self):
        t, size = self.t, self.dtype.itemsize
        ques = {"l1Q": (TPosition.A1, 1, t.s1_base * t.d), "l1dO": (TPosition.A1, 1,
                                                                     t.s1_base * t.d),
                "l1K": (TPosition.B1, 2, t.s2_base * t.d), "l1V": (TPosition.B1, 1,
                                                                   t.s2_base * t.d),
                "l1PdS": (TPosition.A1, 1, 2 * t.s1_base * t.s2_base)}   # P, then dS
        self.l1 = {}
        for name, (pos, num, elements) in ques.items():
            self.l1[name] = TQue(pos, num, name=name)
            self.pipe.init_buffer(self.l1[name], num, elements * size)
        self.a2, self.b2 = TQue(TPosition.A2, 2, name="l0A"), TQue(TPosition.B2, 2, name="l0B")
        self.co1 = TQue(TPosition.CO1, 2, name="l0C")
        side = max(t.s1_base, t.s2_base)
        self.pipe.init_buffer(self.a2, 2, side * max(t.d, side) * size)
        self.pipe.init_buffer(self.b2, 2, side * t.d * size)
        self.pipe.init_buffer(self.co1, 2, side * max(t.d, side) * 4)

    def to_l1(self, name, gm, rows, cols, stride, c0_stride):
        que = self.l1[name]
        tile = que.alloc_tensor(self.dtype)
        cube.data_copy_nd2nz(tile, gm, cube.Nd2NzParams(
            n_value=rows, d_value=cols, src_d_value=stride, dst_nz_c0_stride=c0_stride,
            dst_nz_n_stride=1))
        que.enque(tile)
        return que.deque()

    def process_cube(self):
        t, g = self.t, 0
        for task in t.core_tasks(self.core):
            b, n, r0, rows = t.task(task)
            blocks = t.key_blocks(r0, rows)
            at, m16 = t.offset(b, n, r0, t.s1), round_up(rows, FRAC)
            q1 = self.to_l1("l1Q", self.q_gm[at], rows, t.d, t.row_stride(), m16)
            do1 = self.to_l1("l1dO", self.dy_gm[at], rows, t.d, t.row_stride(), m16)
            keys = []
            for idx, (c0, cols) in enumerate(blocks):
                keys.append(self.cube1(q1, do1, b, n, rows, c0, cols, (g + idx) % 2))
                if idx:
                    self.cube2(q1, do1, keys[idx - 1], b, n, r0, rows, blocks[idx - 1],
                               (g + idx - 1) % 2)
            self.cube2(q1, do1, keys[-1], b, n, r0, rows, blocks[-1], (g + len(blocks) - 1) % 2)
            self.l1["l1Q"].free_tensor(q1)
            self.l1["l1dO"].free_tensor(do1)
            g += len(blocks)

    def cube1(self, q1, do1, b, n, rows, c0, cols, slot):
        """S = Q K^T and dP = dO V^T into their slots; FLAG_S. Returns K's L1 tile."""
        t = self.t
        n16, kf = round_up(cols, FRAC), t.d // FRAC
        mf = round_up(rows, FRAC) // FRAC
        at = t.offset(b, n, c0, t.s2)
        k1 = self.to_l1("l1K", self.k_gm[at], cols, t.d, t.row_stride(), n16)
        v1 = self.to_l1("l1V", self.v_gm[at], cols, t.d, t.row_stride(), n16)
        for left, right, ws in ((q1, k1, self.s_ws), (do1, v1, self.dp_ws)):
            a2 = self.a2.alloc_tensor(self.dtype)
            load_zz(a2, left, mf, kf)
            self.a2.enque(a2)
            b2 = self.b2.alloc_tensor(self.dtype)
            cube.load_data(b2, right, cube.LoadData2DParams(
                start_index=0, repeat_times=kf * n16 // FRAC, src_stride=1))
            self.b2.enque(b2)
            self.mmad_fix(rows, cols, t.d, ws[self.slot_at("s", slot)], t.s2_base)
        self.l1["l1V"].free_tensor(v1)
        cross_core_set_flag(FLAG_S, Pipe.FIX)
        return k1

    def cube2(self, q1, do1, k1, b, n, r0, rows, block, slot):
        """dV += P^T dO, dQ += dS K, dK += dS^T Q (atomic adds); FLAG_G."""
        t = self.t
        c0, cols = block
        rf, cf, nf = ceil_div(rows, FRAC), ceil_div(cols, FRAC), t.d // FRAC
        for flag in FLAG_P:
            cross_core_wait_flag(flag, Pipe.MTE2)
        at, que = self.slot_at("p", slot), self.l1["l1PdS"]
        pds = que.alloc_tensor(self.dtype)
        p1, ds1 = pds, pds[t.s1_base * t.s2_base]
        for dst, ws in ((p1, self.p_ws), (ds1, self.ds_ws)):
            cube.data_copy_nd2nz(dst, ws[at], cube.Nd2NzParams(
                n_value=rows, d_value=cols, src_d_value=t.s2_base,
                dst_nz_c0_stride=rf * FRAC, dst_nz_n_stride=1))
        que.enque(pds)
        que.deque()
        kv_at, q_at = t.offset(b, n, c0, t.s2), t.offset(b, n, r0, t.s1)
        stride = t.row_stride()
        set_atomic_add()
        for left, right, m, k, kfr, dst in (
                (p1, do1, cols, rows, rf, self.dv_ws[kv_at]),
                (ds1, k1, rows, cols, cf, self.dq_ws[q_at]),
                (ds1, q1, cols, rows, rf, self.dk_ws[kv_at])):
            a2 = self.a2.alloc_tensor(self.dtype)
            if left is p1 or right is q1:       # P^T, dS^T: transposed while loaded
                load_t(a2, left, rf * cf)
            else:
                load_zz(a2, left, rf, cf)
            self.a2.enque(a2)
            b2 = self.b2.alloc_tensor(self.dtype)
            load_rows_b(b2, right, kfr, nf)
            self.b2.enque(b2)
            self.mmad_fix(m, t.d, k, dst, stride)
        set_atomic_none()
        que.free_tensor(pds)
        self.l1["l1K"].free_tensor(k1)
        cross_core_set_flag(FLAG_G, Pipe.FIX)

    def mmad_fix(self, rows, cols, k, dst, dst_stride):
        """One Mmad of the loaded L0A x L0B; FixPipe fp32 to ``dst``."""
        mmad_fixpipe(self, rows, cols, k, dst, dst_stride)
