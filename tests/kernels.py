"""Small kernels the engine tests run: copies, cross-core hand-offs, SyncAll, broken ones."""

import numpy as np

from npusim.dsl import (
    HardEvent,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    cross_core_set_flag,
    cross_core_wait_flag,
    data_copy,
    get_block_idx,
    get_block_num,
    get_sub_block_idx,
    is_aiv,
    pipe_barrier,
    set_flag,
    sync_all,
    wait_flag,
)
from npusim.dsl.vector import add
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory


class CopyKernel(Kernel):
    """z = x through UB with one MTE2->MTE3 queue (TQueBind VECIN->VECOUT)."""

    def init(self, x, z, per_core, tile, buffer_num=2, offset_bug=0):
        start = get_block_idx() * per_core
        self.x, self.z, self.tile = x[start + offset_bug], z[start], tile
        self.tiles = per_core // tile
        self.que = TQue(TPosition.VECIN, buffer_num, consumer=Pipe.MTE3, name="bindQueue")
        self.pipe.init_buffer(self.que, buffer_num, tile * x.dtype.itemsize)

    def process(self):
        for i in range(self.tiles):
            t = self.que.alloc_tensor(self.x.dtype)
            data_copy(t, self.x[i * self.tile], self.tile)
            self.que.enque(t)
            t = self.que.deque()
            data_copy(self.z[i * self.tile], t, self.tile)
            self.que.free_tensor(t)


def run_copy(chip="atlas-a2", *, block_dim=4, tiles=8, tile=1024, dtype=np.float16, mode="timed",
             numerics=True, kernel=CopyKernel, slack=0, sanitize=True, jitter=None, **extra):
    """Copy x (``slack`` more elements than z) to z; return (Result, x's first n values)."""
    n = block_dim * tiles * tile
    x0 = (np.arange(n + slack) % 2039).astype(dtype)
    gm = GlobalMemory()
    x, z = gm.tensor("x", dtype, n + slack, x0), gm.tensor("z", dtype, n)
    r = launch(kernel, chip=chip, block_dim=block_dim, gm=gm,
               args=dict(x=x, z=z, per_core=tiles * tile, tile=tile, **extra),
               outputs={"z": (z, (n,))}, mode=mode, numerics=numerics, sanitize=sanitize,
               jitter=jitter)
    return r, x0[:n]


class WaitWithoutSet(CopyKernel):
    def process(self):
        wait_flag(HardEvent.MTE3_MTE2, 5)
        super().process()


class HandOffKernel(Kernel):
    """mix: AIV0 copies x to a GM workspace, the AIC relays a flag, AIV1 copies it to z."""

    core_type = "mix"

    def init(self, x, ws, z, n):
        self.x, self.ws, self.z, self.n = x, ws, z, n
        if is_aiv():
            self.que = TQue(TPosition.VECIN, 1, consumer=Pipe.MTE3)
            self.pipe.init_buffer(self.que, 1, n * x.dtype.itemsize)

    def process(self):
        if not is_aiv():
            cross_core_wait_flag(0)            # from AIV0
            cross_core_set_flag(1)             # to both AIVs
            return
        if get_sub_block_idx() == 0:
            self.move(self.x, self.ws)
            cross_core_set_flag(0, pipe=Pipe.MTE3)
            cross_core_wait_flag(1)
        else:
            cross_core_wait_flag(1, pipe=Pipe.MTE2)
            self.move(self.ws, self.z)

    def move(self, src, dst):
        t = self.que.alloc_tensor(src.dtype)
        data_copy(t, src, self.n)
        self.que.enque(t)
        t = self.que.deque()
        data_copy(dst, t, self.n)
        self.que.free_tensor(t)


class RotateKernel(Kernel):
    """Each core copies its slice to a workspace; after SyncAll it copies its neighbour's."""

    def init(self, x, ws, z, per_core):
        self.x, self.ws, self.z, self.per = x, ws, z, per_core
        self.que = TQue(TPosition.VECIN, 1, consumer=Pipe.MTE3)
        self.pipe.init_buffer(self.que, 1, per_core * x.dtype.itemsize)

    def process(self):
        i, n = get_block_idx(), get_block_num()
        self.move(self.x[i * self.per], self.ws[i * self.per])
        sync_all()
        self.move(self.ws[((i + 1) % n) * self.per], self.z[i * self.per])

    def move(self, src, dst):
        t = self.que.alloc_tensor(src.dtype)
        data_copy(t, src, self.per)
        self.que.enque(t)
        t = self.que.deque()
        data_copy(dst, t, self.per)
        self.que.free_tensor(t)


class MissingDequeWait(CopyKernel):
    """The copy kernel with the deque's wait_flag removed: MTE3 may read before MTE2 wrote."""

    def process(self):
        for i in range(self.tiles):
            t = self.que.alloc_tensor(self.x.dtype)
            data_copy(t, self.x[i * self.tile], self.tile)
            self.que.enque(t)
            t = self.que.fifo.pop(0)          # deque() without its wait_flag
            data_copy(self.z[i * self.tile], t, self.tile)
            self.que.free_tensor(t)
        for i in range(self.tiles):   # balance the sets the missing waits left behind
            wait_flag(HardEvent.MTE2_MTE3, self.que.slots[i % len(self.que.slots)].fwd_id)


class BarrierAfterFlagKernel(Kernel):
    """Issue 38 item 6: V waits on MTE2's flag, then adds; PipeBarrier(ALL); MTE3 copies the
    sum out. The barrier must hold MTE3 until the Add (which starts only after the flag's
    delay) has run, or the copy reads the sum before it is written."""

    core_type = "aiv"

    def init(self, x, z, n):
        self.x, self.z, self.n = x, z, n
        self.xb, self.yb = TBuf(TPosition.VECCALC, name="xBuf"), TBuf(TPosition.VECCALC,
                                                                       name="yBuf")
        self.pipe.init_buffer(self.xb, n * x.dtype.itemsize)
        self.pipe.init_buffer(self.yb, n * x.dtype.itemsize)

    def process(self):
        xl, yl = self.xb.get(self.x.dtype), self.yb.get(self.x.dtype)
        data_copy(xl, self.x[0], self.n)
        set_flag(HardEvent.MTE2_V, 0)
        wait_flag(HardEvent.MTE2_V, 0)
        add(yl, xl, xl, self.n)
        pipe_barrier(Pipe.ALL)
        data_copy(self.z[0], yl, self.n)
