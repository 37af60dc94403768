"""AtomicAddCopy (isa/move_atomic.py) and the same-range serialisation of atomic adds."""

import numpy as np
import pytest

import npusim
from npusim.dsl import HardEvent, Kernel, TBuf, TPosition, get_block_idx, set_flag, wait_flag
from npusim.dsl import vector as vec
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import NpusimError
from npusim.isa.move_atomic import AtomicAddCopy
from npusim.ops.embedding.v2 import atomic_add_out


class AddRowKernel(Kernel):
    """Every core fills a UB row with (block_idx + 1) and atomically adds it ``times`` times
    into out at row ``target(core)``."""

    def init(self, out, n: int, times: int, same_row: bool):
        self.out, self.n, self.times = out, n, times
        self.row = 0 if same_row else get_block_idx()
        self.buf = TBuf(TPosition.VECCALC, name="row")
        self.pipe.init_buffer(self.buf, n * 4)

    def process(self):
        t = self.buf.get("float32")
        vec.duplicate(t, float(get_block_idx() + 1), self.n)
        set_flag(HardEvent.V_MTE3)
        wait_flag(HardEvent.V_MTE3)
        for _ in range(self.times):
            atomic_add_out(self.out[self.row * self.n], t, self.n * 4)


def run(chip, *, cores=4, n=1024, times=3, same_row=True, mode="timed"):
    gm = GlobalMemory()
    out = gm.tensor("out", "float32", cores * n, np.full(cores * n, 0.5, np.float32))
    return launch(AddRowKernel, chip=chip, block_dim=cores, gm=gm,
                  args=dict(out=out, n=n, times=times, same_row=same_row),
                  outputs={"out": (out, (cores, n))}, mode=mode)


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_adds_into_gm(chip_name, mode):
    r = run(chip_name, mode=mode)
    assert np.all(r.outputs["out"][0] == 0.5 + 3 * (1 + 2 + 3 + 4))
    assert np.all(r.outputs["out"][1:] == 0.5)
    r = run(chip_name, same_row=False, mode=mode)
    assert r.outputs["out"][:, 0].tolist() == [0.5 + 3 * k for k in (1, 2, 3, 4)]


def test_cost_is_the_atomic_rate_from_the_model(chip_name):
    chip = npusim.load_chip(chip_name)
    assert 0 < chip.ub_to_gm_atomic_bytes_per_cycle < chip.ub_to_gm_bytes_per_cycle  # plateau
    gm = GlobalMemory()
    out = gm.tensor("out", "float32", 1024)
    from npusim.engine.memory import Buffer, LocalTensor

    ub = LocalTensor(Buffer("UB", "aiv0", 8192), 0, np.float32, 1024, 8192, "row")
    inst = AtomicAddCopy(dst=out, src=ub, block_count=1, block_len=4096, src_stride=4096,
                         dst_stride=4096)
    assert inst.pipe == "MTE3" and inst.atomic
    assert inst.body(chip) == pytest.approx(4096 / chip.ub_to_gm_atomic_bytes_per_cycle)
    with pytest.raises(NpusimError, match="adds from UB into GM"):
        AtomicAddCopy(dst=ub, src=out, block_count=1, block_len=4096, src_stride=4096,
                      dst_stride=4096)


def test_same_row_adds_serialise(chip_name):
    """Four cores adding into one row take about four times as long as into four rows."""
    apart = run(chip_name, same_row=False, times=8, n=4096).cycles
    together = run(chip_name, same_row=True, times=8, n=4096).cycles
    assert together > 2.5 * apart
