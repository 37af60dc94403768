"""The gradWeight (dw) cube kernel of ConvolutionBackward; see ``ops/convolution/cube.py``.

Conv3DBackpropFilterV2 (the Ascend C kernel: 3-D, and a deterministic 2-D dw on Atlas A2)
zeroes its fp32 output itself before any partial reaches it (CANN's ``Conv3dDwInitOutput``, run
in every tiling template of ``conv3d_backprop_filter_v2.cpp``): the output's elements are split
over the launch's cube cores in 256-element-aligned shares, each core writes zeros over its
share, then every core meets at a cross-core barrier (``SyncAllCores``: CrossCoreSetFlag mode 0
on MTE3, then wait) before its first partial is written. npusim runs this as ``zero_out``: the
same bytes written, then SyncAll. CANN copies a zero-filled L1 buffer out on MTE3; npusim has
no L1 -> GM path, so the zeros leave from a zeroed L0C block the way results do (FixPipe on
Atlas A2, L0C -> UB -> MTE3 on coupled cores): same bytes, FixPipe's rate instead of MTE3's.
"""

from dataclasses import replace

from npusim.dsl import (
    DataCopyParams,
    cube,
    data_copy,
    get_block_idx,
    get_block_num,
    steady,
    sync_all,
)
from npusim.ops.common import ceil_div
from npusim.ops.convolution.chunks import dw_n_blocks, dw_narrow, dw_relay
from npusim.ops.convolution.cube_base import ConvCubeKernel, copy_map
from npusim.ops.convolution.relay import copy_view, plain_view, relaid_view


