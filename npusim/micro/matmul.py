"""The cube micro-kernel: C = A.B on one cube core, fp16 in, fp32 accumulated and out.

GM -> L1: on Atlas A2 the ND -> NZ conversion rides the MTE2 copy (DataCopy with Nd2NzParams);
on Atlas training, which has no such path, one strided DataCopy per 16-column block builds the
NZ layout. L1 -> L0A / L0B: LoadData2D per 16-row block of A, and per 16-row block of B with
each fractal transposed into L0B's ZN layout. Mmad over k tiles of ``base_k`` into L0C (the
first initialises). Out: FixPipe L0C -> GM with NZ -> ND (A2), or L0C -> UB on the vector pipe
and one strided MTE3 copy per 16-column block (Atlas training). L0A/L0B are double buffered.
m, n, k must be multiples of 16 and the whole problem must fit L1 and L0C: it is a
micro-kernel, not a GEMM (the convolution kernels tile properly).
"""

from dataclasses import dataclass

import numpy as np

from npusim.dsl import DataCopyParams, Kernel, TPosition, TQue, cube, current, data_copy
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import TilingError

F = 16  # fractal rows and columns (fp16: k0 = 16)


@dataclass(frozen=True, kw_only=True)
class MatmulTiling:
    m: int
    n: int
    k: int
    base_k: int       # k elements per L0A/L0B tile
    l0_buffers: int   # L0A/L0B double buffering (2) or not (1)


