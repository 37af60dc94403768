"""Lesson 7's exercise, solved: rows split over the cores, K in base_k steps.

Check: npusim lesson check 7 docs/lessons/solutions/07_gemm_tiling.py
"""

from npusim.dsl import Kernel, TPosition, TQue, cube, get_block_idx, get_block_num

F = 16      # fractal side: 16 x 16 float16 values


class MatmulKernel(Kernel):
    """C = A.B on Atlas A2; each core takes m / block_num rows, K in steps of base_k."""

    core_type = "aic"
    base_k = 128         # k elements per L0A/L0B tile
    l0_buffers = 2       # L0A/L0B double buffered: MTE1 loads step i+1 while M runs step i

    def init(self, a, b, c, m, n, k):
        rows = m // get_block_num()                      # this core's block of C: rows x n
        self.a, self.b = a[get_block_idx() * rows * k], b
        self.c, self.m, self.n, self.k = c[get_block_idx() * rows * n], rows, n, k
        bk, nb = self.base_k, self.l0_buffers
        self.a1, self.b1 = TQue(TPosition.A1, 1, name="A1"), TQue(TPosition.B1, 1, name="B1")
        self.a2, self.b2 = TQue(TPosition.A2, nb, name="A2"), TQue(TPosition.B2, nb, name="B2")
        self.co1 = TQue(TPosition.CO1, 1, name="CO1")
        for que, num, nbytes in ((self.a1, 1, rows * k * 2), (self.b1, 1, k * n * 2),
                                 (self.a2, nb, rows * bk * 2), (self.b2, nb, bk * n * 2),
                                 (self.co1, 1, rows * n * 4)):
            self.pipe.init_buffer(que, num, nbytes)

    def process(self):
        m, n, k = self.m, self.n, self.k
        a1, b1 = self.a1.alloc_tensor("float16"), self.b1.alloc_tensor("float16")
        cube.data_copy_nd2nz(a1, self.a, cube.Nd2NzParams(
            n_value=m, d_value=k, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
        cube.data_copy_nd2nz(b1, self.b, cube.Nd2NzParams(
            n_value=k, d_value=n, src_d_value=n, dst_nz_c0_stride=k, dst_nz_n_stride=1))
        self.a1.enque(a1)
        self.b1.enque(b1)
        a1, b1 = self.a1.deque(), self.b1.deque()
        c = self.co1.alloc_tensor("float32")
        for step, k_lo in enumerate(range(0, k, self.base_k)):
            self.load_step(a1, b1, k_lo)
            a2, b2 = self.a2.deque(), self.b2.deque()
            cube.mmad(c, a2, b2, cube.MmadParams(m=m, n=n, k=self.base_k,
                                                 cmatrix_init_val=step == 0))
            self.a2.free_tensor(a2)
            self.b2.free_tensor(b2)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)
        self.co1.enque(c)
        c = self.co1.deque()
        cube.fixpipe(self.c, c, cube.FixpipeParamsV220(m_size=m, n_size=n, src_stride=m,
                                                       dst_stride=n))
        self.co1.free_tensor(c)

    def load_step(self, a1, b1, k_lo):
        """MTE1: the base_k-deep slices of A and B from L1 into L0A / L0B."""
        m1, n1, k1, kt = self.m // F, self.n // F, self.k // F, self.base_k // F
        a2, b2 = self.a2.alloc_tensor("float16"), self.b2.alloc_tensor("float16")
        for mb in range(m1):
            cube.load_data(a2[mb * kt * F * F], a1, cube.LoadData2DParams(
                start_index=(k_lo // F) * m1 + mb, repeat_times=kt, src_stride=m1))
        for kk in range(kt):
            cube.load_data(b2[kk * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=k_lo // F + kk, repeat_times=n1, src_stride=k1, if_transpose=True))
        self.a2.enque(a2)
        self.b2.enque(b2)
