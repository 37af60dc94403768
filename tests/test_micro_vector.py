"""The vector micro-kernel (z = x + y, z = exp(x) * y): exact outputs and hand-worked cycles."""

import numpy as np
import pytest

from npusim import load_chip
from npusim.dsl import wait_flag
from npusim.dtypes import bfloat16
from npusim.errors import HazardError
from npusim.micro.vector import VectorKernel, run_vector
from trace_check import check_trace

CASES = [("atlas-a2", "float16"), ("atlas-a2", "float32"), ("atlas-a2", "bfloat16"),
         ("atlas-training", "float16"), ("atlas-training", "float32")]


def exp_rounded(x):
    """The ISA's exp: float64 exp rounded once to the dtype (isa/vector.py)."""
    return np.exp(x.astype(np.float64)).astype(x.dtype)


def golden(op, x, y):
    """numpy in the kernel's order: in the dtype, or through fp32 for bf16 (cast, op, rint)."""
    if x.dtype == bfloat16:
        xf, yf = x.astype(np.float32), y.astype(np.float32)
        out = xf + yf if op == "add" else exp_rounded(xf) * yf
        return out.astype(bfloat16)
    return x + y if op == "add" else exp_rounded(x) * y


@pytest.mark.parametrize("chip, dtype", CASES)
@pytest.mark.parametrize("op", ["add", "exp_mul"])
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_outputs_bit_identical_to_golden(chip, dtype, op, mode):
    r = run_vector(op, chip=chip, dtype=dtype, tiles=4, tile_length=1024, block_dim=2, mode=mode)
    x, y, z = r.outputs["x"], r.outputs["y"], r.outputs["z"]
    assert z.dtype == np.dtype(dtype)
    assert np.array_equal(z.view(np.uint8), golden(op, x, y).view(np.uint8))


def test_bf16_arithmetic_goes_through_fp32_casts():
    r = run_vector("add", dtype="bfloat16", tiles=2)
    assert r.stats["instruction_counts"]["cast"] == 3 * 2


def single_tile_cycles(chip, n, itemsize, add_startup, add_slope):
    """The single-core, single-tile timeline worked out by hand from the chip model.

    MTE2 copies x (GM latency paid: the pipe was idle) then y back to back; two set_flags;
    V passes its two waits (a flag is visible one cycle after its set, and each wait holds the
    pipe a cycle); add; set V->MTE3; MTE3 waits, copies z out (GM latency again); set MTE3->V,
    which the V pipe's end-of-kernel wait consumes.
    """
    nbytes = n * itemsize
    copy_in = chip.gm_latency_cycles + 2 * nbytes / chip.rate("gm_to_ub_bytes_per_cycle", nbytes)
    repeats = nbytes / chip.repeat_bytes
    add = add_startup + add_slope * repeats
    copy_out = chip.gm_latency_cycles + nbytes / chip.rate("ub_to_gm_bytes_per_cycle", nbytes)
    return 1 + copy_in + 3 + add + 2 + copy_out + 2


@pytest.mark.parametrize("chip_name, dtype, cycles", [
    ("atlas-a2", "float16", 1101), ("atlas-a2", "float32", 1190),
    ("atlas-training", "float16", 755), ("atlas-training", "float32", 1095)])
def test_single_tile_cycles_are_pinned(chip_name, dtype, cycles):
    chip = load_chip(chip_name)
    r = run_vector("add", chip=chip_name, dtype=dtype, tiles=1, tile_length=2048, buffer_num=1)
    startup, slope = chip.vector_cost("add", "f16" if dtype == "float16" else "f32")
    by_hand = single_tile_cycles(chip, 2048, np.dtype(dtype).itemsize, startup, slope)
    assert r.cycles == cycles == int(np.ceil(by_hand))


def test_double_buffering_hides_the_vector_work():
    chip = load_chip("atlas-a2")
    one = run_vector("add", tiles=1, buffer_num=1).cycles
    single = run_vector("add", tiles=16, buffer_num=1).cycles
    double = run_vector("add", tiles=16, buffer_num=2).cycles
    copy_in = chip.gm_latency_cycles + 2 * 4096 / chip.rate("gm_to_ub_bytes_per_cycle", 4096)
    startup, slope = chip.vector_cost("add", "f16")
    add = startup + slope * 16
    # Double buffered, MTE2 is the bottleneck: each tile costs its two copies plus 4 flags.
    assert (double - one) / 15 == pytest.approx(copy_in + 4, rel=0.01)
    # Single buffered, MTE2 also waits for V to free the buffers: + the add and its hand-offs.
    assert (single - one) / 15 == pytest.approx(copy_in + 4 + add + 4, rel=0.01)
    assert single - double == pytest.approx(15 * (add + 4), rel=0.05)


def test_timed_equals_functional_and_numerics_off_keeps_cycles(chip_name):
    timed = run_vector("exp_mul", chip=chip_name, tiles=8, block_dim=4)
    func = run_vector("exp_mul", chip=chip_name, tiles=8, block_dim=4, mode="functional")
    off = run_vector("exp_mul", chip=chip_name, tiles=8, block_dim=4, numerics=False)
    assert np.array_equal(timed.outputs["z"], func.outputs["z"])
    assert off.cycles == timed.cycles


@pytest.mark.parametrize("seed", [7, 8])
def test_jitter_keeps_outputs(chip_name, seed):
    base = run_vector("exp_mul", chip=chip_name, tiles=6, block_dim=2)
    jit = run_vector("exp_mul", chip=chip_name, tiles=6, block_dim=2, jitter=(seed, 80.0))
    assert np.array_equal(jit.outputs["z"], base.outputs["z"])
    assert jit.cycles != base.cycles


class NoReuseWaitForZ(VectorKernel):
    """One wait_flag removed: reusing a z buffer no longer waits for MTE3 to have copied it out.

    (Removing one of the two deque waits would not race: x's and y's flags are both set after
    both copies, so either wait orders both. The sanitizer knows that.)
    """

    def process(self):
        original, skipped = self.out_z.alloc_tensor, []

        def alloc_without_wait(dtype):
            slot = self.out_z.slots[self.out_z.next_slot]
            if slot.freed:
                slot.freed = False
                skipped.append(slot.back_id)
            return original(dtype)

        self.out_z.alloc_tensor = alloc_without_wait
        super().process()
        for event_id in skipped:   # balance the sets the missing waits left
            wait_flag("MTE3_V", event_id)


def test_removing_one_wait_flag_is_a_hazard():
    import npusim.micro.vector as mv

    original = mv.VectorKernel
    mv.VectorKernel = NoReuseWaitForZ
    try:
        with pytest.raises(HazardError, match=r"aiv0.UB.*data_copy on aiv0 PIPE-MTE3 reads"):
            run_vector("add", tiles=4)
    finally:
        mv.VectorKernel = original


def test_trace_schema(chip_name, tmp_path):
    check_trace(run_vector("exp_mul", chip=chip_name, tiles=4, block_dim=2), tmp_path / "v.json")
