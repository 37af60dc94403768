"""MatMulV2 on the Atlas training series (coupled AI cores, Ascend 910): C = op(A) . op(B), fp16
in, fp16 or fp32 out, as aclnnMatmul runs it there (``training.py``).

The training series has no FixPipe and no GM -> L1 ND -> NZ copy (kernels.md 2(d): on chips
without ``Intrinsic_fix_pipe_l0c2out`` the legal flow is GM -> L1, L1 -> L0A/L0B, L0C -> UB,
UB -> GM). So the operands come in FRACTAL_NZ (``in_format`` "NZ": TransData made them,
``transdata_nz.py``) or, for the aligned shapes CANN passes in ND, in ND read fractal column by
fractal column (one 32-byte burst per row; ``in_format`` "ND"), and the result leaves L0C through
UB: ``DataCopy(CO2, CO1)`` (L0C -> UB), a vector Cast fp32 -> fp16 (CAST_RINT; none for fp32
out), and MTE3 to GM in FRACTAL_NZ (or ND rows on the ND route). The schedule:

- each core takes one region of the output fractals (``v2_tiling.py``), walked in base blocks
  of ``base_m`` x ``base_n`` (m outer), each block's k in L1 tiles of ``l1_k``, increasing k;
- per L1 tile: A's rows and B's columns of the block to L1 (MTE2; two L1 stages, the next tile
  copied before the current one is used), then L0 steps of ``base_k``: A to L0A in ZZ (one
  LoadData2D per 16-row fractal row; a transposed A, stored k x m, with the transposing load),
  B to L0B in ZN (a transposed B, stored n x k, is ZN already; a plain one, k x n, loads with
  the transpose), two L0 stages, one Mmad per step into L0C;
- after a block's last step: L0C -> UB -> (Cast) -> GM; two L0C buffers, so the next block's
  Mmads run while the last one drains;
- CANN's split-K route (fp16 in, fp32 NZ out): ``k_parts`` cores share a region, each taking a
  part of K and adding its fp32 partial into the output (zeroed by MemSet first) with atomic
  adds.

Not modelled: TBE's own tiling (``v2_tiling.py``), bias.
"""

