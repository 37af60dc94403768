"""The SwiGlu kernel on the AIV cores (ops-nn activation/swi_glu/op_kernel: swi_glu_single.hpp
with swi_glu_impl.hpp for fp32 and swi_glu_bf16.hpp for fp16/bf16), beta = -1.

Per tile: A and B in (DataCopyPad, strided over the other half), then fp32: c = A x -1, Exp,
Adds 1, c = 1 / c (a tile of ones), c = c x A, c = c x B; fp16/bf16: Cast A to fp32, c = A x -1,
Exp, Adds 1, c = A / c, Cast B to fp32, c = c x B, Cast back with CAST_RINT; out (MTE3).

Modelled: the unit split over cores and tiles, double buffering (CANN's bufferNum 2), the chains
above. Not modelled: CANN's exact tile sizes from its tiling (npusim fills UB); the 32-byte
aligned fast path (npusim always uses DataCopyPad, which on A2 costs the same per byte).
"""

from npusim.dsl import Kernel, TBuf, TPosition, TQue
from npusim.dsl import vector as vec
from npusim.ops.swiglu.tiles import core_units, padded, rows_in, rows_out, tiles
from npusim.ops.swiglu.tiling import SwiGluTiling


class SwiGluKernel(Kernel):
    """One vector core's units: out = swish(A) x B."""

    def init(self, x, out, tiling: SwiGluTiling):
        t = self.t = tiling
        self.x_gm, self.o_gm, self.dtype = x, out, x.dtype
        self.first, self.count = core_units(t)
        self.wide = self.dtype.itemsize == 2
        nbytes = t.tile_length * self.dtype.itemsize
        self.q = {}
        for name, pos in (("inQueueA", TPosition.VECIN), ("inQueueB", TPosition.VECIN),
                          ("outQueueC", TPosition.VECOUT)):
            self.q[name] = TQue(pos, t.buffer_num, name=name)
            self.pipe.init_buffer(self.q[name], t.buffer_num, nbytes)
        names = ("inputTempBuffer", "outputTempBuffer") if self.wide else ("tmpQueue",)
        self.buf = {}
        for name in names:
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], t.tile_length * 4)

    def f32(self, name: str):
        return self.buf[name].get("float32")

    def process(self):
        if not self.wide:
            vec.duplicate(self.f32("tmpQueue"), 1.0, self.t.tile_length)
        for row, col, rows, length in tiles(self.t, self.first, self.count):
            self.copy_in(row, col, rows, length)
            self.compute(rows * padded(length, self.dtype.itemsize))
            self.copy_out(row, col, rows, length)

    def copy_in(self, row, col, rows, length):
        half = self.t.half
        for name, at in (("inQueueA", 0), ("inQueueB", half)):
            local = self.q[name].alloc_tensor(self.dtype)
            rows_in(local, self.x_gm[row * 2 * half + at + col], rows, length, 2 * half - length)
            self.q[name].enque(local)

    def compute(self, n: int):
        a = self.q["inQueueA"].deque()
        c = self.q["outQueueC"].alloc_tensor(self.dtype)
        if self.wide:
            af, cf = self.f32("inputTempBuffer"), self.f32("outputTempBuffer")
            vec.cast(af, a, "none", n)
            self.q["inQueueA"].free_tensor(a)
            self.sigmoid_denominator(cf, af, n)
            vec.div(cf, af, cf, n)
            b = self.q["inQueueB"].deque()
            vec.cast(af, b, "none", n)
            self.q["inQueueB"].free_tensor(b)
            vec.mul(cf, cf, af, n)
            vec.cast(c, cf, "rint", n)
        else:
            self.sigmoid_denominator(c, a, n)
            vec.div(c, self.f32("tmpQueue"), c, n)
            vec.mul(c, c, a, n)
            self.q["inQueueA"].free_tensor(a)
            b = self.q["inQueueB"].deque()
            vec.mul(c, c, b, n)
            self.q["inQueueB"].free_tensor(b)
        self.q["outQueueC"].enque(c)

    @staticmethod
    def sigmoid_denominator(dst, a, n: int):
        """dst = 1 + exp(beta x a), beta = -1."""
        vec.muls(dst, a, -1.0, n)
        vec.exp(dst, dst, n)
        vec.adds(dst, dst, 1.0, n)

    def copy_out(self, row, col, rows, length):
        c = self.q["outQueueC"].deque()
        rows_out(self.o_gm[row * self.t.half + col], c, rows, length, self.t.half - length)
        self.q["outQueueC"].free_tensor(c)
