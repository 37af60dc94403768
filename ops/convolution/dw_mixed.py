"""The deterministic gradWeight of Atlas A2 as one mixed AIC/AIV kernel (Conv3DBackpropFilterV2).

CANN's V2 dw kernel in deterministic mode runs as MIX_AIC_1_1 (kernels.md §2(b), §2(e);
``conv3d_backprop_filter_v2.h`` ProcessWithDeterministic): the K reduction is split over cube
cores, each cube core writes its fp32 base-block partial through FixPipe into a ping-pong
workspace slot (2 x 4 x cores x baseM x baseN bytes), the cores synchronise, and vector cores
sum the partials of each block in a fixed order and write the output once.

npusim's kernel: ``dw_k_parts`` = P cube cores share each output block, one K part each (core
c is lane c // P, part c % P; cores past the last whole lane only synchronise). In phase j every
lane computes its j-th block (the ``DwKernel`` task: ``dw_step_m`` M blocks x one N block) and
writes the partial, dense rows x columns, to slot ((j % 2) x lanes + lane) x P + part; then every
core of the launch meets at SyncAll. In phase j + 1 the vector cores (two per cube core, all of
them) sum the phase-j partials of every lane, part 0 + part 1 + ... in that order (what the
golden emulates), a few rows at a time, and write them into the output, while the cube cores
compute phase j + 1 into the other slots. The SyncAll between phases orders every slot write
before its reads and every read before the slot is written again (sanitizer-clean whatever the
timing), so the output is bit-identical under jitter.

Modelled: the partials' GM round trip, the vector reduction overlapped with the next phase's
cube work, a barrier per phase, the output zeroing of ``DwKernel`` (then SyncAll). Not modelled:
CANN's reduction on only the vector cores of kCoreIdx 0 (npusim spreads it over all of them) and
its cross-core flag hand-off (a SyncAll per phase here: the cube cores wait for the slowest).
"""

from npusim.dsl import (
    DataCopyExtParams,
    TPosition,
    TQue,
    data_copy_pad,
    get_block_idx,
    get_block_num,
    is_aiv,
    sync_all,
)
from npusim.ops.common import ceil_div
from npusim.ops.convolution.chunks import dw_n_blocks
from npusim.ops.convolution.cube_dw import DwKernel
from npusim.ops.convolution.vector import sum_parts

TILE = 4096   # fp32 elements a vector core sums at a time (whole rows of the block)


def slot_elements(t) -> int:
    """fp32 elements of one partial slot: a task's C blocks, ``dw_step_m`` x base_m x base_n."""
    return t.dw_step_m * t.base_m * t.base_n