from npusim.dsl import (
    DataCopyParams,
    Kernel,
    TPosition,
    TQue,
    cube,
    data_copy,
    get_block_idx,
    set_atomic_add,
    set_atomic_none,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div, round_up
from npusim.ops.matmul.v2_tiling import FRAC, MatmulV2Tiling

FRACTAL = FRAC * FRAC
MAX_REPEAT = 255


def _load(dst, src, start: int, repeat: int, stride: int, transpose: bool) -> None:
    """LoadData2D of ``repeat`` fractals, cut at the 255-repeat limit."""
    for r0 in range(0, repeat, MAX_REPEAT):
        count = min(MAX_REPEAT, repeat - r0)
        cube.load_data(dst[r0 * FRACTAL] if r0 else dst, src, cube.LoadData2DParams(
            start_index=start + r0 * stride, repeat_times=count, src_stride=stride,
            if_transpose=transpose))


class MatmulV2Kernel(Kernel):
    core_type = "aic"

    def init(self, a, b, c, tiling: MatmulV2Tiling):
        self.a_gm, self.b_gm, self.c_gm, self.t = a, b, c, tiling
        t = tiling
        self.a1, self.b1 = TQue(TPosition.A1, 2, name="l1A"), TQue(TPosition.B1, 2, name="l1B")
        self.a2, self.b2 = TQue(TPosition.A2, 2, name="l0A"), TQue(TPosition.B2, 2, name="l0B")
        self.co1 = TQue(TPosition.CO1, 2, name="l0C")
        self.co2 = TQue(TPosition.CO2, 1, name="ubC")
        self.pipe.init_buffer(self.a1, 2, t.base_m * t.l1_k * 2)
        self.pipe.init_buffer(self.b1, 2, t.base_n * t.l1_k * 2)
        self.pipe.init_buffer(self.a2, 2, t.base_m * t.base_k * 2)
        self.pipe.init_buffer(self.b2, 2, t.base_n * t.base_k * 2)
        self.pipe.init_buffer(self.co1, 2, t.base_m * t.base_n * 4)
        self.pipe.init_buffer(self.co2, 1, t.base_m * t.base_n * 4)
        self.out_item = 4 if t.out_dtype == "float32" else 2
        if self.out_item != 4:
            self.cast_que = TQue(TPosition.VECOUT, 1, name="castC")
            self.pipe.init_buffer(self.cast_que, 1, t.base_m * t.base_n * self.out_item)

    def blocks(self) -> list:
        """This core's base blocks: (first fractal row, rows, first fractal column, cols)."""
        t, region = self.t, get_block_idx() // self.t.k_parts
        cols = ceil_div(t.n1, t.core_n1)
        ri, ci = divmod(region, cols)
        m_lo, n_lo = ri * t.core_m1, ci * t.core_n1
        m_hi, n_hi = min(t.m1, m_lo + t.core_m1), min(t.n1, n_lo + t.core_n1)
        bm, bn = t.base_m // FRAC, t.base_n // FRAC
        return [(mb, min(bm, m_hi - mb), nb, min(bn, n_hi - nb))
                for mb in range(m_lo, m_hi, bm) for nb in range(n_lo, n_hi, bn)]

    def k_tiles(self) -> list:
        """This core's L1 k tiles (start, depth): its part of K in tiles of ``l1_k``."""
        t = self.t
        lo = (get_block_idx() % t.k_parts) * t.part_k
        hi = min(t.k, lo + t.part_k)
        return [(k0, min(t.l1_k, hi - k0)) for k0 in range(lo, hi, t.l1_k)]

    def process(self):
        tiles = self.k_tiles()
        steps = [(block, kt) for block in self.blocks() for kt in range(len(tiles))]
        if not steps:
            return
        pending = self.copy_in(steps[0][0], *tiles[0])
        c = None
        for i, (block, kt) in enumerate(steps):
            current = pending
            if i + 1 < len(steps):
                nxt = steps[i + 1]
                pending = self.copy_in(nxt[0], *tiles[nxt[1]])
            if kt == 0:
                c = self.co1.alloc_tensor("float32")
            self.compute(c, block, kt, current)
            if kt == len(tiles) - 1:
                self.copy_out(c, block)

    # --- MTE2: GM -> L1 -------------------------------------------------------------------

    def copy_in(self, block, k_lo, depth):
        """The L1 tile of the block's A rows and B columns at ``k_lo``; its depth."""
        t = self.t
        mb, mf, nb, nf = block
        a1, b1 = self.a1.alloc_tensor("float16"), self.b1.alloc_tensor("float16")
        if t.trans_a:   # stored k x m
            self.copy_tile(a1, self.a_gm, (t.k, t.m), (k_lo, depth), (mb * FRAC, mf * FRAC))
        else:
            self.copy_tile(a1, self.a_gm, (t.m, t.k), (mb * FRAC, mf * FRAC), (k_lo, depth))
        if t.trans_b:   # stored n x k
            self.copy_tile(b1, self.b_gm, (t.n, t.k), (nb * FRAC, nf * FRAC), (k_lo, depth))
        else:
            self.copy_tile(b1, self.b_gm, (t.k, t.n), (k_lo, depth), (nb * FRAC, nf * FRAC))
        self.a1.enque(a1)
        self.b1.enque(b1)
        return depth

    def copy_tile(self, dst, src, shape, rows, cols):
        """Rows ``rows`` (start, count) x columns ``cols`` of a stored matrix ``shape`` ->
        L1 NZ [columns / 16][rows rounded to 16][16]."""
        (r0, nr), (c0, nc) = rows, cols
        tr, tc = round_up(nr, FRAC), round_up(nc, FRAC)
        if self.t.in_format == "NZ":   # the tile's fractal columns, one burst each
            r16 = round_up(shape[0], FRAC)
            data_copy(dst, src[(c0 // FRAC) * r16 * FRAC + r0 * FRAC], DataCopyParams(
                block_count=tc // FRAC, block_len=tr, src_stride=r16 - tr))
            return
        width = shape[1] // FRAC    # ND, aligned: one 32-byte burst per row and fractal column
        for j in range(tc // FRAC):
            data_copy(dst[j * tr * FRAC], src[r0 * shape[1] + c0 + j * FRAC], DataCopyParams(
                block_count=tr, block_len=1, src_stride=width - 1))

    # --- MTE1 and M: L1 -> L0, Mmad -----------------------------------------------------------

    def compute(self, c, block, kt, depth):
        t = self.t
        _, mf, _, nf = block
        kt1 = ceil_div(depth, FRAC)
        a1, b1 = self.a1.deque(), self.b1.deque()
        for s, k_lo in enumerate(range(0, depth, t.base_k)):
            step = min(t.base_k, depth - k_lo)
            kf = ceil_div(step, FRAC)
            a2 = self.a2.alloc_tensor("float16")
            self.load_a(a2, a1, k_lo // FRAC, kf, kt1, mf)
            self.a2.enque(a2)
            b2 = self.b2.alloc_tensor("float16")
            self.load_b(b2, b1, k_lo // FRAC, kf, kt1, nf)
            self.b2.enque(b2)
            a2, b2 = self.a2.deque(), self.b2.deque()
            cube.mmad(c, a2, b2, cube.MmadParams(m=mf * FRAC, n=nf * FRAC, k=step,
                                                 cmatrix_init_val=kt == 0 and s == 0))
            self.a2.free_tensor(a2)
            self.b2.free_tensor(b2)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)

    def load_a(self, a2, a1, k0, kf, kt1, mf):
        """L0A ZZ [mf][kf]: from L1 [kt1][mf] (plain) or [mf][kt1] transposed fractals."""
        if self.t.trans_a:
            if kf == kt1:
                _load(a2, a1, 0, mf * kf, 1, True)
                return
            for m in range(mf):
                _load(a2[m * kf * FRACTAL], a1, m * kt1 + k0, kf, 1, True)
            return
        for m in range(mf):
            _load(a2[m * kf * FRACTAL], a1, k0 * mf + m, kf, mf, False)

    def load_b(self, b2, b1, k0, kf, kt1, nf):
        """L0B ZN [kf][nf]: from L1 [kt1][nf] (transposed B: ZN already) or [nf][kt1]
        fractals to transpose."""
        if self.t.trans_b:
            _load(b2, b1, k0 * nf, kf * nf, 1, False)
            return
        for kk in range(kf):
            _load(b2[kk * nf * FRACTAL], b1, k0 + kk, nf, kt1, True)

    # --- out: L0C -> UB -> (Cast) -> GM ----------------------------------------------------------

    def copy_out(self, c, block):
        mb, mf, nb, nf = block
        self.co1.enque(c)
        c = self.co1.deque()
        co2 = self.co2.alloc_tensor("float32")
        cube.data_copy_l0c_to_ub(co2, c, DataCopyParams(block_count=1, block_len=mf * nf))
        self.co1.free_tensor(c)
        out, que = co2, self.co2
        if self.out_item != 4:
            out = self.cast_que.alloc_tensor("float16")
            vec.cast(out, co2, "rint", mf * nf * FRACTAL)
            self.co2.free_tensor(co2)
            que = self.cast_que
        que.enque(out)
        out = que.deque()
        self.write(out, mb, mf, nb, nf)
        que.free_tensor(out)

    def write(self, out, mb, mf, nb, nf):
        """UB NZ [nf][mf * 16][16] -> GM NZ [n1][m1 * 16][16], or ND rows on the ND route."""
        t, row = self.t, FRAC * self.out_item // 32     # 32-byte blocks per 16-element row
        if t.k_parts > 1:   # split K: the parts add into the zeroed output
            set_atomic_add()
        if t.out_format == "NZ":
            data_copy(self.c_gm[nb * t.m1 * FRACTAL + mb * FRACTAL], out, DataCopyParams(
                block_count=nf, block_len=mf * FRAC * row, dst_stride=(t.m1 - mf) * FRAC * row))
        else:
            for j in range(nf):
                data_copy(self.c_gm[mb * FRAC * t.n + (nb + j) * FRAC], out[j * mf * FRACTAL],
                          DataCopyParams(block_count=mf * FRAC, block_len=row,
                                         dst_stride=(t.n // FRAC - 1) * row))
        if t.k_parts > 1:
            set_atomic_none()
