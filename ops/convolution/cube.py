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
  split over cores (or to one slot per K part in the deterministic variant; on Atlas A2 the
  mixed ``DwMixedKernel`` of ``ops/convolution/dw_mixed.py``). Conv3DBackpropFilterV2 first zeroes
  its output (``zero_out``, then SyncAll).

Large kernels and long rows (the tiling chooses these only when the plain chunks do not fit
L1): a dx chunk may hold ``dx_step_kh`` of the kH kernel rows of one channel block — it is a
convolution with a kernel of those rows on the map shifted by its first row (``row_chunks``),
so only the map rows it reaches and the weight rows of those taps are loaded; K keeps the
(Cout1, kh, kw, C0) order, so the sums are those of the whole-kernel chunk. A dw N block may
stay in one channel block and a few kernel rows, and load only the feature rows they reach.
With ``narrow`` and one output row, chunks load only the map columns their outputs reach.
Padding beyond LoadData3D's 255 is zero rows / columns in dx's A1 (built on InitConstValue
zeros, or Duplicate zeros in UB on Atlas training).

Out: FixPipe L0C -> GM with fp32 -> fp16/bf16 conversion (A2), or L0C -> UB on the vector pipe,
a vector Cast, and MTE3 copies of each 16-column Z block (Atlas training, no FixPipe).

