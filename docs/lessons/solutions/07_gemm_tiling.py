"""Lesson 7's exercise, solved: rows split over the cores, K in base_k steps, through L1 too.

K comes into L1 in l1_k slices, into one of two L1 buffers, the next issued before the cube
works on the current one, so that MTE1 and the cube can work on one slice while MTE2 brings the
next. On Atlas A2 an ND->NZ copy costs about 780 cycles whatever its size up to 64 KB
(models/costs/910b/gm_to_l1_nd2nz.csv), so every extra slice adds about that much to MTE2,
the longest pipe: one slice of all of K (l1_k = k, two copies per core) is the fastest here
(two slices of 256, and four of 128, were both slower when tried at the issue-38 model).

Check: npusim lesson check 7 docs/lessons/solutions/07_gemm_tiling.py
"""

from npusim.dsl import Kernel, TPosition, TQue, cube, get_block_idx, get_block_num

F = 16      # fractal side: 16 x 16 float16 values


class MatmulKernel(Kernel):
    """C = A.B on Atlas A2; each core takes m / block_num rows, K in steps of base_k."""

    core_type = "aic"
    l1_k = 512           # k elements per L1 slice: few, large GM -> L1 copies
    base_k = 128         # k elements per L0A/L0B tile (two buffers of it fit L0A)
    buffers = 2          # L1 and L0 double buffered: each stage fills one while the next uses one

    def init(self, a, b, c, m, n, k):
        rows = m // get_block_num()                      # this core's block of C: rows x n
        self.a, self.b = a[get_block_idx() * rows * k], b
        self.c, self.m, self.n, self.k = c[get_block_idx() * rows * n], rows, n, k
        lk, bk, nb = self.l1_k, self.base_k, self.buffers
        self.a1, self.b1 = TQue(TPosition.A1, nb, name="A1"), TQue(TPosition.B1, nb, name="B1")
        self.a2, self.b2 = TQue(TPosition.A2, nb, name="A2"), TQue(TPosition.B2, nb, name="B2")
        self.co1 = TQue(TPosition.CO1, 1, name="CO1")
        for que, nbytes in ((self.a1, rows * lk * 2), (self.b1, lk * n * 2),
                            (self.a2, rows * bk * 2), (self.b2, bk * n * 2)):
            self.pipe.init_buffer(que, nb, nbytes)
        self.pipe.init_buffer(self.co1, 1, rows * n * 4)

    def process(self):
        c = self.co1.alloc_tensor("float32")
        slices = range(0, self.k, self.l1_k)
        self.copy_in(0)
        for k_lo in slices:
            if k_lo + self.l1_k < self.k:
                self.copy_in(k_lo + self.l1_k)     # MTE2 brings the next slice meanwhile
            a1, b1 = self.a1.deque(), self.b1.deque()
            for step in range(self.l1_k // self.base_k):
                self.load_step(a1, b1, step)
                a2, b2 = self.a2.deque(), self.b2.deque()
                cube.mmad(c, a2, b2, cube.MmadParams(m=self.m, n=self.n, k=self.base_k,
                                                     cmatrix_init_val=k_lo == 0 and step == 0))
                self.a2.free_tensor(a2)
                self.b2.free_tensor(b2)
            self.a1.free_tensor(a1)
            self.b1.free_tensor(b1)
        self.co1.enque(c)
        c = self.co1.deque()
        cube.fixpipe(self.c, c, cube.FixpipeParamsV220(m_size=self.m, n_size=self.n,
                                                       src_stride=self.m, dst_stride=self.n))
        self.co1.free_tensor(c)

    def copy_in(self, k_lo):
        """MTE2: the l1_k-deep slice of A (rows x l1_k) and of B (l1_k x n) into L1."""
        m, n, k, bk = self.m, self.n, self.k, self.l1_k
        a1, b1 = self.a1.alloc_tensor("float16"), self.b1.alloc_tensor("float16")
        cube.data_copy_nd2nz(a1, self.a[k_lo], cube.Nd2NzParams(
            n_value=m, d_value=bk, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
        cube.data_copy_nd2nz(b1, self.b[k_lo * n], cube.Nd2NzParams(
            n_value=bk, d_value=n, src_d_value=n, dst_nz_c0_stride=bk, dst_nz_n_stride=1))
        self.a1.enque(a1)
        self.b1.enque(b1)

    def load_step(self, a1, b1, step):
        """MTE1: the step-th base_k of the L1 slice into L0A / L0B."""
        m1, n1, kt, lt = self.m // F, self.n // F, self.base_k // F, self.l1_k // F
        a2, b2 = self.a2.alloc_tensor("float16"), self.b2.alloc_tensor("float16")
        for mb in range(m1):
            cube.load_data(a2[mb * kt * F * F], a1, cube.LoadData2DParams(
                start_index=step * kt * m1 + mb, repeat_times=kt, src_stride=m1))
        for kk in range(kt):
            cube.load_data(b2[kk * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=step * kt + kk, repeat_times=n1, src_stride=lt, if_transpose=True))
        self.a2.enque(a2)
        self.b2.enque(b2)
