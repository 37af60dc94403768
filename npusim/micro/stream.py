"""The GM stream micro-kernel: each core reads its slice of GM into UB (GM bandwidth)."""

from npusim.dsl import Kernel, TPosition, TQue, data_copy, get_block_idx
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory


class StreamKernel(Kernel):
    """Each core reads ``per_core`` bytes of GM into UB, tile by tile (GM bandwidth)."""

    def init(self, src, per_core: int, tile_bytes: int):
        self.src = src[get_block_idx() * per_core]
        self.tiles, self.tile = per_core // tile_bytes, tile_bytes
        self.que = TQue(TPosition.VECIN, 2, name="inQueue")
        self.pipe.init_buffer(self.que, 2, tile_bytes)

    def process(self):
        for i in range(self.tiles):
            t = self.que.alloc_tensor("uint8")
            data_copy(t, self.src[i * self.tile], self.tile)
            self.que.enque(t)
            self.que.free_tensor(self.que.deque())


def run_stream(*, chip="atlas-a2", block_dim: int = 48, per_core_bytes: int = 64 << 20,
               tile_bytes: int = 64 << 10, numerics: bool = False, **launch_args):
    """Every core streams ``per_core_bytes`` of its own GM slice; returns the Result."""
    gm = GlobalMemory()
    src = gm.tensor("src", "uint8", block_dim * per_core_bytes)
    return launch(StreamKernel, chip=chip, block_dim=block_dim, gm=gm,
                  args=dict(src=src, per_core=per_core_bytes, tile_bytes=tile_bytes),
                  outputs={}, numerics=numerics, **launch_args)
