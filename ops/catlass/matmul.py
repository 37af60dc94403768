"""A GEMM kernel shaped like CATLASS's (hicann/catlass) on Atlas A2: C = A.B, fp16 in and out.

Not an aclnn operator: the validation table's CATLASS rows measure CATLASS's own matmul
examples (``06_optimized_matmul``, ``21_basic_matmul_preload_zN``), and this kernel issues what
they issue, so those rows compare like with like. The schedule is ``BlockMmad`` with
``MmadAtlasA2Preload`` (``include/catlass/gemm/block/block_mmad_preload.hpp``):

- base blocks of C in the order of the block swizzle (``ops/catlass/tiling.py``); core ``i``
  takes tasks ``i, i + cores, ...``;
- per block, the L1 k tiles in the shuffled order; A (RowMajor) to L1 in zN with one ND -> NZ
  DataCopy; B ColumnMajor to L1 in nZ the same way, RowMajor B to L1 in zN the same way
  (``copy_gm_to_l1.hpp``), or zN B with one strided DataCopy;
  two L1 stages, the next tile (the next block's first, at a block's end) copied before the
  current one is used;
- per L1 tile, L0 k steps of ``l0_k``: A to L0A with one LoadData2D per 16-row fractal row
  (``copy_l1_to_l0a.hpp``, zN -> zZ); B to L0B with one LoadData2D for the whole step when
  the block is full width (``copy_l1_to_l0b.hpp``, nZ), else one per 16-deep k row, and for
  zN B (in GM, or RowMajor made zN in L1) one transposing LoadData2D per 16-deep k row; two L0
  stages; one Mmad per step into L0C. A k that is not a whole number of fractals (``matmul``
  only: ``catlass_matmul`` refuses it) ends in a partial step: the ND -> NZ copy zero-fills A's
  last fractal columns, the loads move whole fractals and the Mmad takes the true k;
- FixPipe L0C -> GM with fp32 -> fp16 (CAST_RINT) and NZ -> ND, the next block's first Mmad
  after it (L0C holds one block).

Not modelled: the unit flag's overlap of the last Mmad with FixPipe (the FixPipe starts after
the last Mmad), ``06_optimized_matmul``'s vector-core padding of unaligned inputs (the rows'
shapes need none), RowMajor B, dtypes other than fp16. A row of A or B outside the problem is
never read: an edge block's short rows are whatever L1 held, and their C rows are not written.
"""

import numpy as np

from npusim.dsl import DataCopyParams, Kernel, TPosition, TQue, cube, data_copy, get_block_idx
from npusim.engine.sequence import OpRun
from npusim.errors import ParamError, TilingError
from npusim.ops.catlass.tiling import (
    FRAC,
    LAYOUTS_B,
    CatlassMatmulTiling,
    block_of,
    check_tiling,
    k_order,
    zn_offset,
)
from npusim.ops.common import as_array, ceil_div, override, resolve_chip, round_up

NAME = "catlass_matmul"
QUANT_OUT = {"float16": cube.QuantMode.F322F16, "bfloat16": cube.QuantMode.F322BF16}