Reuse across base blocks (dx): a task is ``dx_step_m`` M base blocks (CANN's stepM): one A1
chunk holds the map rows of all of them, each K step loads its L0B tile once for all of them,
and L0C holds their C blocks (each leaves L0C on its own), so B comes from GM once per task
instead of once per base block. With ``dx_b1_keep`` (CANN's B1 full load, isB1FullLoadFlag_
of the arch22 kernel: kD = 1, all K in one chunk, one B1 buffer) the weight of an N block is
loaded once and kept while a core's tasks stay in that group and N block; the tasks then run
N block by N block (iterate order N outer, M inner). The K order of every C block is the same
either way, so the outputs are bit-identical.

dw likewise takes ``dw_step_m`` M blocks per task (their grad channels in one A1 chunk, each
position step's img2col L0B tile shared, so the feature is read and expanded once per task);
its default stays 1.

Not modelled: stepN (the arch22 dx kernel runs stepN = 1), L0C ping-pong and unitFlag overlap
of FixPipe with the next Mmad, the bias table, the C04 layout.
"""

from npusim.dsl import (
    DataCopyParams,
    Pipe,
    TPosition,
    TQue,
    cube,
    current,
    data_copy,
    get_block_num,
    set_flag,
    steady,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div, round_up
from npusim.ops.convolution.chunks import (
    LOAD3D_MAX_PAD,
    dx_narrow,
    dx_relay,
    dx_task_m,
    dx_zero_fill,
)
from npusim.ops.convolution.cube_base import FRAC, ConvCubeKernel, copy_map
from npusim.ops.convolution.cube_dw import DwKernel
from npusim.ops.convolution.relay import axis_view, copy_view

__all__ = ["DwKernel", "DxKernel", "row_chunks"]


class DxKernel(ConvCubeKernel):
    """gradInput: tasks (n, g, d, M rows of ``dx_step_m`` base blocks, N block) round-robin
    over the cube cores; with ``dx_b1_keep`` the tasks run (g, N block) outermost."""

    def init(self, dy5, wb, out, prob, tiling, cd, out_dtype, l1_a, l1_b, hf32, out_5hd=False):
        self.dy5, self.wb, self.out, self.p = dy5, wb, out, prob
        self.out_5hd = out_5hd   # out in NC1HWC0 (C0 16; the forward's Conv2D), else ND rows
        dilate = prob.h.dil > 1 or prob.w.dil > 1
        self.zero_fill = dx_zero_fill(prob, tiling)   # A1 built on zeros
        staged = self.zero_fill and not current().chip.has_fixpipe
        self.setup(tiling, cd, out_dtype, l1_a, l1_b, Pipe.MTE3 if staged else Pipe.MTE2,
                   b1_buffers=1 if tiling.dx_b1_keep else None, c_blocks=tiling.dx_step_m)
        self.dilate, self.staged = dilate, staged
        if staged:
            self.ub = TQue(TPosition.VECIN, 1, producer=Pipe.V, consumer=Pipe.MTE3,
                           name="dilateQueue")
            self.pipe.init_buffer(self.ub, 1, l1_a)
        self.k1 = ceil_div(prob.kc, self.c0)
        self.n16 = round_up(prob.nc, FRAC)
        self.hw = prob.out_dhw[1] * prob.out_dhw[2]
        self.kept = None   # (group, first column) and the B1 tensor kept (dx_b1_keep)
        self.relay = dx_relay(prob)   # (H, W) re-laid: a transposed stride above 63
        cube.set_hf32_mode(hf32)

    def process(self):
        t, p = self.t, self.p
        mbs, nbs = ceil_div(self.hw, dx_task_m(t)), ceil_div(self.n16, t.dx_base_n)
        self.grid = (mbs, nbs, p.n * p.out_dhw[0])
        for i in steady(self.tasks(p.groups * self.grid[2] * mbs * nbs), key=self.task_key):
            n, g, di, mb, nb = self.task(i)
            self.block(n, g, di, mb * dx_task_m(t), nb * t.dx_base_n)
        if self.kept is not None:
            self.b1.free_tensor(self.kept[1])

    def task(self, i: int) -> tuple:
        """(n, group, depth slice, M block, N block) of task ``i``; with ``dx_b1_keep`` N block
        by N block (a core's next task reuses its weight)."""
        mbs, nbs, slices = self.grid
        if self.t.dx_b1_keep:
            rest, mb = divmod(i, mbs)
            rest, nd = divmod(rest, slices)
            g, nb = divmod(rest, nbs)
            n, di = divmod(nd, self.p.out_dhw[0])
        else:
            rest, nb = divmod(i, nbs)
            rest, mb = divmod(rest, mbs)
            rest, di = divmod(rest, self.p.out_dhw[0])
            n, g = divmod(rest, self.p.groups)
        return n, g, di, mb, nb

    def task_key(self, i: int) -> tuple:
        """What task ``i``'s instructions depend on besides addresses (npusim.dsl.steady): its
        depth slice, M and N blocks, and whether it loads a weight its core did not keep."""
        _n, g, di, mb, nb = self.task(i)
        prev = i - get_block_num()
        loads = prev < 0 or self.task(prev)[1::3] != (g, nb)
        return di, mb, nb, loads or not self.t.dx_b1_keep

    def block(self, n, g, di, m0, n0):
        """One task: ``dx_step_m`` base blocks of M from position m0, N channels from n0."""
        t, p, w = self.t, self.p, self.p.out_dhw[2]
        mt, nn = min(dx_task_m(t), self.hw - m0), min(t.dx_base_n, self.n16 - n0)
        subs = [(j, min(t.base_m, mt - j)) for j in range(0, mt, t.base_m)]
        h0, h1 = m0 // w, (m0 + mt - 1) // w + 1
        kw, relay_w = p.kdhw[2], self.relay[1]
        if dx_narrow(p, t):   # one output row: the map columns of this task's outputs
            cols = axis_view(p.w, 0, kw, m0, m0 + mt, relay_w, LOAD3D_MAX_PAD)
            m_start = 0
        else:
            cols = axis_view(p.w, 0, kw, 0, w, relay_w, LOAD3D_MAX_PAD)
            m_start = m0 - h0 * w
        parts = row_chunks(p.h, t.dx_step_kh, h0, h1, self.relay[0])
        cs = [self.co1.alloc_tensor("float32") for _ in subs]
        first = True
        if parts and cols.rows:
            for kd, q in p.depth_taps(di):
                for k1_lo in range(0, self.k1, t.dx_step_k1):
                    kc1 = min(t.dx_step_k1, self.k1 - k1_lo)
                    for kr0, krn, rows in parts:
                        self.load_a1(n, g, q, k1_lo, kc1, rows, cols)
                        kept = self.b1_chunk(g, kd, k1_lo, kc1, n0, nn, (kr0, krn))
                        self.chunk(cs, kept, kc1, (rows, krn), cols, (m_start, subs, nn),
                                   first)
                        first = False
        base = ((n * p.groups + g) * p.out_dhw[0] + di) * self.hw * self.n16
        for c, (j, m) in zip(cs, subs, strict=True):
            if first:
                self.zero_block(c, m, nn)
            if self.out_5hd:
                self.copy_out_nz(c, self.out[base + n0 * self.hw + (m0 + j) * FRAC], m, nn,
                                 self.hw * FRAC)
                continue
            self.copy_out(c, self.out[base + (m0 + j) * self.n16 + n0], m, nn, self.n16)

    def b1_chunk(self, g, kd, k1_lo, kc1, n0, nn, krows):
        """Load the chunk's weight into B1; with ``dx_b1_keep`` only when the core's previous
        task had another group or N block, and return the kept tensor (else None: the chunk
        dequeues it)."""
        if not self.t.dx_b1_keep:
            self.load_b1(g, kd, k1_lo, kc1, n0, nn, krows)
            return None
        if self.kept is None or self.kept[0] != (g, n0):
            if self.kept is not None:
                self.b1.free_tensor(self.kept[1])
            self.load_b1(g, kd, k1_lo, kc1, n0, nn, krows)
            self.kept = ((g, n0), self.b1.deque())
        return self.kept[1]

    def chunk(self, cs, kept, kc1, rows_kh, cols, task, first):
        """The base_k steps of one L1 chunk (``kh`` kernel rows of ``kc1`` channel blocks):
        per step, the weight rows into L0B once, and for each base block of the task its
        img2col columns into L0A and an Mmad into its own L0C block."""
        t, p, c0 = self.t, self.p, self.c0
        m_start, subs, nn = task
        a1 = self.a1.deque()
        b1 = kept if kept is not None else self.b1.deque()
        (rows, kh), kw = rows_kh, p.kdhw[2]
        kchunk, nb1 = kc1 * kh * kw * c0, nn // FRAC
        for k_lo in range(0, kchunk, t.base_k):
            kl = min(t.base_k, kchunk - k_lo)
            for idx, (c, (j, m)) in enumerate(zip(cs, subs, strict=True)):
                a2 = self.a2.alloc_tensor(self.cd)
                cube.load_data(a2, a1, cube.LoadData3DParamsV2(
                    pad_list=(cols.pad_lo, cols.pad_hi, rows.pad_lo, rows.pad_hi),
                    l1_h=rows.rows, l1_w=cols.rows, channel_size=kc1 * c0, k_extension=kl,
                    m_extension=m, k_start_pt=k_lo, m_start_pt=m_start + j,
                    stride_w=cols.stride, stride_h=rows.stride, filter_w=kw, filter_h=kh,
                    dilation_filter_w=cols.dil, dilation_filter_h=rows.dil))
                self.a2.enque(a2)
                if idx == 0:
                    b2 = self.b2.alloc_tensor(self.cd)
                    cube.load_data(b2, b1, cube.LoadData2DParams(
                        start_index=(k_lo // c0) * nb1, repeat_times=(kl // c0) * nb1,
                        src_stride=1))
                    self.b2.enque(b2)
                    b2 = self.b2.deque()
                self.mmad_a(c, b2, m, nn, kl, first and k_lo == 0)
            self.b2.free_tensor(b2)
        self.a1.free_tensor(a1)
        if kept is None:
            self.b1.free_tensor(b1)

    def map_base(self, n, g, q, k1_lo) -> int:
        hs, ws = self.p.map_hw
        return ((((n * self.p.groups + g) * self.p.map_d + q) * self.k1 + k1_lo) * hs
                * ws * self.c0)

    def load_a1(self, n, g, q, k1_lo, kc1, rows, cols):
        """The map rows and columns this block reads, zero-dilated if the stride asks, with
        zero rows / columns where the window's padding is more than LoadData3D pads."""
        base = self.map_base(n, g, q, k1_lo)
        if not self.zero_fill:
            a1 = self.a1.alloc_tensor(self.cd)
            copy = copy_view if any(self.relay) else copy_map
            copy(a1, self.dy5[base], kc1, rows, cols, self.p.map_hw, self.c0)
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
        """One DataCopy per gradOutput row: its C0 blocks land ``stride`` blocks apart (the
        window's rows / columns outside the map stay zero)."""
        hs, ws = self.p.map_hw
        sh, sw = self.p.h.dil, self.p.w.dil
        w_first = max(0, ceil_div(cols.lo, sw))
        w_last = min(ws - 1, (cols.hi - 1) // sw)
        if w_last < w_first:
            return
        row = DataCopyParams(block_count=w_last - w_first + 1, block_len=1, dst_stride=sw - 1)
        for k in range(kc1):
            for r in range(max(0, ceil_div(rows.lo, sh)), min(hs - 1, (rows.hi - 1) // sh) + 1):
                at = ((k * rows.rows + r * sh - rows.lo) * cols.rows + w_first * sw - cols.lo)
                data_copy(dst[at * self.c0],
                          self.dy5[base + ((k * hs + r) * ws + w_first) * self.c0], row)

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


def row_chunks(axis, step: int, i0: int, i1: int, relaid: bool = False) -> list:
    """(first kernel row, rows, map AxisView) per chunk of ``step`` kernel rows that outputs
    [i0, i1) read: each chunk is a convolution with a kernel of its rows on the map shifted by
    its first row, or its rows re-laid (chunks whose window sees only padding add nothing and
    are left out)."""
    out = []
    for kr0 in range(0, axis.k, step):
        krn = min(step, axis.k - kr0)
        rows = axis_view(axis, kr0, krn, i0, i1, relaid, LOAD3D_MAX_PAD)
        if rows.rows:
            out.append((kr0, krn, rows))
    return out
