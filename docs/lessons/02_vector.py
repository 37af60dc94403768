"""Lesson 2: a vector kernel, z = 3x + y on the V pipe. Run: python docs/lessons/02_vector.py"""

from pathlib import Path

import numpy as np

from npusim.dsl import Kernel, TPosition, TQue, data_copy
from npusim.dsl import vector as vec
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import NpusimError
from npusim.face import plot
from npusim.face.lesson_specs import ESTIMATES, fp16_pair

FIGURES = Path(__file__).parent / "figures"


class AxpyKernel(Kernel):
    """z = 3x + y in float16, tile by tile: copy_in, compute, copy_out."""

    buffer_num = 1     # buffers per queue (lesson 3 makes it 2)

    def init(self, x, y, z, length, tile):
        self.x, self.y, self.z, self.tile = x, y, z, tile
        self.tiles = length // tile
        nbytes = tile * x.dtype.itemsize                 # one tile of one tensor
        self.in_x = TQue(TPosition.VECIN, self.buffer_num, name="inQueueX")    # MTE2 -> V
        self.in_y = TQue(TPosition.VECIN, self.buffer_num, name="inQueueY")
        self.out_z = TQue(TPosition.VECOUT, self.buffer_num, name="outQueueZ")  # V -> MTE3
        for que in (self.in_x, self.in_y, self.out_z):
            self.pipe.init_buffer(que, self.buffer_num, nbytes)

    def process(self):
        for i in range(self.tiles):
            self.copy_in(i)
            self.compute()
            self.copy_out(i)

    def copy_in(self, i):
        x, y = self.in_x.alloc_tensor("float16"), self.in_y.alloc_tensor("float16")
        data_copy(x, self.x[i * self.tile], self.tile)
        data_copy(y, self.y[i * self.tile], self.tile)
        self.in_x.enque(x)
        self.in_y.enque(y)

    def compute(self):
        x, y = self.in_x.deque(), self.in_y.deque()
        z = self.out_z.alloc_tensor("float16")
        vec.muls(z, x, 3.0, self.tile)                   # z = 3x, rounded to fp16
        vec.add(z, z, y, self.tile)                      # z = z + y, rounded to fp16
        self.out_z.enque(z)
        self.in_x.free_tensor(x)
        self.in_y.free_tensor(y)

    def copy_out(self, i):
        z = self.out_z.deque()
        data_copy(self.z[i * self.tile], z, self.tile)
        self.out_z.free_tensor(z)


def golden(x, y):
    """What the V pipe computes: each instruction's result rounded to float16."""
    return (x * np.float16(3)).astype(np.float16) + y


def run(kernel, length=65536, tile=4096, block_dim=1, chip="atlas-a2", **options):
    x0, y0 = fp16_pair(length)
    gm = GlobalMemory()
    x, y = gm.tensor("x", "float16", length, x0), gm.tensor("y", "float16", length, y0)
    z = gm.tensor("z", "float16", length)
    r = launch(kernel, chip=chip, block_dim=block_dim, gm=gm,
               args=dict(x=x, y=y, z=z, length=length, tile=tile),
               outputs={"z": (z, (length,))}, **options)
    return r, golden(x0, y0)


def main():
    print(ESTIMATES[2].lines())
    r, want = run(AxpyKernel)
    print("axpy_exact =", np.array_equal(r.outputs["z"], want))
    print(f"axpy_cycles = {r.cycles:,}")
    busy = r.stats["pipe_utilisation"]
    print(f"axpy_mte2_busy = {busy['MTE2']:.0%}")
    print(f"axpy_v_busy = {busy['V']:.0%}")
    print(f"axpy_mte3_busy = {busy['MTE3']:.0%}")
    print(f"axpy_ub_peak = {r.stats['peak_live_bytes']['UB']:,}")
    v = [rec for rec in r.tracer.records if rec[1] == "V" and rec[2].name in ("muls", "add")]
    print(f"axpy_muls_cycles = {v[0][5] - v[0][4]:,.0f}")
    print(f"axpy_add_cycles = {v[1][5] - v[1][4]:,.0f}")
    for tile in (65536, 4090):
        try:
            run(AxpyKernel, tile=tile)
        except NpusimError as exc:
            print(f"tile {tile}: {type(exc).__name__}: {exc}")
    FIGURES.mkdir(exist_ok=True)
    plot.pipeline(r, FIGURES / "02_vector_pipeline.png")
    plot.memory(r, FIGURES / "02_vector_memory.png")


if __name__ == "__main__":
    main()
