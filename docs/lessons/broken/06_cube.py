"""Lesson 6's exercise, broken on purpose: B's fractals go to L0B untransposed.

The check says C differs from the golden: the cube multiplies by B's fractals transposed.
"""

from npusim.dsl import Kernel, TPosition, TQue, cube

F = 16      # fractal side: 16 x 16 float16 values


class MatmulKernel(Kernel):
    core_type = "aic"

    def init(self, a, b, c, m, n, k):
        self.a, self.b, self.c, self.m, self.n, self.k = a, b, c, m, n, k
        self.a1, self.b1 = TQue(TPosition.A1, 1, name="A1"), TQue(TPosition.B1, 1, name="B1")
        self.a2, self.b2 = TQue(TPosition.A2, 1, name="A2"), TQue(TPosition.B2, 1, name="B2")
        self.co1 = TQue(TPosition.CO1, 1, name="CO1")
        for que, nbytes in ((self.a1, m * k * 2), (self.b1, k * n * 2), (self.a2, m * k * 2),
                            (self.b2, k * n * 2), (self.co1, m * n * 4)):
            self.pipe.init_buffer(que, 1, nbytes)

    def process(self):
        m, n, k = self.m, self.n, self.k
        m1, n1, k1 = m // F, n // F, k // F
        a1, b1 = self.a1.alloc_tensor("float16"), self.b1.alloc_tensor("float16")   # MTE2
        cube.data_copy_nd2nz(a1, self.a, cube.Nd2NzParams(
            n_value=m, d_value=k, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
        cube.data_copy_nd2nz(b1, self.b, cube.Nd2NzParams(
            n_value=k, d_value=n, src_d_value=n, dst_nz_c0_stride=k, dst_nz_n_stride=1))
        self.a1.enque(a1)
        self.b1.enque(b1)
        a1, b1 = self.a1.deque(), self.b1.deque()                                    # MTE1
        a2, b2 = self.a2.alloc_tensor("float16"), self.b2.alloc_tensor("float16")
        for mb in range(m1):
            cube.load_data(a2[mb * k1 * F * F], a1, cube.LoadData2DParams(
                start_index=mb, repeat_times=k1, src_stride=m1))
        for kb in range(k1):
            cube.load_data(b2[kb * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=kb, repeat_times=n1, src_stride=k1))  # BUG: no if_transpose
        self.a2.enque(a2)
        self.b2.enque(b2)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)
        a2, b2 = self.a2.deque(), self.b2.deque()                                    # M
        c = self.co1.alloc_tensor("float32")
        cube.mmad(c, a2, b2, cube.MmadParams(m=m, n=n, k=k))
        self.co1.enque(c)
        self.a2.free_tensor(a2)
        self.b2.free_tensor(b2)
        c = self.co1.deque()                                                         # FIX
        cube.fixpipe(self.c, c, cube.FixpipeParamsV220(m_size=m, n_size=n, src_stride=m,
                                                       dst_stride=n))
        self.co1.free_tensor(c)
