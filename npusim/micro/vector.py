"""The vector micro-kernel: z = x + y or z = exp(x) * y over UB tiles.

Two input queues and one output queue of ``buffer_num`` buffers each, as the Ascend C Add
sample. bf16 goes through fp32 with visible casts (the A2 vector unit converts bf16 but does not
compute in it).
"""

from dataclasses import dataclass

import numpy as np

from npusim.dsl import Kernel, TBuf, TPosition, TQue, data_copy, get_block_idx
from npusim.dsl import vector as vec
from npusim.dtypes import dtype_of, name_of
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import TilingError


@dataclass(frozen=True, kw_only=True)
class VectorTiling:
    """Host tiling of the vector micro-kernel."""

    block_dim: int      # cores used
    per_core: int       # elements per core
    tile_length: int    # elements per UB tile
    buffer_num: int     # buffers per queue: 1 single, 2 double buffering


class VectorKernel(Kernel):
    """z = x + y (``op='add'``) or z = exp(x) * y (``op='exp_mul'``)."""

    def init(self, x, y, z, tiling: VectorTiling, op: str):
        self.tiling, self.op, self.dtype = tiling, op, x.dtype
        start = get_block_idx() * tiling.per_core
        self.x_gm, self.y_gm, self.z_gm = x[start], y[start], z[start]
        self.tiles = tiling.per_core // tiling.tile_length
        tile_bytes = tiling.tile_length * self.dtype.itemsize
        self.in_x = TQue(TPosition.VECIN, tiling.buffer_num, name="inQueueX")
        self.in_y = TQue(TPosition.VECIN, tiling.buffer_num, name="inQueueY")
        self.out_z = TQue(TPosition.VECOUT, tiling.buffer_num, name="outQueueZ")
        for que in (self.in_x, self.in_y, self.out_z):
            self.pipe.init_buffer(que, tiling.buffer_num, tile_bytes)
        self.wide = name_of(self.dtype) == "bfloat16"
        if self.wide:  # fp32 working copies for bf16
            self.calc = TBuf(TPosition.VECCALC, name="calcBuf")
            self.pipe.init_buffer(self.calc, 3 * tiling.tile_length * 4)

    def process(self):
        for i in range(self.tiles):
            self.copy_in(i)
            self.compute(i)
            self.copy_out(i)

    def copy_in(self, i):
        n = self.tiling.tile_length
        x, y = self.in_x.alloc_tensor(self.dtype), self.in_y.alloc_tensor(self.dtype)
        data_copy(x, self.x_gm[i * n], n)
        data_copy(y, self.y_gm[i * n], n)
        self.in_x.enque(x)
        self.in_y.enque(y)

    def compute(self, i):
        n = self.tiling.tile_length
        x, y = self.in_x.deque(), self.in_y.deque()
        z = self.out_z.alloc_tensor(self.dtype)
        if self.wide:
            work = self.calc.get("float32")
            xf, yf, zf = work[0], work[n], work[2 * n]
            vec.cast(xf, x, "none", n)
            vec.cast(yf, y, "none", n)
            self.apply(zf, xf, yf, n)
            vec.cast(z, zf, "rint", n)
        else:
            self.apply(z, x, y, n)
        self.out_z.enque(z)
        self.in_x.free_tensor(x)
        self.in_y.free_tensor(y)

    def apply(self, z, x, y, n):
        if self.op == "add":
            vec.add(z, x, y, n)
        else:
            vec.exp(z, x, n)
            vec.mul(z, z, y, n)

    def copy_out(self, i):
        n = self.tiling.tile_length
        z = self.out_z.deque()
        data_copy(self.z_gm[i * n], z, n)
        self.out_z.free_tensor(z)


def vector_tiling(total: int, dtype, *, block_dim: int, tile_length: int,
                  buffer_num: int) -> VectorTiling:
    per_core, rest = divmod(total, block_dim)
    if rest or per_core % tile_length:
        raise TilingError(f"{total} elements do not split into {block_dim} cores of whole "
                          f"{tile_length}-element tiles")
    if buffer_num not in (1, 2):
        raise TilingError(f"buffer_num = {buffer_num}: allowed 1 or 2")
    return VectorTiling(block_dim=block_dim, per_core=per_core, tile_length=tile_length,
                        buffer_num=buffer_num)


def run_vector(op: str = "add", *, chip="atlas-a2", dtype="float16", tiles: int = 16,
               tile_length: int = 2048, buffer_num: int = 2, block_dim: int = 1,
               mode: str = "timed", numerics: bool = True, seed: int = 0, **launch_args):
    """Run the vector micro-kernel on random inputs; the Result has outputs x, y, z.

    ``launch_args`` go to ``launch`` (``sanitize``, ``trace``, ``jitter``).
    """
    dt = dtype_of(dtype)
    total = tiles * tile_length * block_dim
    tiling = vector_tiling(total, dt, block_dim=block_dim, tile_length=tile_length,
                           buffer_num=buffer_num)
    rng = np.random.default_rng(seed)
    x0 = rng.uniform(-4, 4, total).astype(dt)
    y0 = rng.uniform(-4, 4, total).astype(dt)
    gm = GlobalMemory()
    x, y = gm.tensor("x", dt, total, x0), gm.tensor("y", dt, total, y0)
    z = gm.tensor("z", dt, total)
    result = launch(VectorKernel, chip=chip, block_dim=block_dim, gm=gm,
                    args=dict(x=x, y=y, z=z, tiling=tiling, op=op),
                    outputs={"z": (z, (total,))}, mode=mode, numerics=numerics, tiling=tiling,
                    **launch_args)
    result.outputs.update(x=x0, y=y0)
    return result
