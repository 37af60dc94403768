"""Lesson 5's exercise, broken on purpose: the MTE2 -> V order is missing.

The check reports a race: V reads x while MTE2 may still be writing it.
"""

from npusim.dsl import HardEvent, Kernel, TBuf, TPosition, data_copy, set_flag, wait_flag
from npusim.dsl import vector as vec


def order(event):
    """Everything the event's source pipe was given so far runs before what its
    destination pipe is given next."""
    set_flag(event)
    wait_flag(event)


class FlagHalfDiffKernel(Kernel):
    def init(self, x, y, z, length, tile):
        self.x, self.y, self.z, self.tile = x, y, z, tile
        self.tiles = length // tile
        self.bufs = [TBuf(TPosition.VECCALC, name=n) for n in ("xBuf", "yBuf", "zBuf")]
        for buf in self.bufs:
            self.pipe.init_buffer(buf, tile * 2)

    def process(self):
        x, y, z = (buf.get("float16") for buf in self.bufs)
        n = self.tile
        for i in range(self.tiles):
            data_copy(x, self.x[i * n], n)
            data_copy(y, self.y[i * n], n)
            # BUG: no order(HardEvent.MTE2_V): V may read x before it is in
            vec.sub(z, x, y, n)
            vec.muls(z, z, 0.5, n)
            order(HardEvent.V_MTE2)      # V is done with x and y: the next load may start
            order(HardEvent.V_MTE3)      # z is written before MTE3 stores it
            data_copy(self.z[i * n], z, n)
            order(HardEvent.MTE3_V)      # z is stored before V overwrites it