def workspace_elements(t, cores: int) -> int:
    """The ping-pong slots of every whole lane (CANN's 2 x 4 x cores x baseM x baseN bytes)."""
    return 2 * (cores // t.dw_k_parts) * t.dw_k_parts * slot_elements(t)


class DwMixedKernel(DwKernel):
    """Deterministic dw: cube partials in ping-pong slots, fixed-order vector sums."""

    core_type = "mix"

    def init(self, grad5, feat5, ws, out, prob, tiling, cd, l1_a, l1_b, hf32, blocks,
             zero_out=0):
        self.out, self.p, self.t = out, prob, tiling
        if not is_aiv():
            super().init(grad5, feat5, ws, prob, tiling, cd, l1_a, l1_b, hf32, blocks,
                         zero_out)
            self.zero_dst = out
            return
        self.ws, self.zero_out, self.blocks = ws, zero_out, blocks
        self.c0 = 32 // cd.itemsize
        self.g1 = ceil_div(prob.gc, self.c0)
        kh, kw = prob.kdhw[1:]
        self.ncols = ceil_div(prob.fc, self.c0) * kh * kw * self.c0
        self.nblocks = dw_n_blocks(prob, tiling, self.c0)
        self.in_que = TQue(TPosition.VECIN, 2, name="inQueue")
        self.pipe.init_buffer(self.in_que, 2, TILE * 4)
        self.out_que = TQue(TPosition.VECOUT, 1, name="outQueue")
        self.pipe.init_buffer(self.out_que, 1, TILE * 4)

    def geometry(self, cube_cores: int):
        """(lanes, blocks per part, phases)."""
        mbs, nbs = self.blocks
        per_part = self.p.groups * self.p.kdhw[0] * mbs * nbs
        lanes = cube_cores // self.t.dw_k_parts
        return lanes, per_part, ceil_div(per_part, lanes)

    def task(self, rest: int):
        """Block ``rest`` of a part as (g, kd, mb, N block)."""
        mbs, nbs = self.blocks
        rest, nb = divmod(rest, nbs)
        rest, mb = divmod(rest, mbs)
        g, kd = divmod(rest, self.p.kdhw[0])
        return g, kd, mb, self.nblocks[nb]

    def slot(self, phase: int, lane: int, part: int, lanes: int) -> int:
        return (((phase % 2) * lanes + lane) * self.t.dw_k_parts + part) * slot_elements(self.t)

    def process(self):
        if is_aiv():
            self.process_aiv()
            return
        parts = self.t.dw_k_parts
        lanes, per_part, phases = self.geometry(get_block_num())
        lane, part = divmod(get_block_idx(), parts)
        if self.zero_out:
            self.zero_share()
            sync_all()
        for j in range(phases):
            rest = j * lanes + lane
            if lane < lanes and rest < per_part:
                self.at_slot = self.slot(j, lane, part, lanes)
                g, kd, mb, nblock = self.task(rest)
                self.block(part, g, kd, mb, nblock)
            sync_all()

    def write(self, cs, subs, at, nblock):
        """The partial, dense (rows x the N block's columns), into this core's slot."""
        nn = nblock[1]
        for c, (j1, kcj) in zip(cs, subs, strict=True):
            self.copy_out(c, self.ws[self.at_slot + j1 * self.c0 * nn], kcj * self.c0, nn, nn)

    def process_aiv(self):
        lanes, per_part, phases = self.geometry(get_block_num() // 2)
        if self.zero_out:
            sync_all()
        for j in range(phases + 1):
            if j:
                self.reduce_phase(j - 1, lanes, per_part)
            if j < phases:
                sync_all()

    def reduce_phase(self, j: int, lanes: int, per_part: int):
        """Phase j's blocks, cut into row tiles (as many as there are vector cores, when the
        rows allow), round-robin over the vector cores."""
        t, c0 = self.t, self.c0
        items = []
        busy = min(lanes, per_part - j * lanes)   # lanes with a block in phase j
        for lane in range(busy):
            g, kd, mb, nblock = self.task(j * lanes + lane)
            k1_lo = mb * (t.base_m // c0) * t.dw_step_m
            rows = min((t.base_m // c0) * t.dw_step_m, self.g1 - k1_lo) * c0
            # rows per tile: at most TILE elements, few enough that every vector core has one
            step = max(1, min(TILE // nblock[1], ceil_div(busy * rows, get_block_num())))
            row0 = (g * self.p.kdhw[0] + kd) * self.g1 * c0 + k1_lo * c0
            items += [(lane, r0, min(step, rows - r0), row0, nblock)
                      for r0 in range(0, rows, step)]
        for item in items[get_block_idx()::get_block_num()]:
            self.reduce_tile(j, lanes, item)

    def reduce_tile(self, j: int, lanes: int, item):
        """out rows = slot(part 0) + slot(part 1) + ... (fp32, in part order)."""
        lane, r0, rows, row0, nblock = item
        n0, nn = nblock[:2]
        count = rows * nn
        acc = sum_parts(self.in_que, self.out_que,
                        [self.ws[self.slot(j, lane, part, lanes) + r0 * nn]
                         for part in range(self.t.dw_k_parts)], count)
        data_copy_pad(self.out[(row0 + r0) * self.ncols + n0], acc, DataCopyExtParams(
            block_count=rows, block_len=nn * 4, dst_stride=(self.ncols - nn) * 4))
        self.out_que.free_tensor(acc)
