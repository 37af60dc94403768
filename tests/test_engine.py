"""The engine: timed and functional runs, shared bandwidth, sync, and errors for bad kernels."""

import time

import numpy as np
import pytest

from kernels import (
    BarrierAfterFlagKernel,
    HandOffKernel,
    MissingDequeWait,
    RotateKernel,
    WaitWithoutSet,
    run_copy,
)
from npusim import load_chip
from npusim.dsl import Kernel, TPosition, TQue, set_flag
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import DeadlockError, HazardError, MemoryAccessError, NpusimError, TilingError
from npusim.micro.stream import run_stream


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_copy_is_exact_in_both_modes(chip_name, mode):
    r, x0 = run_copy(chip_name, mode=mode)
    assert np.array_equal(r.outputs["z"], x0)
    assert (r.cycles > 0) == (mode == "timed")


def test_numerics_off_gives_the_same_cycles_and_no_data(chip_name):
    on, x0 = run_copy(chip_name)
    off, _ = run_copy(chip_name, numerics=False)
    assert on.cycles == off.cycles
    assert not off.outputs["z"].any()


@pytest.mark.parametrize("chip_name, cores", [("atlas-a2", 48), ("atlas-training", 32)])
def test_many_cores_never_beat_hbm(chip_name, cores):
    chip = load_chip(chip_name)
    r = run_stream(chip=chip_name, block_dim=cores, per_core_bytes=64 << 20)
    total = cores * (64 << 20)
    floor_us = total / chip.hbm_bytes_per_s * 1e6
    assert r.time_us >= floor_us
    assert r.time_us <= 1.1 * floor_us  # and the model keeps HBM busy
    assert r.stats["gm"]["hbm_bytes"] == total


def test_one_core_is_limited_by_its_own_mte_rate():
    chip = load_chip("atlas-a2")
    r = run_stream(block_dim=1, per_core_bytes=8 << 20)
    assert r.cycles >= (8 << 20) / chip.gm_to_ub_bytes_per_cycle   # the table's plateau


def test_small_unaligned_moves_pay_whole_bursts():
    chip = load_chip("atlas-a2")
    aligned, _ = run_copy(block_dim=1, tiles=1, tile=256, numerics=False, slack=16)
    shifted, _ = run_copy(block_dim=1, tiles=1, tile=256, numerics=False, slack=16, offset_bug=16)
    nbytes = 256 * 2     # one 512-byte tile, one burst more when shifted
    key = "gm_to_ub_bytes_per_cycle"
    extra = (nbytes + chip.gm_burst_bytes) / chip.rate(key, nbytes + chip.gm_burst_bytes) \
        - nbytes / chip.rate(key, nbytes)
    assert shifted.cycles - aligned.cycles == pytest.approx(extra, abs=1)


def test_off_by_one_tile_in_gm_is_a_memory_access_error():
    with pytest.raises(MemoryAccessError, match=r"core aiv3: .*GM tensor 'x'"):
        run_copy(block_dim=4, offset_bug=1024)


def test_wait_without_set_deadlocks_quickly(chip_name):
    t0 = time.perf_counter()
    with pytest.raises(DeadlockError, match=r"PIPE-MTE2 waits on flag MTE3->MTE2 event 5"):
        run_copy(chip_name, kernel=WaitWithoutSet)
    assert time.perf_counter() - t0 < 1.0
    with pytest.raises(DeadlockError, match="no set_flag before it"):
        run_copy(chip_name, kernel=WaitWithoutSet, mode="functional")


class SetNeverWaited(Kernel):
    def init(self, **_):
        pass

    def process(self):
        set_flag("MTE2_V", 1)


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_unbalanced_set_is_an_error(mode):
    with pytest.raises(DeadlockError, match=r"unbalanced.*set_flag\(MTE2, V, 1\)"):
        launch(SetNeverWaited, chip="atlas-a2", block_dim=1, gm=GlobalMemory(), args={},
               outputs={}, mode=mode)


class Greedy(Kernel):
    def init(self, **_):
        self.pipe.init_buffer(TQue(TPosition.VECIN, 2, name="inQueueX"), 2, 64 << 10)
        self.pipe.init_buffer(TQue(TPosition.VECOUT, 2, name="outQueueZ"), 2, 64 << 10)

    def process(self):
        pass


def test_init_buffer_overflow_lists_what_is_allocated(chip_name):
    expect = "inQueueX 131072 bytes at 0" if chip_name == "atlas-a2" else None
    if expect is None:  # 256 KB UB on atlas-training: everything fits
        launch(Greedy, chip=chip_name, block_dim=1, gm=GlobalMemory(), args={}, outputs={})
        return
    with pytest.raises(TilingError, match=r"outQueueZ.*already allocated: " + expect):
        launch(Greedy, chip=chip_name, block_dim=1, gm=GlobalMemory(), args={}, outputs={})


def test_too_many_cores_is_a_tiling_error():
    with pytest.raises(TilingError, match="1 to 48 cores"):
        run_copy("atlas-a2", block_dim=49, tiles=1)
    with pytest.raises(TilingError, match="1 to 32 cores"):
        run_copy("atlas-training", block_dim=33, tiles=1)


class L1OnVectorCore(Kernel):
    def init(self, **_):
        self.pipe.init_buffer(TQue(TPosition.A1, 1), 1, 1024)

    def process(self):
        pass


