"""Lesson 1's exercise, broken on purpose: right output, but each tile is loaded twice.

The check says the outputs are bit-exact and the cycles miss the target (16 loads instead of 8).
"""

from npusim.dsl import Kernel, Pipe, TPosition, TQue, data_copy


class CopyKernel(Kernel):
    def init(self, x, z, length, tile):
        self.x, self.z, self.length, self.tile = x, z, length, tile
        self.tiles = length // tile
        self.que = TQue(TPosition.VECIN, 1, consumer=Pipe.MTE3, name="copyQueue")
        self.pipe.init_buffer(self.que, 1, tile * x.dtype.itemsize)

    def process(self):
        for copy in range(2):                    # the whole copy, done twice
            for i in range(self.tiles):
                t = self.que.alloc_tensor(self.x.dtype)
                data_copy(t, self.x[i * self.tile], self.tile)
                self.que.enque(t)
                t = self.que.deque()
                data_copy(self.z[copy * self.length + i * self.tile], t, self.tile)
                self.que.free_tensor(t)
