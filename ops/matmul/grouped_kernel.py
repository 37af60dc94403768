"""The GroupedMatmul kernel: CANN's group loop and block dealing (``GMMProcess::Process``,
hicann/ops-transformer ``gmm/grouped_matmul/op_kernel/grouped_matmul_kernel.h``) around the
CATLASS-shaped block GEMM of ``ops/catlass/matmul.py`` (``BlockMmad`` with the preload policy).

Per core: for each group in order, the scalar reads the group's end from ``groupList``
(GlobalTensor.GetValue, groupListType 0: cumulative), derives its size and its place in x, the
weight and y, and runs the blocks dealt to this core (``ops/matmul/grouped_tiling.py``). Each
block is CATLASS's: L1 k tiles through two L1 stages (the next tile, of this block or the
next, copied in before the current one is used), L0 k steps with one Mmad each, FixPipe out.

Layouts: x RowMajor (groupType 0) or ColumnMajor (groupType 2: x transposed, stored [K, M]: to
L1 in zN with one ND -> NZ copy, then one transposing LoadData2D per 16-row fractal row of A);
the weight RowMajor ([K, N] per group, ND -> NZ to zN, transposing loads) or ColumnMajor (a
transposed weight, stored [N, K]: ND -> NZ to nZ, plain loads), as ``ops/catlass/matmul.py``.

Not modelled: the scalar data cache (every GetValue of groupList costs a GM access: pessimistic),
CANN's Matmul API (``IterateAll``) in place of CATLASS's BlockMmad: no preload across blocks
there, L1 depths stepKa 8 / stepKb 4.
"""

from typing import NamedTuple

from npusim.dsl import cube, get_block_idx
from npusim.dsl.scalar_gm import gm_get_value
from npusim.ops.catlass.matmul import QUANT_OUT, CatlassMatmulKernel
from npusim.ops.catlass.tiling import FRAC, Block, block_shape
from npusim.ops.common import ceil_div, round_up
from npusim.ops.matmul.grouped_tiling import GroupedMatmulTiling, block_coord, group_blocks


class Group(NamedTuple):
    """One group's x, weight and y (GM windows at its start) and its k."""

    a: object
    b: object
    c: object
    rows: int
    k: int


class Step(NamedTuple):
    """One L1 k tile of one block of one group, and whether it is the block's first / last."""

    group: Group
    block: Block
    kt: int
    first: bool
    last: bool


class GroupedMatmulKernel(CatlassMatmulKernel):
    core_type = "aic"

    def init(self, x, weight, group_list, y, tiling: GroupedMatmulTiling):
        super().init(x, weight, y, tiling.block(), dtype=tiling.dtype)
        self.g, self.group_list = tiling, group_list

    def process(self):
        steps = self.steps()
        step = next(steps, None)
        if step is None:
            return
        pending = self.copy_in(step)
        c = None
        while step is not None:
            current, depth = step, pending
            step = next(steps, None)
            if step is not None:
                pending = self.copy_in(step)
            if current.first:
                c = self.co1.alloc_tensor("float32")
            self.compute(c, depth, current.block, current.first)
            if current.last:
                self.co1.enque(c)
                self.copy_out(current)

    def group(self, index: int, start: int, size: int) -> Group:
        """Group ``index`` of ``size`` rows (type 0) or k (type 2) from ``start`` on."""
        g = self.g
        if g.group_type == 0:
            return Group(self.a_gm[start * g.k], self.b_gm[index * g.k * g.n],
                         self.c_gm[start * g.n], size, g.k)
        return Group(self.a_gm[start * g.m], self.b_gm[start * g.n],
                     self.c_gm[index * g.m * g.n], g.m, size)

    def steps(self):
        """This core's steps, group by group: GMMProcess::Process's loop (the group's end read
        when the loop reaches it)."""
        g, core = self.g, get_block_idx()
        count, start = 0, 0
        for index in range(g.groups):
            end = int(gm_get_value(self.group_list, index))
            group, start = self.group(index, start, end - start), end
            if group.rows <= 0 or group.k <= 0:
                continue
            dim_m, dim_n = group_blocks(g, group.rows, g.n)
            total = dim_m * dim_n
            k_tiles = ceil_div(group.k, g.l1_k)
            first_kt = core % k_tiles if g.shuffle_k else 0
            for rel in range((core - count) % g.block_dim, total, g.block_dim):
                m_idx, n_idx = block_coord(rel, dim_m, dim_n)
                rows = min(g.l1_m, group.rows - m_idx * g.l1_m)
                block = Block(m_idx, n_idx, rows, block_shape(self.t, m_idx, n_idx)[1])
                for i in range(k_tiles):
                    yield Step(group, block, (first_kt + i) % k_tiles, i == 0,
                               i == k_tiles - 1)
            count = (count + total) % g.block_dim

    def copy_in(self, step: Step):
        """The L1 tile of A's rows and B's columns of one step (MTE2); its depth."""
        g, t = self.g, self.t
        group, (m_idx, n_idx, rows, cols) = step.group, step.block
        k_lo = step.kt * t.l1_k
        depth = min(t.l1_k, group.k - k_lo)
        a1, b1 = self.a1.alloc_tensor(self.dtype), self.b1.alloc_tensor(self.dtype)
        if g.layout_a == "row":
            _nd2nz(a1, group.a[m_idx * t.l1_m * group.k + k_lo], rows, depth, group.k, t.l1_m)
        else:   # x stored [K, M]: depth rows of the block's columns -> zN of A^T
            _nd2nz(a1, group.a[k_lo * g.m + m_idx * t.l1_m], depth, rows, g.m, t.l1_k)
        if g.layout_b == "column":
            _nd2nz(b1, group.b[n_idx * t.l1_n * group.k + k_lo], cols, depth, group.k, t.l1_n)
        else:
            _nd2nz(b1, group.b[k_lo * g.n + n_idx * t.l1_n], depth, cols, g.n, t.l1_k)
        self.a1.enque(a1)
        self.b1.enque(b1)
        return depth

    def load_a(self, a2, a1, k_lo, step, m_round):
        """RowMajor A: CATLASS's zN -> zZ loads; ColumnMajor A (zN of A^T in L1): one
        transposing LoadData2D per 16-row fractal row of A."""
        if self.g.layout_a == "row":
            super().load_a(a2, a1, k_lo, step, m_round)
            return
        mf, kf, depth = m_round // FRAC, ceil_div(step, FRAC), self.t.l1_k // FRAC
        for mb in range(mf):
            cube.load_data(a2[mb * kf * FRAC * FRAC], a1, cube.LoadData2DParams(
                start_index=mb * depth + k_lo // FRAC, repeat_times=kf, src_stride=1,
                if_transpose=True))

    def copy_out(self, step: Step):
        t, c = self.t, self.co1.deque()
        m_idx, n_idx, rows, cols = step.block
        cube.fixpipe(step.group.c[m_idx * t.l1_m * t.n + n_idx * t.l1_n], c,
                     cube.FixpipeParamsV220(m_size=rows, n_size=cols,
                                            src_stride=round_up(rows, FRAC), dst_stride=t.n,
                                            quant_pre=QUANT_OUT[self.dtype]))
        self.co1.free_tensor(c)


def _nd2nz(dst, src, n_value: int, d_value: int, src_d_value: int, c0_stride: int) -> None:
    cube.data_copy_nd2nz(dst, src, cube.Nd2NzParams(
        n_value=n_value, d_value=d_value, src_d_value=src_d_value, dst_nz_c0_stride=c0_stride,
        dst_nz_n_stride=1))
