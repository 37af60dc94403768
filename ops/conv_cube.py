"""The convolution backward cube kernels: gradInput (dx) and gradWeight (dw), both chips.

Both are implicit GEMMs on one cube core per task, in the Ascend C shape of kernels.md §2(c)-(e):
GM -> L1 (A1/B1 queues, ``l1_buffers`` deep), L1 -> L0A/L0B (A2/B2 queues, ``l0_buffers``
deep), Mmad accumulating in L0C over the whole K of the task, then out.

- dx (``DxKernel``): per (n, group, depth slice, M block of H·W positions, N block of input
  channels), K = (kd, Cout1, kh, kw, C0) in chunks of ``dx_step_k1`` channel blocks. A1 is the
  img2col map: gradOutput rows, zero-dilated by the stride for an ordinary convolution — in L1 on
  Atlas A2 (InitConstValue zeros, then one strided DataCopy per dy row, 32-byte C0 blocks
  ``stride`` blocks apart), in UB on Atlas training (Duplicate zeros, strided copy, UB -> L1);
  LoadData3D (img2col, stride 1, the backprop pads) brings base_k columns into L0A. B1 holds the
  rotated, Cin/Cout-swapped weight fractals for the chunk (the TransData kernel wrote them in
  that order); LoadData2D brings base_k rows into L0B.
- dw (``DwKernel``): per (group, kd, M block of grad channels, N block of (Cin1, kh, kw, C0)
  columns) and a K part (a share of the (n, depth) slices): K = grad positions in chunks of
  ``dw_step_k``. A = gradᵀ by LoadData3D with a 1 x 1 window and en_transpose into L0A; B =
  img2col(feature) by LoadData3D with the real window, stride, dilation and pads into L0B. The
  fp32 result goes to a workspace in the FRACTAL_Z column order, atomically added when K is
  split over cores (or to one slot per K part in the deterministic variant).

Out: FixPipe L0C -> GM with fp32 -> fp16/bf16 conversion (A2), or L0C -> UB on the vector pipe,
a vector Cast, and MTE3 copies of each 16-column Z block (Atlas training, no FixPipe).

Not modelled: CANN's iterateOrder / stepM / stepN L1 reuse of one operand across several
base blocks, unitFlag overlap of FixPipe with the next Mmad, the bias table, the C04 layout.
"""

from dataclasses import replace