class DwKernel(ConvCubeKernel):
    """gradWeight: tasks (K part, g, kd, M block, N block) round-robin over the cube cores."""

    def init(self, grad5, feat5, ws, prob, tiling, cd, l1_a, l1_b, hf32, blocks, zero_out=0):
        self.grad5, self.feat5, self.ws, self.p = grad5, feat5, ws, prob
        self.zero_out = zero_out  # elements of ws zeroed (then SyncAll) before any block
        self.zero_dst = ws
        self.setup(tiling, cd, ws.dtype, l1_a, l1_b, c_blocks=tiling.dw_step_m)
        self.g1 = ceil_div(prob.gc, self.c0)
        self.f1 = ceil_div(prob.fc, self.c0)
        kh, kw = prob.kdhw[1:]
        self.ncols = self.f1 * kh * kw * self.c0
        self.blocks = blocks      # (mbs, nbs)
        self.nblocks = dw_n_blocks(prob, tiling, self.c0)
        self.relay = dw_relay(prob)   # (H, W): re-laid for a stride LoadData3D cannot take
        cube.set_hf32_mode(hf32)

    def process(self):
        t, p = self.t, self.p
        mbs, nbs = self.blocks
        per_part = p.groups * p.kdhw[0] * mbs * nbs
        if self.zero_out:
            self.zero_share()
            sync_all()
        for i in steady(self.tasks(t.dw_k_parts * per_part), key=self.task_key):
            part, g, kd, mb, nb = self.task(i)
            self.block(part, g, kd, mb, self.nblocks[nb])

    def task(self, i: int) -> tuple:
        """(K part, group, kd, M block, N block) of task ``i``."""
        mbs, nbs = self.blocks
        part, rest = divmod(i, self.p.groups * self.p.kdhw[0] * mbs * nbs)
        rest, nb = divmod(rest, nbs)
        rest, mb = divmod(rest, mbs)
        g, kd = divmod(rest, self.p.kdhw[0])
        return part, g, kd, mb, nb

    def task_key(self, i: int) -> tuple:
        """What task ``i``'s instructions depend on besides addresses (npusim.dsl.steady): its
        kd, M and N blocks and how many (n, depth) slices its K part holds (and which depth
        slices, in 3-D)."""
        part, _g, kd, mb, nb = self.task(i)
        slices, k = self.p.n * self.p.grad_dhw[0], self.t.dw_k_parts
        lo, hi = part * slices // k, (part + 1) * slices // k
        depth = (lo % self.p.grad_dhw[0], hi - lo) if self.p.grad_dhw[0] > 1 else hi - lo
        return kd, mb, nb, depth

    def zero_share(self):
        """This core's share of the ``zero_out`` elements (256-aligned shares, as CANN's
        InitOutput) written as zeros, ``base_m`` rows of ``base_n`` at a time, then the rest
        as one row (``zero_out`` is a multiple of 16: whole C0 blocks of the fractal)."""
        t, total = self.t, self.zero_out
        share = ceil_div(ceil_div(total, get_block_num()), 256) * 256
        lo = min(total, get_block_idx() * share)
        hi = min(total, lo + share)
        while lo < hi:
            rows = min(t.base_m, (hi - lo) // t.base_n)
            m, n = (rows, t.base_n) if rows else (1, hi - lo)
            c = self.co1.alloc_tensor("float32")
            self.zero_block(c, m, n)
            self.copy_out(c, self.zero_dst[lo], m, n, n)
            lo += m * n

    def block(self, part, g, kd, mb, nblock):
        """One task: ``dw_step_m`` M blocks (their C blocks in L0C, their grad channels in one
        A1 chunk, each K step's L0B tile shared) and an N block = (first column, columns,
        first kernel row, kernel rows)."""
        t, p = self.t, self.p
        mc1 = t.base_m // self.c0
        k1_lo = mb * mc1 * t.dw_step_m
        kc1 = min(mc1 * t.dw_step_m, self.g1 - k1_lo)
        subs = [(j1, min(mc1, kc1 - j1)) for j1 in range(0, kc1, mc1)]
        n0, nn = nblock[:2]
        slices = p.n * p.grad_dhw[0]
        lo, hi = part * slices // t.dw_k_parts, (part + 1) * slices // t.dw_k_parts
        cs = [self.co1.alloc_tensor("float32") for _ in subs]
        first = True
        for s in steady(range(lo, hi), key=lambda s: self.slice_key(kd, s)):
            n, dg = divmod(s, p.grad_dhw[0])
            df = p.feature_slice(kd, dg)
            if df >= 0:
                first = self.slice(cs, (n, g, dg, df), (k1_lo, kc1, subs), nblock, first)
        for c, (_, kcj) in zip(cs, subs, strict=True):
            if first:
                self.zero_block(c, kcj * self.c0, nn)
        self.write(cs, subs, (part, g, kd, k1_lo), nblock)

    def slice_key(self, kd: int, s: int) -> tuple:
        """What (n, depth) slice ``s``'s instructions depend on besides addresses
        (npusim.dsl.steady): its depth slice and whether the kernel's depth kd reaches a
        feature slice from it (2-D: every image alike)."""
        dg = s % self.p.grad_dhw[0]
        return dg, self.p.feature_slice(kd, dg) >= 0

    def write(self, cs, subs, at, nblock):
        """The task's C blocks out to its rows of the fp32 workspace: slot ``part`` when
        deterministic, else the one output (atomically added when K is split)."""
        t, p = self.t, self.p
        part, g, kd, k1_lo = at
        n0, nn = nblock[:2]
        mr = self.g1 * self.c0
        slot = part if t.deterministic else 0
        row0 = ((slot * p.groups + g) * p.kdhw[0] + kd) * mr + k1_lo * self.c0
        atomic = t.dw_k_parts > 1 and not t.deterministic
        for c, (j1, kcj) in zip(cs, subs, strict=True):
            self.copy_out(c, self.ws[(row0 + j1 * self.c0) * self.ncols + n0], kcj * self.c0,
                          nn, self.ncols, atomic)

    def slice(self, cs, at, chans, nblock, first) -> bool:
        """Accumulate one (n, depth) slice's positions; returns the new ``first``. The feature
        rows are those the N block's kernel rows reach (a convolution with a kernel of those
        rows on the map shifted by the first of them)."""
        t, p = self.t, self.p
        n, g, dg, df = at
        k1_lo, kc1, subs = chans
        n0, nn, kr0, krn = nblock
        hg, wg = p.grad_dhw[1:]
        narrow = dw_narrow(p, t)   # one grad row: each chunk loads its own columns
        cols = self.view_w(0, wg)
        for p0 in range(0, hg * wg, t.dw_step_k):
            p1 = min(hg * wg, p0 + t.dw_step_k)
            r0, r1 = p0 // wg, (p1 - 1) // wg + 1
            rows = self.view_h(kr0, krn, r0, r1)
            if narrow:
                cols = self.view_w(p0, p1)
            if not (rows.rows and cols.rows):
                continue   # the window sees only padding: a zero contribution
            first_pos = p0 if narrow else r0 * wg   # position of the L1 grad's first column
            self.load_grad((n, g, dg), k1_lo, kc1, first_pos, p1 if narrow else r1 * wg)
            fk = self.load_feature(n, g, df, n0, nn, rows, cols)
            self.chunk(cs, (kc1, subs), fk, (rows, cols), (p0, p1, first_pos), nblock, first)
            first = False
        return first

    def view_h(self, kr0, krn, r0, r1):
        """The feature rows grad rows [r0, r1) reach through kernel rows [kr0, kr0 + krn): as
        a convolution with a kernel of those rows on the map shifted by the first, or
        re-laid (``ops/convolution/relay.py``) when strideH is above what LoadData3D takes."""
        a = self.p.h
        if self.relay[0]:
            return relaid_view(a, kr0, krn, r0, r1)
        sub = replace(a, off=a.off - kr0 * a.d, k=krn)
        return plain_view(sub.rows_for(r0, r1), a.stride, a.d, krn)

    def view_w(self, j0, j1):
        """The feature columns grad columns [j0, j1) reach (re-laid likewise for strideW)."""
        a = self.p.w
        if self.relay[1]:
            return relaid_view(a, 0, a.k, j0, j1)
        return plain_view(a.rows_for(j0, j1), a.stride, a.d, a.k)

    def load_grad(self, at, k1_lo, kc1, q0, q1):
        """Grad positions [q0, q1) (whole rows, or one row's chunk when narrow) of kc1
        channel blocks."""
        n, g, dg = at
        hw = self.p.grad_dhw[1] * self.p.grad_dhw[2]
        base = (((n * self.p.groups + g) * self.p.grad_dhw[0] + dg) * self.g1 + k1_lo) * hw
        a1 = self.a1.alloc_tensor(self.cd)
        data_copy(a1, self.grad5[(base + q0) * self.c0], DataCopyParams(
            block_count=kc1, block_len=q1 - q0, src_stride=hw - (q1 - q0)))
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
        copy = copy_view if any(self.relay) else copy_map
        copy(b1, self.feat5[base], f_hi - f_lo, rows, cols, (hf, wf), self.c0)
        self.b1.enque(b1)
        return f_lo, f_hi - f_lo

    def chunk(self, cs, kcs, fk, window, span, nblock, first):
        """The base_k position steps of one L1 chunk: per step the img2col of the feature
        into L0B once, and for each M block of the task its grad channels (transposed) into
        L0A and an Mmad into its own L0C block."""
        t, p, c0 = self.t, self.p, self.c0
        kc1, subs = kcs
        p0, p1, q0 = span   # positions [p0, p1); the L1 grad starts at position q0
        f_lo, fc1 = fk
        rows, cols = window
        n0, nn, kr0, kh = nblock
        kw = p.kdhw[2]
        wg = p.grad_dhw[2]
        a_hw = (1, p1 - q0) if dw_narrow(p, t) else ((p1 - 1) // wg + 1 - q0 // wg, wg)
        a1, b1 = self.a1.deque(), self.b1.deque()
        for k_lo in range(p0, p1, t.base_k):
            kl = min(t.base_k, p1 - k_lo)
            for idx, (c, (j1, kcj)) in enumerate(zip(cs, subs, strict=True)):
                a2 = self.a2.alloc_tensor(self.cd)
                cube.load_data(a2, a1, cube.LoadData3DParamsV2(
                    l1_h=a_hw[0], l1_w=a_hw[1], channel_size=kc1 * c0, k_start_pt=j1 * c0,
                    k_extension=kcj * c0, m_extension=kl, m_start_pt=k_lo - q0,
                    en_transpose=True))
                self.a2.enque(a2)
                if idx == 0:
                    b2 = self.b2.alloc_tensor(self.cd)
                    cube.load_data(b2, b1, cube.LoadData3DParamsV2(
                        pad_list=(cols.pad_lo, cols.pad_hi, rows.pad_lo, rows.pad_hi),
                        l1_h=rows.rows, l1_w=cols.rows, channel_size=fc1 * c0,
                        k_extension=nn, m_extension=kl,
                        k_start_pt=n0 - (f_lo * p.kdhw[1] + kr0) * kw * c0,
                        m_start_pt=k_lo - q0, stride_w=cols.stride, stride_h=rows.stride,
                        filter_w=kw, filter_h=kh, dilation_filter_w=cols.dil,
                        dilation_filter_h=rows.dil))
                    self.b2.enque(b2)
                    b2 = self.b2.deque()
                self.mmad_a(c, b2, kcj * c0, nn, kl, first and k_lo == p0)
            self.b2.free_tensor(b2)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)
