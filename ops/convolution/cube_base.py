"""What the convolution backward cube kernels share: the queues, the L0 loop, the way out of
L0C (FixPipe on Atlas A2; L0C -> UB, a vector Cast and MTE3 on Atlas training) and the copy of
a window of an NC1HWC0 map into L1. See ``ops/convolution/cube.py`` for the kernels.
"""

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
)
from npusim.dsl import vector as vec
from npusim.ops.common import ceil_div, round_up

FRAC = 16
QUANT = {("float32", "float16"): cube.QuantMode.F322F16,
         ("float32", "bfloat16"): cube.QuantMode.F322BF16}


class ConvCubeKernel(Kernel):
    """What the dx and dw kernels share: the queues, the L0 loop and the way out of L0C."""

    core_type = "aic"

    def setup(self, t, cd, out_dtype, l1_a, l1_b, a1_producer=Pipe.MTE2, b1_buffers=None,
              c_blocks=1):
        """Queues and buffers: ``b1_buffers`` B1 buffers (default ``l1_buffers``) and
        ``c_blocks`` base blocks of L0C."""
        self.t, self.cd, self.out_dtype = t, cd, out_dtype
        self.c0 = 32 // cd.itemsize
        self.chip = current().chip
        b1_buffers = b1_buffers or t.l1_buffers
        self.a1 = TQue(TPosition.A1, t.l1_buffers, producer=a1_producer, name="inQueueA1")
        self.b1 = TQue(TPosition.B1, b1_buffers, name="inQueueB1")
        self.a2 = TQue(TPosition.A2, t.l0_buffers, name="inQueueA2")
        self.b2 = TQue(TPosition.B2, t.l0_buffers, name="inQueueB2")
        self.co1 = TQue(TPosition.CO1, c_blocks, name="outQueueCO1")
        self.pipe.init_buffer(self.a1, t.l1_buffers, l1_a)
        self.pipe.init_buffer(self.b1, b1_buffers, l1_b)
        self.pipe.init_buffer(self.a2, t.l0_buffers, t.base_m * t.base_k * cd.itemsize)
        self.pipe.init_buffer(self.b2, t.l0_buffers, t.base_n * t.base_k * cd.itemsize)
        self.pipe.init_buffer(self.co1, c_blocks, t.base_m * t.base_n * 4)
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

    def mmad_a(self, c, b2, m: int, n: int, k: int, init: bool):
        """One Mmad with the next L0A tile and an L0B tile already dequeued (shared by the
        base blocks of a task)."""
        a2 = self.a2.deque()
        cube.mmad(c, a2, b2, cube.MmadParams(m=max(m, 2), n=n, k=k, cmatrix_init_val=init))
        self.a2.free_tensor(a2)

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

    def copy_out_nz(self, c, dst, m: int, n: int, col_stride: int):
        """L0C (m x n, NZ) -> GM in NC1HWC0 of a 16-element C0: Z column kb (16 channels) lands
        as m rows of 16 at ``dst + kb·col_stride`` elements (FixPipe NZ2NZ on Atlas A2; one
        copy of each Z column's rows from UB after the Cast on Atlas training), converting to
        the 16-bit out_dtype. CANN's Conv2D writes its output so (no ND conversion)."""
        self.co1.enque(c)
        c = self.co1.deque()
        if self.chip.has_fixpipe:
            quant = QUANT[(c.dtype.name, self.out_dtype.name)]
            cube.fixpipe(dst, c, cube.FixpipeParamsV220(
                m_size=m, n_size=n, src_stride=round_up(m, FRAC),
                dst_stride=col_stride * self.out_dtype.itemsize // 32, quant_pre=quant),
                config=cube.FixpipeConfig.CFG_NZ)
            self.co1.free_tensor(c)
            return
        m1, n1 = ceil_div(max(m, 2), FRAC), ceil_div(n, FRAC)
        co2 = self.co2.alloc_tensor("float32")
        cube.data_copy_l0c_to_ub(co2, c, DataCopyParams(block_count=1, block_len=m1 * n1))
        self.co1.free_tensor(c)
        out = self.cast_que.alloc_tensor(self.out_dtype)
        vec.cast(out, co2, "rint", m1 * n1 * FRAC * FRAC)
        self.co2.free_tensor(co2)
        self.cast_que.enque(out)
        out = self.cast_que.deque()
        for nb in range(n1):   # Z column nb: m rows of 16 elements, contiguous in both
            data_copy(dst[nb * col_stride] if nb else dst, out[nb * m1 * FRAC * FRAC],
                      DataCopyParams(block_count=1, block_len=m * FRAC * 2 // 32))
        self.cast_que.free_tensor(out)

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