class CatlassMatmulKernel(Kernel):
    core_type = "aic"

    def init(self, a, b, c, tiling: CatlassMatmulTiling, dtype="float16"):
        self.a_gm, self.b_gm, self.c_gm, self.t = a, b, c, tiling
        self.dtype = dtype      # fp16 (CATLASS's examples); bf16 for grouped_matmul (ops/matmul)
        t = tiling
        self.a1, self.b1 = TQue(TPosition.A1, 2, name="l1A"), TQue(TPosition.B1, 2, name="l1B")
        self.a2, self.b2 = TQue(TPosition.A2, 2, name="l0A"), TQue(TPosition.B2, 2, name="l0B")
        self.co1 = TQue(TPosition.CO1, 1, name="l0C")
        self.pipe.init_buffer(self.a1, 2, t.l1_m * t.l1_k * 2)
        self.pipe.init_buffer(self.b1, 2, t.l1_n * t.l1_k * 2)
        self.pipe.init_buffer(self.a2, 2, t.l1_m * t.l0_k * 2)
        self.pipe.init_buffer(self.b2, 2, t.l1_n * t.l0_k * 2)
        self.pipe.init_buffer(self.co1, 1, t.l1_m * t.l1_n * 4)

    def process(self):
        t, core = self.t, get_block_idx()
        steps = [(block, kt) for task in range(core, t.tasks, t.block_dim)
                 for block in [block_of(t, task)] for kt in k_order(t, core)]
        if not steps:
            return
        pending = self.copy_in(*steps[0])
        c = None
        for i, (block, _) in enumerate(steps):
            current = pending
            if i + 1 < len(steps):
                pending = self.copy_in(*steps[i + 1])
            first = i % t.k_tiles == 0          # a block's first k tile
            if first:
                c = self.co1.alloc_tensor("float32")
            self.compute(c, current, block, first)
            if i % t.k_tiles == t.k_tiles - 1:
                self.co1.enque(c)
                self.copy_out(block)

    def copy_in(self, block, kt):
        """The L1 tile ``kt`` of ``block``'s A rows and B columns (MTE2); its depth."""
        t = self.t
        m_idx, n_idx, rows, cols = block
        k_lo = kt * t.l1_k
        depth = min(t.l1_k, t.k - k_lo)
        a1, b1 = self.a1.alloc_tensor(self.dtype), self.b1.alloc_tensor(self.dtype)
        cube.data_copy_nd2nz(a1, self.a_gm[m_idx * t.l1_m * t.k + k_lo], cube.Nd2NzParams(
            n_value=rows, d_value=depth, src_d_value=t.k, dst_nz_c0_stride=t.l1_m,
            dst_nz_n_stride=1))
        if t.layout_b == "column":
            cube.data_copy_nd2nz(b1, self.b_gm[n_idx * t.l1_n * t.k + k_lo], cube.Nd2NzParams(
                n_value=cols, d_value=depth, src_d_value=t.k, dst_nz_c0_stride=t.l1_n,
                dst_nz_n_stride=1))
        elif t.layout_b == "row":   # K x N rows -> zN: 16-column fractal columns of l1_k rows
            cube.data_copy_nd2nz(b1, self.b_gm[k_lo * t.n + n_idx * t.l1_n], cube.Nd2NzParams(
                n_value=depth, d_value=cols, src_d_value=t.n, dst_nz_c0_stride=t.l1_k,
                dst_nz_n_stride=1))
        else:   # zN: one 16-column fractal column per block, depth rows of 32 bytes each
            k_rows = round_up(t.k, FRAC)
            data_copy(b1, self.b_gm[zn_offset(k_lo, n_idx * t.l1_n, k_rows)], DataCopyParams(
                block_count=-(-cols // FRAC), block_len=depth, src_stride=k_rows - depth,
                dst_stride=t.l1_k - depth))
        self.a1.enque(a1)
        self.b1.enque(b1)
        return depth

    def compute(self, c, depth, block, first):
        """The L0 k steps of one L1 tile: loads (MTE1) and one Mmad each (M)."""
        t = self.t
        m_round, n_round = round_up(block.rows, FRAC), round_up(block.cols, FRAC)
        a1, b1 = self.a1.deque(), self.b1.deque()
        for s, k_lo in enumerate(range(0, depth, t.l0_k)):
            step = min(t.l0_k, depth - k_lo)
            a2 = self.a2.alloc_tensor(self.dtype)
            self.load_a(a2, a1, k_lo, step, m_round)
            self.a2.enque(a2)
            b2 = self.b2.alloc_tensor(self.dtype)
            self.load_b(b2, b1, k_lo, step, n_round)
            self.b2.enque(b2)
            a2, b2 = self.a2.deque(), self.b2.deque()
            cube.mmad(c, a2, b2, cube.MmadParams(m=m_round, n=n_round, k=step,
                                                 cmatrix_init_val=first and s == 0))
            self.a2.free_tensor(a2)
            self.b2.free_tensor(b2)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)

    def load_a(self, a2, a1, k_lo, step, m_round):
        """zN -> zZ: one LoadData2D per 16-row fractal row of A."""
        mf, kf, stride = m_round // FRAC, ceil_div(step, FRAC), self.t.l1_m // FRAC
        for mb in range(mf):
            cube.load_data(a2[mb * kf * FRAC * FRAC], a1, cube.LoadData2DParams(
                start_index=(k_lo // FRAC) * stride + mb, repeat_times=kf, src_stride=stride))

    def load_b(self, b2, b1, k_lo, step, n_round):
        """nZ -> L0B: one LoadData2D for a full-width block, else one per 16-deep k row; zN ->
        L0B: one transposing LoadData2D per 16-deep k row."""
        t = self.t
        nf, kf = n_round // FRAC, ceil_div(step, FRAC)
        if t.layout_b == "column":
            stride = t.l1_n // FRAC
            if nf == stride:
                cube.load_data(b2, b1, cube.LoadData2DParams(
                    start_index=(k_lo // FRAC) * stride, repeat_times=kf * nf, src_stride=1))
                return
            for kk in range(kf):
                cube.load_data(b2[kk * nf * FRAC * FRAC], b1, cube.LoadData2DParams(
                    start_index=(k_lo // FRAC + kk) * stride, repeat_times=nf, src_stride=1))
            return
        for kk in range(kf):
            cube.load_data(b2[kk * nf * FRAC * FRAC], b1, cube.LoadData2DParams(
                start_index=k_lo // FRAC + kk, repeat_times=nf, src_stride=t.l1_k // FRAC,
                if_transpose=True))

    def copy_out(self, block):
        t = self.t
        m_idx, n_idx, rows, cols = block
        c = self.co1.deque()
        cube.fixpipe(self.c_gm[m_idx * t.l1_m * t.n + n_idx * t.l1_n], c, cube.FixpipeParamsV220(
            m_size=rows, n_size=cols, src_stride=round_up(rows, FRAC), dst_stride=t.n,
            quant_pre=QUANT_OUT[self.dtype]))
        self.co1.free_tensor(c)


def catlass_matmul_tiling(chip, m: int, n: int, k: int, layout_b: str, overrides=None):
    """CATLASS's example defaults (swizzle <3, 1> when n > m, as ``06_optimized_matmul``
    picks), every cube core, then the user's overrides, checked."""
    t = CatlassMatmulTiling(m=m, n=n, k=k, layout_b=layout_b, swizzle_direction=int(n > m),
                            block_dim=chip.ai_core_count)
    given = (t.m, t.n, t.k, t.layout_b)
    t = override(t, overrides, NAME)
    if (t.m, t.n, t.k, t.layout_b) != given:
        raise TilingError(f"{NAME}: m, n, k and layout_b come from the matrices and the "
                          "layout_b argument (--shape, --param layout_b), not from the tiling")
    check_tiling(t, chip)
    return t


def gm_b(b: np.ndarray, layout_b: str) -> np.ndarray:
    """B (k x n) as it lies in GM: ColumnMajor (n x k rows), RowMajor (k x n rows), or zN with k
    rounded to 16."""
    if layout_b == "column":
        return np.ascontiguousarray(b.T).reshape(-1)
    if layout_b == "row":
        return np.ascontiguousarray(b).reshape(-1)
    k, n = b.shape
    k_rows, n_cols = round_up(k, FRAC), round_up(n, FRAC)
    padded = np.zeros((k_rows, n_cols), b.dtype)
    padded[:k, :n] = b
    return np.ascontiguousarray(
        padded.reshape(k_rows, n_cols // FRAC, FRAC).transpose(1, 0, 2)).reshape(-1)


def check_catlass_matmul(chip, a, b, layout_b: str) -> tuple:
    if layout_b not in LAYOUTS_B:
        raise ParamError(f"{NAME}: layout_b = {layout_b!r}; allowed: {', '.join(LAYOUTS_B)}")
    if not chip.has_fixpipe or not chip.has_gm_nd2nz:
        raise ParamError(f"{NAME}: {chip.name} has no FixPipe or ND -> NZ copy; CATLASS's "
                         "matmul runs on Atlas A2")
    a, b = as_array(NAME, "a", a), as_array(NAME, "b", b)
    if a.dtype != np.float16 or b.dtype != np.float16:
        raise ParamError(f"{NAME}: a and b must be float16, got {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0] or not a.size or not b.size:
        raise ParamError(f"{NAME}: a (m x k) and b (k x n) with the same k, none empty; got "
                         f"{a.shape} and {b.shape}")
    if a.shape[1] % FRAC:
        raise TilingError(f"{NAME}: k = {a.shape[1]}; the kernel takes k in whole fractals "
                          "(a multiple of 16; CATLASS pads other k first)")
    return a, b


def catlass_matmul(a, b, *, layout_b="column", chip="atlas-a2", tiling=None, mode="timed",
                   numerics=True, trace=True, sanitize=True, jitter=None):
    """C = A.B (fp16, fp32 accumulated) on ``chip``; ``outputs["c"]`` is m x n fp16."""
    chip = resolve_chip(chip)
    a, b = check_catlass_matmul(chip, a, b, layout_b)
    (m, k), n = a.shape, b.shape[1]
    t = catlass_matmul_tiling(chip, m, n, k, layout_b, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    a_gm = run.gm.tensor("a", "float16", a.size, a.reshape(-1))
    b_words = gm_b(b, layout_b)
    b_gm = run.gm.tensor("b", "float16", b_words.size, b_words)
    c_gm = run.gm.tensor("c", "float16", m * n)
    run.launch(CatlassMatmulKernel, block_dim=t.block_dim, name="CatlassMatmul",
               args=dict(a=a_gm, b=b_gm, c=c_gm, tiling=t))
    return run.result({"c": (c_gm, (m, n))}, tiling=t)
