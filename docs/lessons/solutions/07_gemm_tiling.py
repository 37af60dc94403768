"""Lesson 7's exercise, solved: rows split over the cores, K in base_k steps, through L1 too.

Each base_k slice of A and B goes GM -> L1 on its own, into one of two L1 buffers, so MTE1
starts on slice 0 while MTE2 brings slice 1: MTE1 (each LoadData2D paying its start-up) is the
longest pipe, and it no longer waits for all of A and B first.

Check: npusim lesson check 7 docs/lessons/solutions/07_gemm_tiling.py
"""

from npusim.dsl import Kernel, TPosition, TQue, cube, get_block_idx, get_block_num

F = 16      # fractal side: 16 x 16 float16 values


class MatmulKernel(Kernel):
    """C = A.B on Atlas A2; each core takes m / block_num rows, K in steps of base_k."""

    core_type = "aic"
    base_k = 128         # k elements per L1 slice and per L0A/L0B tile
    buffers = 2          # L1 and L0 double buffered: each stage fills one while the next uses one

    def init(self, a, b, c, m, n, k):
        rows = m // get_block_num()                      # this core's block of C: rows x n
        self.a, self.b = a[get_block_idx() * rows * k], b
        self.c, self.m, self.n, self.k = c[get_block_idx() * rows * n], rows, n, k
        bk, nb = self.base_k, self.buffers
        self.a1, self.b1 = TQue(TPosition.A1, nb, name="A1"), TQue(TPosition.B1, nb, name="B1")
        self.a2, self.b2 = TQue(TPosition.A2, nb, name="A2"), TQue(TPosition.B2, nb, name="B2")
        self.co1 = TQue(TPosition.CO1, 1, name="CO1")
        for que, nbytes in ((self.a1, rows * bk * 2), (self.b1, bk * n * 2),
                            (self.a2, rows * bk * 2), (self.b2, bk * n * 2)):
            self.pipe.init_buffer(que, nb, nbytes)
        self.pipe.init_buffer(self.co1, 1, rows * n * 4)

    def process(self):
        c = self.co1.alloc_tensor("float32")
        for step, k_lo in enumerate(range(0, self.k, self.base_k)):
            self.copy_in(k_lo)
            self.load_step()
            a2, b2 = self.a2.deque(), self.b2.deque()
            cube.mmad(c, a2, b2, cube.MmadParams(m=self.m, n=self.n, k=self.base_k,
                                                 cmatrix_init_val=step == 0))
            self.a2.free_tensor(a2)
            self.b2.free_tensor(b2)
        self.co1.enque(c)
        c = self.co1.deque()
        cube.fixpipe(self.c, c, cube.FixpipeParamsV220(m_size=self.m, n_size=self.n,
                                                       src_stride=self.m, dst_stride=self.n))
        self.co1.free_tensor(c)

    def copy_in(self, k_lo):
        """MTE2: the base_k-deep slice of A (rows x base_k) and of B (base_k x n) into L1."""
        m, n, k, bk = self.m, self.n, self.k, self.base_k
        a1, b1 = self.a1.alloc_tensor("float16"), self.b1.alloc_tensor("float16")
        cube.data_copy_nd2nz(a1, self.a[k_lo], cube.Nd2NzParams(
            n_value=m, d_value=bk, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
        cube.data_copy_nd2nz(b1, self.b[k_lo * n], cube.Nd2NzParams(
            n_value=bk, d_value=n, src_d_value=n, dst_nz_c0_stride=bk, dst_nz_n_stride=1))
        self.a1.enque(a1)
        self.b1.enque(b1)

    def load_step(self):
        """MTE1: the slice from L1 into L0A / L0B; then its L1 buffers are free again."""
        m1, n1, kt = self.m // F, self.n // F, self.base_k // F
        a1, b1 = self.a1.deque(), self.b1.deque()
        a2, b2 = self.a2.alloc_tensor("float16"), self.b2.alloc_tensor("float16")
        for mb in range(m1):
            cube.load_data(a2[mb * kt * F * F], a1, cube.LoadData2DParams(
                start_index=mb, repeat_times=kt, src_stride=m1))
        for kk in range(kt):
            cube.load_data(b2[kk * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=kk, repeat_times=n1, src_stride=kt, if_transpose=True))
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)
        self.a2.enque(a2)
        self.b2.enque(b2)