def test_vector_core_has_no_l1_but_coupled_core_does():
    with pytest.raises(TilingError, match="aiv0 has no L1"):
        launch(L1OnVectorCore, chip="atlas-a2", block_dim=1, gm=GlobalMemory(), args={},
               outputs={})
    launch(L1OnVectorCore, chip="atlas-training", block_dim=1, gm=GlobalMemory(), args={},
           outputs={})


def test_copy_length_must_be_whole_blocks():
    with pytest.raises(NpusimError, match="not a multiple of 32.*data_copy_pad"):
        run_copy(block_dim=1, tiles=1, tile=10)


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_cross_core_flags_hand_data_from_aiv0_to_aiv1(mode):
    n = 4096
    gm = GlobalMemory()
    x0 = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    x, ws, z = gm.tensor("x", "float32", n, x0), gm.tensor("ws", "float32", n), \
        gm.tensor("z", "float32", n)
    r = launch(HandOffKernel, chip="atlas-a2", block_dim=1, gm=gm,
               args=dict(x=x, ws=ws, z=z, n=n), outputs={"z": (z, (n,))}, mode=mode)
    assert np.array_equal(r.outputs["z"], x0)
    if mode == "timed":
        assert r.cycles > 2 * load_chip("atlas-a2").cross_core_flag_cycles


@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_sync_all_orders_every_core(chip_name, mode):
    cores, per = 8, 512
    gm = GlobalMemory()
    x0 = np.arange(cores * per, dtype=np.int32)
    x, ws, z = (gm.tensor("x", "int32", cores * per, x0), gm.tensor("ws", "int32", cores * per),
                gm.tensor("z", "int32", cores * per))
    r = launch(RotateKernel, chip=chip_name, block_dim=cores, gm=gm,
               args=dict(x=x, ws=ws, z=z, per_core=per), outputs={"z": (z, (cores * per,))},
               mode=mode)
    assert np.array_equal(r.outputs["z"], np.roll(x0, -per))


def test_full_queue_stalls_the_scalar():
    r, _ = run_copy(block_dim=1, tiles=64, tile=256, numerics=False)
    depth = load_chip("atlas-a2").queue_depth
    mte2 = [rec for rec in r.tracer.records if rec[1] == "MTE2"]
    issue = [rec[3] for rec in mte2]
    start = [rec[4] for rec in mte2]
    assert max(issue) > 100  # the scalar did stall
    for i in range(depth, len(mte2)):
        assert issue[i] >= start[i - depth] - 1e-9


def test_bad_mode_is_refused():
    with pytest.raises(NpusimError, match="mode 'fast'"):
        run_copy(mode="fast")


def test_a_removed_wait_flag_is_a_hazard(chip_name):
    with pytest.raises(HazardError, match=r"race on core0.UB|race on aiv0.UB") as info:
        run_copy(chip_name, block_dim=1, kernel=MissingDequeWait)
    assert "(read after write): the 1st data_copy on" in str(info.value)
    assert "PIPE-MTE2 writes them" in str(info.value)


def test_sanitizer_can_be_switched_off():
    r, _ = run_copy(block_dim=1, kernel=MissingDequeWait, sanitize=False)
    assert r.cycles > 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_jitter_keeps_outputs_bit_identical(chip_name, seed):
    base, x0 = run_copy(chip_name)
    jittered, _ = run_copy(chip_name, jitter=(seed, 50.0))
    assert np.array_equal(jittered.outputs["z"], base.outputs["z"])
    assert jittered.cycles != base.cycles


@pytest.mark.parametrize("chip_name", ["atlas-a2", "atlas-training"])
def test_barrier_waits_for_an_instruction_held_by_its_flag_delay(chip_name):
    """Issue 38 item 6: a pipe that took an instruction from its queue but has not started it
    (waiting out a flag's delay) is not idle: PipeBarrier(ALL) must wait for it. With the
    sanitizer off nothing else catches the copy reading the sum before it is written."""
    n = 2048
    x0 = (np.arange(n) % 97).astype(np.float16)
    gm = GlobalMemory()
    x, z = gm.tensor("x", np.float16, n, x0), gm.tensor("z", np.float16, n)
    r = launch(BarrierAfterFlagKernel, chip=chip_name, block_dim=1, gm=gm,
               args=dict(x=x, z=z, n=n), outputs={"z": (z, (n,))}, mode="timed",
               sanitize=False, trace=True)
    np.testing.assert_array_equal(r.outputs["z"], x0 + x0)
    records = [(pipe, inst.name, start, end)
               for _, pipe, inst, _, start, end in r.tracer.records]
    add_end = max(end for pipe, name, _, end in records if name == "add")
    copy_start = min(start for pipe, name, start, _ in records
                     if pipe == "MTE3" and name == "data_copy")
    assert copy_start >= add_end


def test_many_operator_calls_in_one_process_free_their_memory():
    """Each run's GM sits in reference cycles, and CPython's full collection never came for the
    objects a paused block moved to the oldest generation: a loop of calls kept every GM (the
    fuzzer was killed at 20 GB after 45,000 draws). A full collection every FULL_EVERY launches
    frees them."""
    import gc

    from npusim import ops
    from npusim.engine.gc_pause import FULL_EVERY
    from npusim.engine.memory import GlobalMemory

    x = np.ones((64, 64), np.float16)
    for _ in range(2 * FULL_EVERY + 6):
        ops.silu_backward(x, x, chip="atlas-a2")
    alive = sum(isinstance(o, GlobalMemory) for o in gc.get_objects())
    assert alive <= FULL_EVERY
