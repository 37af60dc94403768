"""Lesson 3's exercise, broken on purpose: still one buffer per queue.

The check says the outputs are bit-exact and the run misses the cycle target.
"""

from npusim.dsl import Kernel, TPosition, TQue, data_copy
from npusim.dsl import vector as vec


class HalfDiffKernel(Kernel):
    buffer_num = 1

    def init(self, x, y, z, length, tile):
        self.x, self.y, self.z, self.tile = x, y, z, tile
        self.tiles = length // tile
        self.in_x = TQue(TPosition.VECIN, self.buffer_num, name="inQueueX")
        self.in_y = TQue(TPosition.VECIN, self.buffer_num, name="inQueueY")
        self.out_z = TQue(TPosition.VECOUT, self.buffer_num, name="outQueueZ")
        for que in (self.in_x, self.in_y, self.out_z):
            self.pipe.init_buffer(que, self.buffer_num, tile * 2)   # one float16 tile

    def process(self):
        for i in range(self.tiles):
            x, y = self.in_x.alloc_tensor("float16"), self.in_y.alloc_tensor("float16")
            data_copy(x, self.x[i * self.tile], self.tile)
            data_copy(y, self.y[i * self.tile], self.tile)
            self.in_x.enque(x)
            self.in_y.enque(y)
            x, y = self.in_x.deque(), self.in_y.deque()
            z = self.out_z.alloc_tensor("float16")
            vec.sub(z, x, y, self.tile)
            vec.muls(z, z, 0.5, self.tile)
            self.out_z.enque(z)
            self.in_x.free_tensor(x)
            self.in_y.free_tensor(y)
            z = self.out_z.deque()
            data_copy(self.z[i * self.tile], z, self.tile)
            self.out_z.free_tensor(z)
