"""Lesson 5: set_flag / wait_flag by hand; a race and a deadlock the sanitizer names.

Run: python docs/lessons/05_sync.py
"""

import importlib

import numpy as np

from npusim.dsl import HardEvent, Kernel, TBuf, TPosition, data_copy, set_flag, wait_flag
from npusim.dsl import vector as vec
from npusim.errors import DeadlockError, HazardError
from npusim.face.lesson_specs import ESTIMATES

lesson2 = importlib.import_module("02_vector")


class FlagAxpy(Kernel):
    """z = 3x + y with plain UB buffers (TBuf) and every pipe-to-pipe order written out."""

    skip = ()          # the flags a broken variant leaves out (see main)

    def init(self, x, y, z, length, tile):
        self.x, self.y, self.z, self.tile = x, y, z, tile
        self.tiles = length // tile
        self.bufs = [TBuf(TPosition.VECCALC, name=n) for n in ("xBuf", "yBuf", "zBuf")]
        for buf in self.bufs:
            self.pipe.init_buffer(buf, tile * 2)

    def flag(self, event):              # set then wait: the src pipe's work before the dst's
        if event not in self.skip:
            set_flag(event)
            wait_flag(event)

    def process(self):
        x, y, z = (buf.get("float16") for buf in self.bufs)
        n = self.tile
        for i in range(self.tiles):
            data_copy(x, self.x[i * n], n)                       # MTE2 writes x and y
            data_copy(y, self.y[i * n], n)
            self.flag(HardEvent.MTE2_V)                          # ... before V reads them
            vec.muls(z, x, 3.0, n)
            vec.add(z, z, y, n)
            self.flag(HardEvent.V_MTE2)                          # V reads x, y before MTE2 rewrites
            self.flag(HardEvent.V_MTE3)                          # V writes z before MTE3 reads
            data_copy(self.z[i * n], z, n)
            self.flag(HardEvent.MTE3_V)                          # MTE3 reads z before V rewrites


class LateRelease(FlagAxpy):
    """The same flags, but V tells MTE2 it is done with x and y only after the store."""

    def flag(self, event):
        if event == HardEvent.V_MTE2:
            return
        super().flag(event)
        if event == HardEvent.MTE3_V:
            super().flag(HardEvent.V_MTE2)


class Racy(FlagAxpy):
    skip = (HardEvent.MTE2_V,)


class Deadlocked(FlagAxpy):
    def flag(self, event):
        if event == HardEvent.V_MTE3:
            wait_flag(event)            # waits for a set that never comes
        else:
            super().flag(event)


def main():
    print(ESTIMATES[5].lines())
    r, want = lesson2.run(FlagAxpy, length=16384)
    print("flags_exact =", np.array_equal(r.outputs["z"], want))
    print(f"flags_cycles = {r.cycles:,}")
    late, _ = lesson2.run(LateRelease, length=16384)
    print(f"late_release_cycles = {late.cycles:,}")
    queued, _ = lesson2.run(lesson2.AxpyKernel, length=16384)
    print(f"queues_cycles = {queued.cycles:,}")
    for kernel in (Racy, Deadlocked):
        try:
            lesson2.run(kernel, length=16384)
        except (HazardError, DeadlockError) as exc:
            print(f"{kernel.__name__}: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
