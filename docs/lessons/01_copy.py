"""Lesson 1: one core copies a tensor, GM -> UB -> GM. Run: python docs/lessons/01_copy.py"""

from pathlib import Path

import numpy as np

from npusim.dsl import Kernel, Pipe, TPosition, TQue, data_copy
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.face import plot
from npusim.face.lesson_specs import ESTIMATES

FIGURES = Path(__file__).parent / "figures"


class CopyKernel(Kernel):
    """z = x, one tile at a time through one UB buffer."""

    def init(self, x, z, length, tile):
        self.x, self.z, self.tile = x, z, tile
        self.tiles = length // tile                      # tiles this core copies
        # One UB buffer filled by MTE2 (GM -> UB) and emptied by MTE3 (UB -> GM).
        self.que = TQue(TPosition.VECIN, 1, consumer=Pipe.MTE3, name="copyQueue")
        self.pipe.init_buffer(self.que, 1, tile * x.dtype.itemsize)

    def process(self):
        for i in range(self.tiles):
            t = self.que.alloc_tensor(self.x.dtype)      # wait until the buffer is free
            data_copy(t, self.x[i * self.tile], self.tile)   # MTE2: GM -> UB
            self.que.enque(t)                            # tell MTE3 the tile is in
            t = self.que.deque()                         # MTE3 waits for it
            data_copy(self.z[i * self.tile], t, self.tile)   # MTE3: UB -> GM
            self.que.free_tensor(t)                      # the buffer may be refilled


def main():
    print(ESTIMATES[1].lines())
    length, tile = 16384, 2048
    x0 = np.arange(length, dtype=np.float16)
    gm = GlobalMemory()
    x, z = gm.tensor("x", "float16", length, x0), gm.tensor("z", "float16", length)
    r = launch(CopyKernel, chip="atlas-a2", block_dim=1, gm=gm,
               args=dict(x=x, z=z, length=length, tile=tile), outputs={"z": (z, (length,))})
    print("copy_exact =", np.array_equal(r.outputs["z"], x0))
    print(f"copy_cycles = {r.cycles:,}")
    print(f"copy_us = {r.time_us:.2f}")
    busy = r.stats["pipe_utilisation"]
    print(f"copy_mte2_busy = {busy['MTE2']:.0%}")
    print(f"copy_mte3_busy = {busy['MTE3']:.0%}")
    moves = [rec for rec in r.tracer.records if rec[2].name == "data_copy"]
    first_in, first_out = moves[0], moves[1]
    print(f"copy_tile_in = {first_in[5] - first_in[4]:,.0f}")
    print(f"copy_tile_out = {first_out[5] - first_out[4]:,.0f}")
    print(f"copy_first_start = {first_in[4]:,.0f}")
    print("\n".join(r.line_trace(core=0).splitlines()[:12]))   # the first whole lines
    FIGURES.mkdir(exist_ok=True)
    plot.pipeline(r, FIGURES / "01_copy_pipeline.png")


if __name__ == "__main__":
    main()
