"""The SwiGluGrad kernel on the AIV cores (ops-nn activation/swi_glu_grad/op_kernel:
swi_glu_grad_float.hpp for fp32, swi_glu_grad_bf16.hpp for fp16/bf16), beta = -1.

Per tile: A, B (from x, strided) and L (yGrad) in; sig = 1 / (1 + exp(-A)); the grad of B:
N = sig x A x L; the grad of A: M = (sig x (1 - sig) x A x 1 + sig) x B x L (fp32 order) or
x L x B (fp16/bf16 order, through fp32 casts, CAST_RINT back); M to x's A half, N to its B half.

Modelled: the chains in CANN's order, the unit split, double buffering. Not modelled: CANN's
exact tile sizes (npusim fills UB).
"""

from npusim.dsl import Kernel, TBuf, TPosition, TQue
from npusim.dsl import vector as vec
from npusim.ops.swiglu.tiles import core_units, padded, rows_in, rows_out, tiles
from npusim.ops.swiglu.tiling import SwiGluTiling

IN_QUEUES = ("inQueueA", "inQueueB", "inQueueL")
OUT_QUEUES = ("outQueueM", "outQueueN")


class SwiGluGradKernel(Kernel):
    """One vector core's units: the grads of A and B."""

    def init(self, y_grad, x, out, tiling: SwiGluTiling):
        t = self.t = tiling
        self.l_gm, self.x_gm, self.o_gm, self.dtype = y_grad, x, out, x.dtype
        self.first, self.count = core_units(t)
        self.wide = self.dtype.itemsize == 2
        nbytes = t.tile_length * self.dtype.itemsize
        self.q = {}
        for names, pos in ((IN_QUEUES, TPosition.VECIN), (OUT_QUEUES, TPosition.VECOUT)):
            for name in names:
                self.q[name] = TQue(pos, t.buffer_num, name=name)
                self.pipe.init_buffer(self.q[name], t.buffer_num, nbytes)
        names = ("tmpQueue", "sigQueue") + (("aTempBuffer", "lTempBuffer", "outputTempBuffer")
                                            if self.wide else ())
        self.buf = {}
        for name in names:
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], t.tile_length * 4)

    def f32(self, name: str):
        return self.buf[name].get("float32")

    def process(self):
        for row, col, rows, length in tiles(self.t, self.first, self.count):
            self.copy_in(row, col, rows, length)
            n = rows * padded(length, self.dtype.itemsize)
            (self.compute_wide if self.wide else self.compute)(n)
            self.copy_out(row, col, rows, length)

    def copy_in(self, row, col, rows, length):
        half = self.t.half
        for name, gm, gap in (("inQueueA", self.x_gm[row * 2 * half + col], 2 * half - length),
                              ("inQueueB", self.x_gm[row * 2 * half + half + col],
                               2 * half - length),
                              ("inQueueL", self.l_gm[row * half + col], half - length)):
            local = self.q[name].alloc_tensor(self.dtype)
            rows_in(local, gm, rows, length, gap)
            self.q[name].enque(local)

    def sigmoid(self, sig, tmp, a, n: int):
        """sig = 1 / (1 + exp(-a)) (Muls by beta, Exp, Adds 1, Duplicate 1, Div)."""
        vec.muls(sig, a, -1.0, n)
        vec.exp(sig, sig, n)
        vec.adds(sig, sig, 1.0, n)
        vec.duplicate(tmp, 1.0, n)
        vec.div(sig, tmp, sig, n)

    def grad_a_head(self, m, sig, tmp, a, n: int):
        """m = sig x (1 - sig) x a x 1 + sig."""
        vec.muls(tmp, sig, -1.0, n)
        vec.adds(tmp, tmp, 1.0, n)
        vec.mul(m, sig, tmp, n)
        vec.mul(m, m, a, n)
        vec.muls(m, m, 1.0, n)                       # Muls(-beta)
        vec.add(m, m, sig, n)

    def compute(self, n: int):
        sig, tmp = self.f32("sigQueue"), self.f32("tmpQueue")
        a = self.q["inQueueA"].deque()
        self.sigmoid(sig, tmp, a, n)
        nn = self.q["outQueueN"].alloc_tensor(self.dtype)
        vec.mul(nn, sig, a, n)
        lg = self.q["inQueueL"].deque()
        vec.mul(nn, nn, lg, n)
        self.q["outQueueN"].enque(nn)
        m = self.q["outQueueM"].alloc_tensor(self.dtype)
        self.grad_a_head(m, sig, tmp, a, n)
        self.q["inQueueA"].free_tensor(a)
        b = self.q["inQueueB"].deque()
        vec.mul(m, m, b, n)
        self.q["inQueueB"].free_tensor(b)
        vec.mul(m, m, lg, n)
        self.q["outQueueM"].enque(m)
        self.q["inQueueL"].free_tensor(lg)

    def compute_wide(self, n: int):
        sig, tmp = self.f32("sigQueue"), self.f32("tmpQueue")
        af, lf, of = self.f32("aTempBuffer"), self.f32("lTempBuffer"), self.f32("outputTempBuffer")
        a = self.q["inQueueA"].deque()
        vec.cast(af, a, "none", n)
        self.q["inQueueA"].free_tensor(a)
        self.sigmoid(sig, tmp, af, n)
        vec.mul(of, sig, af, n)                          # N
        lg = self.q["inQueueL"].deque()
        vec.cast(lf, lg, "none", n)
        self.q["inQueueL"].free_tensor(lg)
        nn = self.q["outQueueN"].alloc_tensor(self.dtype)
        vec.mul(of, of, lf, n)
        vec.cast(nn, of, "rint", n)
        self.q["outQueueN"].enque(nn)
        self.grad_a_head(of, sig, tmp, af, n)            # M, reusing the output temp
        b = self.q["inQueueB"].deque()
        vec.cast(af, b, "none", n)
        vec.mul(of, of, lf, n)
        m = self.q["outQueueM"].alloc_tensor(self.dtype)
        vec.mul(of, of, af, n)
        self.q["inQueueB"].free_tensor(b)
        vec.cast(m, of, "rint", n)
        self.q["outQueueM"].enque(m)

    def copy_out(self, row, col, rows, length):
        half = self.t.half
        for name, at in (("outQueueM", 0), ("outQueueN", half)):
            local = self.q[name].deque()
            rows_out(self.o_gm[row * 2 * half + at + col], local, rows, length,
                     2 * half - length)
            self.q[name].free_tensor(local)