from npusim.dsl import (
    DataCopyParams,
    Kernel,
    Pipe,
    TPosition,
    TQue,
    cube,
    current,
    data_copy,
    get_block_idx,
    get_block_num,
    set_atomic_add,
    set_atomic_none,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div, round_up
from npusim.ops.conv_tiling import dw_n_blocks

FRAC = 16
QUANT = {("float32", "float16"): cube.QuantMode.F322F16,
         ("float32", "bfloat16"): cube.QuantMode.F322BF16}


class ConvCubeKernel(Kernel):
    """What the dx and dw kernels share: the queues, the L0 loop and the way out of L0C."""

    core_type = "aic"

    def setup(self, t, cd, out_dtype, l1_a, l1_b, a1_producer=Pipe.MTE2):
        self.t, self.cd, self.out_dtype = t, cd, out_dtype
        self.c0 = 32 // cd.itemsize
        self.chip = current().chip
        self.a1 = TQue(TPosition.A1, t.l1_buffers, producer=a1_producer, name="inQueueA1")
        self.b1 = TQue(TPosition.B1, t.l1_buffers, name="inQueueB1")
        self.a2 = TQue(TPosition.A2, t.l0_buffers, name="inQueueA2")
        self.b2 = TQue(TPosition.B2, t.l0_buffers, name="inQueueB2")
        self.co1 = TQue(TPosition.CO1, 1, name="outQueueCO1")
        self.pipe.init_buffer(self.a1, t.l1_buffers, l1_a)
        self.pipe.init_buffer(self.b1, t.l1_buffers, l1_b)
        self.pipe.init_buffer(self.a2, t.l0_buffers, t.base_m * t.base_k * cd.itemsize)
        self.pipe.init_buffer(self.b2, t.l0_buffers, t.base_n * t.base_k * cd.itemsize)
        self.pipe.init_buffer(self.co1, 1, t.base_m * t.base_n * 4)
        if not self.chip.has_fixpipe:
            self.co2 = TQue(TPosition.CO2, 1, name="outQueueCO2")
            self.pipe.init_buffer(self.co2, 1, t.base_m * t.base_n * 4)
            if out_dtype.itemsize != 4:
                self.cast_que = TQue(TPosition.VECOUT, 1, name="castQueue")
                self.pipe.init_buffer(self.cast_que, 1, t.base_m * t.base_n * out_dtype.itemsize)

    def tasks(self, count: int):
        return range(get_block_idx(), count, get_block_num())

    def zero_block(self, c, m: int, n: int):
        """C = 0 through an Mmad with k = 0 (a block no K step reaches)."""
        a2, b2 = self.a2.alloc_tensor(self.cd), self.b2.alloc_tensor(self.cd)
        self.a2.enque(a2)
        self.b2.enque(b2)
        self.mmad(c, m, n, 0, True)

    def mmad(self, c, m: int, n: int, k: int, init: bool):
        a2, b2 = self.a2.deque(), self.b2.deque()
        cube.mmad(c, a2, b2, cube.MmadParams(m=max(m, 2), n=n, k=k, cmatrix_init_val=init))
        self.a2.free_tensor(a2)
        self.b2.free_tensor(b2)

    def copy_out(self, c, dst, m: int, n: int, row_stride: int, atomic: bool = False):
        """L0C (m x n, NZ) -> GM rows ``row_stride`` elements apart, converting to out_dtype."""
        self.co1.enque(c)
        c = self.co1.deque()
        if self.chip.has_fixpipe:
            quant = QUANT.get((c.dtype.name, self.out_dtype.name), cube.QuantMode.NoQuant)
            if atomic:
                set_atomic_add()
            cube.fixpipe(dst, c, cube.FixpipeParamsV220(m_size=m, n_size=n,
                                                        src_stride=round_up(m, FRAC),
                                                        dst_stride=row_stride, quant_pre=quant))
            if atomic:
                set_atomic_none()
            self.co1.free_tensor(c)
            return
        self.l0c_to_ub_out(c, dst, m, n, row_stride, atomic)

    def l0c_to_ub_out(self, c, dst, m, n, row_stride, atomic):
        m1, n1 = ceil_div(max(m, 2), FRAC), ceil_div(n, FRAC)
        co2 = self.co2.alloc_tensor("float32")
        cube.data_copy_l0c_to_ub(co2, c, DataCopyParams(block_count=1, block_len=m1 * n1))
        self.co1.free_tensor(c)
        out, que = co2, self.co2
        if self.out_dtype.itemsize != 4:
            out = self.cast_que.alloc_tensor(self.out_dtype)
            vec.cast(out, co2, "rint", m1 * n1 * FRAC * FRAC)
            self.co2.free_tensor(co2)
            que = self.cast_que
        que.enque(out)
        out = que.deque()
        item = self.out_dtype.itemsize
        if atomic:
            set_atomic_add()
        for nb in range(n1):   # Z column nb: m rows of 16 elements
            data_copy(dst[nb * FRAC], out[nb * m1 * FRAC * FRAC], DataCopyParams(
                block_count=m, block_len=FRAC * item // 32,
                dst_stride=(row_stride - FRAC) * item // 32))
        if atomic:
            set_atomic_none()
        que.free_tensor(out)


class DxKernel(ConvCubeKernel):
    """gradInput: tasks (n, g, d, M block, N block) round-robin over the cube cores."""

    def init(self, dy5, wb, out, prob, tiling, cd, out_dtype, l1_a, l1_b, hf32):
        self.dy5, self.wb, self.out, self.p = dy5, wb, out, prob
        dilate = prob.h.dil > 1 or prob.w.dil > 1
        staged = dilate and not current().chip.has_fixpipe
        self.setup(tiling, cd, out_dtype, l1_a, l1_b, Pipe.MTE3 if staged else Pipe.MTE2)
        self.dilate, self.staged = dilate, staged
        if staged:
            self.ub = TQue(TPosition.VECIN, 1, producer=Pipe.V, consumer=Pipe.MTE3,
                           name="dilateQueue")
            self.pipe.init_buffer(self.ub, 1, l1_a)
        self.k1 = ceil_div(prob.kc, self.c0)
        self.n16 = round_up(prob.nc, FRAC)
        self.hw = prob.out_dhw[1] * prob.out_dhw[2]
        cube.set_hf32_mode(hf32)

    def process(self):
        t, p = self.t, self.p
        mbs, nbs = ceil_div(self.hw, t.base_m), ceil_div(self.n16, t.base_n)
        total = p.n * p.groups * p.out_dhw[0] * mbs * nbs
        for i in self.tasks(total):
            rest, nb = divmod(i, nbs)
            rest, mb = divmod(rest, mbs)
            rest, di = divmod(rest, p.out_dhw[0])
            n, g = divmod(rest, p.groups)
            self.block(n, g, di, mb * t.base_m, nb * t.base_n)

    def block(self, n, g, di, m0, n0):
        t, p, w = self.t, self.p, self.p.out_dhw[2]
        m, nn = min(t.base_m, self.hw - m0), min(t.base_n, self.n16 - n0)
        h0, h1 = m0 // w, (m0 + m - 1) // w + 1
        cols, parts = p.w.rows_for(0, w), row_chunks(p.h, t.dx_step_kh, h0, h1)
        c = self.co1.alloc_tensor("float32")
        first = True
        if parts and cols.rows:
            for kd, q in p.depth_taps(di):
                for k1_lo in range(0, self.k1, t.dx_step_k1):
                    kc1 = min(t.dx_step_k1, self.k1 - k1_lo)
                    for kr0, krn, rows in parts:
                        self.load_a1(n, g, q, k1_lo, kc1, rows, cols)
                        self.load_b1(g, kd, k1_lo, kc1, n0, nn, (kr0, krn))
                        self.chunk(c, kc1, (rows, krn), cols, m0 - h0 * w, m, nn, first)
                        first = False
        if first:
            self.zero_block(c, m, nn)
        dst = self.out[((n * p.groups + g) * p.out_dhw[0] + di) * self.hw * self.n16
                       + m0 * self.n16 + n0]
        self.copy_out(c, dst, m, nn, self.n16)

    def chunk(self, c, kc1, rows_kh, cols, m_start, m, nn, first):
        """The base_k steps of one L1 chunk (``kh`` kernel rows of ``kc1`` channel blocks):
        img2col into L0A, weight rows into L0B, Mmad."""
        t, p, c0 = self.t, self.p, self.c0
        a1, b1 = self.a1.deque(), self.b1.deque()
        (rows, kh), kw = rows_kh, p.kdhw[2]
        kchunk, nb1 = kc1 * kh * kw * c0, nn // FRAC
        for k_lo in range(0, kchunk, t.base_k):
            kl = min(t.base_k, kchunk - k_lo)
            a2 = self.a2.alloc_tensor(self.cd)
            cube.load_data(a2, a1, cube.LoadData3DParamsV2(
                pad_list=(cols.pad_lo, cols.pad_hi, rows.pad_lo, rows.pad_hi), l1_h=rows.rows,
                l1_w=cols.rows, channel_size=kc1 * c0, k_extension=kl, m_extension=m,
                k_start_pt=k_lo, m_start_pt=m_start, stride_w=p.w.stride, stride_h=p.h.stride,
                filter_w=kw, filter_h=kh, dilation_filter_w=p.w.d, dilation_filter_h=p.h.d))
            self.a2.enque(a2)
            b2 = self.b2.alloc_tensor(self.cd)
            cube.load_data(b2, b1, cube.LoadData2DParams(
                start_index=(k_lo // c0) * nb1, repeat_times=(kl // c0) * nb1, src_stride=1))
            self.b2.enque(b2)
            self.mmad(c, m, nn, kl, first and k_lo == 0)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)

    def map_base(self, n, g, q, k1_lo) -> int:
        hs, ws = self.p.map_hw
        return ((((n * self.p.groups + g) * self.p.map_d + q) * self.k1 + k1_lo) * hs
                * ws * self.c0)

    def load_a1(self, n, g, q, k1_lo, kc1, rows, cols):
        """The map rows and columns this block reads, zero-dilated if the stride asks."""
        base = self.map_base(n, g, q, k1_lo)
        if not self.dilate:
            a1 = self.a1.alloc_tensor(self.cd)
            copy_map(a1, self.dy5[base], kc1, rows, cols, self.p.map_hw, self.c0)
            self.a1.enque(a1)
            return
        if self.staged:
            self.load_a1_staged(base, kc1, rows, cols)
            return
        a1 = self.a1.alloc_tensor(self.cd)
        cube.init_const_value(a1, cube.InitConstValueParams(
            repeat_times=kc1, block_num=rows.rows * cols.rows))
        self.dilate_rows(a1, base, kc1, rows, cols)
        self.a1.enque(a1)

    def load_a1_staged(self, base, kc1, rows, cols):
        """Atlas training: expand the stride in UB (Duplicate zeros, strided copy), then L1."""
        ub = self.ub.alloc_tensor(self.cd)
        size = kc1 * rows.rows * cols.rows * self.c0
        vec.duplicate(ub, 0, size)
        set_flag("V_MTE2", 0)
        wait_flag("V_MTE2", 0)
        self.dilate_rows(ub, base, kc1, rows, cols)
        set_flag("MTE2_MTE3", 0)
        wait_flag("MTE2_MTE3", 0)
        self.ub.enque(ub)
        ub = self.ub.deque()
        a1 = self.a1.alloc_tensor(self.cd)
        data_copy(a1, ub, size)
        self.ub.free_tensor(ub)
        self.a1.enque(a1)

    def dilate_rows(self, dst, base, kc1, rows, cols):
        """One DataCopy per gradOutput row: its C0 blocks land ``stride`` blocks apart."""
        hs, ws = self.p.map_hw
        sh, sw = self.p.h.dil, self.p.w.dil
        w_first = ceil_div(cols.lo, sw)
        w_last = (cols.hi - 1) // sw
        if w_last < w_first:
            return
        for k in range(kc1):
            for r in range(ceil_div(rows.lo, sh), (rows.hi - 1) // sh + 1):
                at = ((k * rows.rows + r * sh - rows.lo) * cols.rows + w_first * sw - cols.lo)
                data_copy(dst[at * self.c0], self.dy5[base + ((k * hs + r) * ws + w_first)
                                                      * self.c0],
                          DataCopyParams(block_count=w_last - w_first + 1, block_len=1,
                                         dst_stride=sw - 1))

    def load_b1(self, g, kd, k1_lo, kc1, n0, nn, krows):
        """The weight rows (taps) of kernel rows ``krows`` = (first, count) of the chunk's
        channel blocks: one DataCopy, or one per channel block when not all rows."""
        kh, kw = self.p.kdhw[1:]
        kr0, krn = krows
        n1 = self.n16 // FRAC
        frac = FRAC * self.c0
        b1 = self.b1.alloc_tensor(self.cd)
        row0 = ((g * self.p.kdhw[0] + kd) * self.k1 + k1_lo) * kh * kw
        params = DataCopyParams(block_count=kc1 * kh * kw if krn == kh else krn * kw,
                                block_len=nn // FRAC * 16, src_stride=(n1 - nn // FRAC) * 16)
        if krn == kh:
            data_copy(b1, self.wb[(row0 * n1 + n0 // FRAC) * frac], params)
        else:
            for k in range(kc1):
                src = ((row0 + k * kh * kw + kr0 * kw) * n1 + n0 // FRAC) * frac
                dst = k * krn * kw * (nn // FRAC) * frac
                data_copy(b1[dst] if dst else b1, self.wb[src], params)
        self.b1.enque(b1)


def row_chunks(axis, step: int, i0: int, i1: int) -> list:
    """(first kernel row, rows, map Window) per chunk of ``step`` kernel rows that outputs
    [i0, i1) read: each chunk is a convolution with a kernel of its rows on the map shifted by
    its first row (chunks whose window sees only padding add nothing and are left out)."""
    out = []
    for kr0 in range(0, axis.k, step):
        krn = min(step, axis.k - kr0)
        rows = replace(axis, off=axis.off - kr0 * axis.d, k=krn).rows_for(i0, i1)
        if rows.rows:
            out.append((kr0, krn, rows))
    return out


def copy_map(dst, src, kc1, rows, cols, hw, c0):
    """GM NC1HWC0 rows [rows.lo, rows.hi) x columns [cols.lo, cols.hi) -> L1 [kc1, R, C, C0]."""
    hs, ws = hw
    start = (rows.lo * ws + cols.lo) * c0
    if cols.rows == ws:
        data_copy(dst, src[start], DataCopyParams(block_count=kc1, block_len=rows.rows * ws,
                                                  src_stride=(hs - rows.rows) * ws))
        return
    for k in range(kc1):
        data_copy(dst[k * rows.rows * cols.rows * c0], src[start + k * hs * ws * c0],
                  DataCopyParams(block_count=rows.rows, block_len=cols.rows,
                                 src_stride=ws - cols.rows))


class DwKernel(ConvCubeKernel):
    """gradWeight: tasks (K part, g, kd, M block, N block) round-robin over the cube cores."""

    def init(self, grad5, feat5, ws, prob, tiling, cd, l1_a, l1_b, hf32, blocks):
        self.grad5, self.feat5, self.ws, self.p = grad5, feat5, ws, prob
        self.setup(tiling, cd, ws.dtype, l1_a, l1_b)
        self.g1 = ceil_div(prob.gc, self.c0)
        self.f1 = ceil_div(prob.fc, self.c0)
        kh, kw = prob.kdhw[1:]
        self.ncols = self.f1 * kh * kw * self.c0
        self.blocks = blocks      # (mbs, nbs)
        self.nblocks = dw_n_blocks(prob, tiling, self.c0)
        cube.set_hf32_mode(hf32)

    def process(self):
        t, p = self.t, self.p
        mbs, nbs = self.blocks
        per_part = p.groups * p.kdhw[0] * mbs * nbs
        for i in self.tasks(t.dw_k_parts * per_part):
            part, rest = divmod(i, per_part)
            rest, nb = divmod(rest, nbs)
            rest, mb = divmod(rest, mbs)
            g, kd = divmod(rest, p.kdhw[0])
            self.block(part, g, kd, mb, self.nblocks[nb])

    def block(self, part, g, kd, mb, nblock):
        """One (M block, N block = (first column, columns, first kernel row, kernel rows))."""
        t, p = self.t, self.p
        mc1 = t.base_m // self.c0
        k1_lo = mb * mc1
        kc1 = min(mc1, self.g1 - k1_lo)
        n0, nn = nblock[:2]
        slices = p.n * p.grad_dhw[0]
        lo, hi = part * slices // t.dw_k_parts, (part + 1) * slices // t.dw_k_parts
        c = self.co1.alloc_tensor("float32")
        first = True
        for s in range(lo, hi):
            n, dg = divmod(s, p.grad_dhw[0])
            df = p.feature_slice(kd, dg)
            if df >= 0:
                first = self.slice(c, (n, g, dg, df), k1_lo, kc1, nblock, first)
        if first:
            self.zero_block(c, kc1 * self.c0, nn)
        mr = self.g1 * self.c0
        slot = part if t.deterministic else 0
        row0 = ((slot * p.groups + g) * p.kdhw[0] + kd) * mr + k1_lo * self.c0
        atomic = t.dw_k_parts > 1 and not t.deterministic
        self.copy_out(c, self.ws[row0 * self.ncols + n0], kc1 * self.c0, nn, self.ncols,
                      atomic)

    def slice(self, c, at, k1_lo, kc1, nblock, first) -> bool:
        """Accumulate one (n, depth) slice's positions; returns the new ``first``. The feature
        rows are those the N block's kernel rows reach (a convolution with a kernel of those
        rows on the map shifted by the first of them)."""
        t, p = self.t, self.p
        n, g, dg, df = at
        n0, nn, kr0, krn = nblock
        hg, wg = p.grad_dhw[1:]
        cols = p.w.rows_for(0, wg)
        sub = replace(p.h, off=p.h.off - kr0 * p.h.d, k=krn)
        for p0 in range(0, hg * wg, t.dw_step_k):
            p1 = min(hg * wg, p0 + t.dw_step_k)
            r0, r1 = p0 // wg, (p1 - 1) // wg + 1
            rows = sub.rows_for(r0, r1)
            if not (rows.rows and cols.rows):
                continue   # the window sees only padding: a zero contribution
            self.load_grad(n, g, dg, k1_lo, kc1, r0, r1)
            fk = self.load_feature(n, g, df, n0, nn, rows, cols)
            self.chunk(c, kc1, fk, (rows, cols), (p0, p1, r0), nblock, first)
            first = False
        return first

    def load_grad(self, n, g, dg, k1_lo, kc1, r0, r1):
        hg, wg = self.p.grad_dhw[1:]
        base = ((((n * self.p.groups + g) * self.p.grad_dhw[0] + dg) * self.g1 + k1_lo) * hg
                * wg * self.c0)
        a1 = self.a1.alloc_tensor(self.cd)
        data_copy(a1, self.grad5[base + r0 * wg * self.c0], DataCopyParams(
            block_count=kc1, block_len=(r1 - r0) * wg, src_stride=(hg - (r1 - r0)) * wg))
        self.a1.enque(a1)

    def load_feature(self, n, g, df, n0, nn, rows, cols):
        """The feature channel blocks the N block's columns need; returns (first block, count)."""
        kh, kw = self.p.kdhw[1:]
        per = kh * kw * self.c0
        f_lo, f_hi = n0 // per, (n0 + nn - 1) // per + 1
        hf, wf = self.p.feat_dhw[1:]
        base = ((((n * self.p.groups + g) * self.p.feat_dhw[0] + df) * self.f1 + f_lo) * hf
                * wf * self.c0)
        b1 = self.b1.alloc_tensor(self.cd)
        copy_map(b1, self.feat5[base], f_hi - f_lo, rows, cols, (hf, wf), self.c0)
        self.b1.enque(b1)
        return f_lo, f_hi - f_lo

    def chunk(self, c, kc1, fk, window, span, nblock, first):
        t, p, c0 = self.t, self.p, self.c0
        p0, p1, r0 = span
        f_lo, fc1 = fk
        rows, cols = window
        n0, nn, kr0, kh = nblock
        kw = p.kdhw[2]
        wg = p.grad_dhw[2]
        a1, b1 = self.a1.deque(), self.b1.deque()
        for k_lo in range(p0, p1, t.base_k):
            kl = min(t.base_k, p1 - k_lo)
            a2 = self.a2.alloc_tensor(self.cd)
            cube.load_data(a2, a1, cube.LoadData3DParamsV2(
                l1_h=(p1 - 1) // wg + 1 - r0, l1_w=wg, channel_size=kc1 * c0,
                k_extension=kc1 * c0, m_extension=kl, m_start_pt=k_lo - r0 * wg,
                en_transpose=True))
            self.a2.enque(a2)
            b2 = self.b2.alloc_tensor(self.cd)
            cube.load_data(b2, b1, cube.LoadData3DParamsV2(
                pad_list=(cols.pad_lo, cols.pad_hi, rows.pad_lo, rows.pad_hi), l1_h=rows.rows,
                l1_w=cols.rows, channel_size=fc1 * c0, k_extension=nn, m_extension=kl,
                k_start_pt=n0 - (f_lo * p.kdhw[1] + kr0) * kw * c0, m_start_pt=k_lo - r0 * wg,
                stride_w=p.w.stride, stride_h=p.h.stride, filter_w=kw, filter_h=kh,
                dilation_filter_w=p.w.d, dilation_filter_h=p.h.d))
            self.b2.enque(b2)
            self.mmad(c, kc1 * c0, nn, kl, first and k_lo == p0)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)