class MatmulKernel(Kernel):
    core_type = "aic"

    def init(self, a, b, c, tiling: MatmulTiling):
        self.a_gm, self.b_gm, self.c_gm, self.t = a, b, c, tiling
        m, n, k, bk = tiling.m, tiling.n, tiling.k, tiling.base_k
        self.nd2nz = current().chip.has_gm_nd2nz
        self.in_a1, self.in_b1 = TQue(TPosition.A1, 1, name="inQueueA1"), \
            TQue(TPosition.B1, 1, name="inQueueB1")
        self.in_a2, self.in_b2 = TQue(TPosition.A2, tiling.l0_buffers, name="inQueueA2"), \
            TQue(TPosition.B2, tiling.l0_buffers, name="inQueueB2")
        self.out_co1 = TQue(TPosition.CO1, 1, name="outQueueCO1")
        self.pipe.init_buffer(self.in_a1, 1, m * k * 2)
        self.pipe.init_buffer(self.in_b1, 1, k * n * 2)
        self.pipe.init_buffer(self.in_a2, tiling.l0_buffers, m * bk * 2)
        self.pipe.init_buffer(self.in_b2, tiling.l0_buffers, bk * n * 2)
        self.pipe.init_buffer(self.out_co1, 1, m * n * 4)
        if not self.nd2nz:
            self.out_co2 = TQue(TPosition.CO2, 1, name="outQueueCO2")
            self.pipe.init_buffer(self.out_co2, 1, m * n * 4)

    def process(self):
        self.copy_in()
        a1, b1 = self.in_a1.deque(), self.in_b1.deque()
        c = self.out_co1.alloc_tensor("float32")
        for i, k_lo in enumerate(range(0, self.t.k, self.t.base_k)):
            self.split_a(a1, k_lo)
            self.split_b(b1, k_lo)
            self.compute(c, i)
        self.in_a1.free_tensor(a1)
        self.in_b1.free_tensor(b1)
        self.out_co1.enque(c)
        self.copy_out()

    def copy_in(self):
        m, n, k = self.t.m, self.t.n, self.t.k
        a1, b1 = self.in_a1.alloc_tensor("float16"), self.in_b1.alloc_tensor("float16")
        if self.nd2nz:   # NZ: A as [k/16, m, 16], B as [n/16, k, 16]
            cube.data_copy_nd2nz(a1, self.a_gm, cube.Nd2NzParams(
                n_value=m, d_value=k, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
            cube.data_copy_nd2nz(b1, self.b_gm, cube.Nd2NzParams(
                n_value=k, d_value=n, src_d_value=n, dst_nz_c0_stride=k, dst_nz_n_stride=1))
        else:            # one strided copy per 16-column block: rows of 32 bytes
            for kb in range(k // F):
                data_copy(a1[kb * m * F], self.a_gm[kb * F], DataCopyParams(
                    block_count=m, block_len=1, src_stride=(k - F) // F))
            for nb in range(n // F):
                data_copy(b1[nb * k * F], self.b_gm[nb * F], DataCopyParams(
                    block_count=k, block_len=1, src_stride=(n - F) // F))
        self.in_a1.enque(a1)
        self.in_b1.enque(b1)

    def split_a(self, a1, k_lo):
        m1, k1t = self.t.m // F, self.t.base_k // F
        a2 = self.in_a2.alloc_tensor("float16")
        for mb in range(m1):   # L1 fractal (kb, mb) at kb*m1 + mb -> L0A ZZ (mb, kb)
            cube.load_data(a2[mb * k1t * F * F], a1, cube.LoadData2DParams(
                start_index=(k_lo // F) * m1 + mb, repeat_times=k1t, src_stride=m1))
        self.in_a2.enque(a2)

    def split_b(self, b1, k_lo):
        n1, k1t = self.t.n // F, self.t.base_k // F
        b2 = self.in_b2.alloc_tensor("float16")
        for kk in range(k1t):  # L1 fractal (nb, kb) at nb*k1 + kb -> L0B ZN (kb, nb), transposed
            cube.load_data(b2[kk * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=k_lo // F + kk, repeat_times=n1, src_stride=self.t.k // F,
                if_transpose=True))
        self.in_b2.enque(b2)

    def compute(self, c, i):
        a2, b2 = self.in_a2.deque(), self.in_b2.deque()
        cube.mmad(c, a2, b2, cube.MmadParams(m=self.t.m, n=self.t.n, k=self.t.base_k,
                                             cmatrix_init_val=i == 0))
        self.in_a2.free_tensor(a2)
        self.in_b2.free_tensor(b2)

    def copy_out(self):
        m, n = self.t.m, self.t.n
        c = self.out_co1.deque()
        if self.nd2nz:
            cube.fixpipe(self.c_gm, c, cube.FixpipeParamsV220(m_size=m, n_size=n, src_stride=m,
                                                              dst_stride=n))
            self.out_co1.free_tensor(c)
            return
        co2 = self.out_co2.alloc_tensor("float32")
        cube.data_copy_l0c_to_ub(co2, c, DataCopyParams(block_count=1,
                                                        block_len=(m // F) * (n // F)))
        self.out_co2.enque(co2)
        self.out_co1.free_tensor(c)
        co2 = self.out_co2.deque()
        for nb in range(n // F):   # NZ column block nb: m rows of 16 fp32 = 64 bytes
            data_copy(self.c_gm[nb * F], co2[nb * m * F], DataCopyParams(
                block_count=m, block_len=2, dst_stride=(n - F) * 4 // 32))
        self.out_co2.free_tensor(co2)


def run_matmul(*, chip="atlas-a2", m: int = 128, n: int = 128, k: int = 256, base_k: int = 128,
               l0_buffers: int = 2, mode: str = "timed", numerics: bool = True, seed: int = 0,
               **launch_args):
    """C = A.B on one cube core; the Result's outputs are a, b and c (fp32)."""
    for name, value in (("m", m), ("n", n), ("k", k), ("base_k", base_k)):
        if value <= 0 or value % F:
            raise TilingError(f"{name} = {value}: the micro-kernel needs a positive multiple of 16")
    if k % base_k:
        raise TilingError(f"k = {k} is not a multiple of base_k = {base_k}")
    tiling = MatmulTiling(m=m, n=n, k=k, base_k=base_k, l0_buffers=l0_buffers)
    rng = np.random.default_rng(seed)
    a0 = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b0 = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    gm = GlobalMemory()
    a, b = gm.tensor("a", "float16", m * k, a0), gm.tensor("b", "float16", k * n, b0)
    c = gm.tensor("c", "float32", m * n)
    result = launch(MatmulKernel, chip=chip, block_dim=1, gm=gm,
                    args=dict(a=a, b=b, c=c, tiling=tiling), outputs={"c": (c, (m, n))},
                    mode=mode, numerics=numerics, tiling=tiling, **launch_args)
    result.outputs.update(a=a0, b=b0)
    return result
