"""Lesson 1's exercise, solved: z[:length] = x and z[length:] = x, each tile loaded once.

Check: npusim lesson check 1 docs/lessons/solutions/01_copy.py
"""

from npusim.dsl import Kernel, Pipe, TPosition, TQue, data_copy


class CopyKernel(Kernel):
    def init(self, x, z, length, tile):
        self.x, self.z, self.length, self.tile = x, z, length, tile
        self.tiles = length // tile
        self.que = TQue(TPosition.VECIN, 1, consumer=Pipe.MTE3, name="copyQueue")
        self.pipe.init_buffer(self.que, 1, tile * x.dtype.itemsize)

    def process(self):
        for i in range(self.tiles):
            t = self.que.alloc_tensor(self.x.dtype)
            data_copy(t, self.x[i * self.tile], self.tile)                  # one load
            self.que.enque(t)
            t = self.que.deque()
            data_copy(self.z[i * self.tile], t, self.tile)                  # two stores
            data_copy(self.z[self.length + i * self.tile], t, self.tile)
            self.que.free_tensor(t)
