"""Numerics beside the timing run (npusim/engine/beside.py): the same outputs and cycles as numerics
in the run, atomic adds in simulated-time order, the launches it refuses, and its fallback."""

import os

import numpy as np
import pytest

import npusim.engine.beside as beside
import npusim.engine.launch as launch_module
from kernels import CopyKernel, MissingDequeWait, RotateKernel, run_copy
from npusim import ops
from npusim.dsl import (
    HardEvent,
    Kernel,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    data_copy,
    get_block_idx,
    set_flag,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import HazardError
from npusim.ops.embedding.v2 import atomic_add_out

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

# what each core adds into one fp32 cell: the sum's bits depend on the order
ADDENDS = (2.0 ** 24, 1.0, 1.0, -(2.0 ** 24))


class LateAdders(Kernel):
    """Core i adds ADDENDS[i] into out[0:n] after 40·(3 - i) vector instructions, so the timed
    run adds in the reverse of program order (core 0 first)."""

    def init(self, out, n: int):
        self.out, self.n = out, n
        self.buf = TBuf(TPosition.VECCALC, name="row")
        self.pipe.init_buffer(self.buf, n * 4)

    def process(self):
        i = get_block_idx()
        t = self.buf.get("float32")
        for _ in range(40 * (3 - i)):
            vec.duplicate(t, 0.0, self.n)
        vec.duplicate(t, ADDENDS[i], self.n)
        set_flag(HardEvent.V_MTE3)
        wait_flag(HardEvent.V_MTE3)
        atomic_add_out(self.out, t, self.n * 4)


def run_adders(mode="timed", n=64):
    gm = GlobalMemory()
    out = gm.tensor("out", "float32", n, np.full(n, 0.5, np.float32))
    return launch(LateAdders, chip="atlas-a2", block_dim=4, gm=gm, args=dict(out=out, n=n),
                  outputs={"out": (out, (n,))}, mode=mode)


@pytest.fixture
def forks(monkeypatch):
    """Every launch may go beside (no size threshold); the list of what ``start`` returned."""
    monkeypatch.setattr(beside, "MIN_INSTRUCTIONS", 0)
    monkeypatch.setenv("NPUSIM_BESIDE", "1")
    seen: list = []

    def spy(*args):
        got = beside.start(*args)
        seen.append(got)
        return got

    monkeypatch.setattr(launch_module, "start_beside", spy)
    return seen


def in_run(monkeypatch, fn):
    """``fn()`` with numerics in the timing run."""
    with monkeypatch.context() as m:
        m.setenv("NPUSIM_BESIDE", "0")
        return fn()


def test_atomic_adds_land_in_simulated_time_order(forks, monkeypatch):
    got = run_adders()
    assert forks and forks[0] is not None and forks[0].atomics
    ref = in_run(monkeypatch, run_adders)
    assert got.outputs["out"].tobytes() == ref.outputs["out"].tobytes()
    assert got.cycles == ref.cycles
    # program order (core 0 first) gives other bits: the order really was the timed one
    assert got.outputs["out"][0] == 2.0
    assert run_adders(mode="functional").outputs["out"][0] == 0.0


@pytest.mark.parametrize("case", ["silu", "conv"])
def test_operator_outputs_and_cycles_as_with_numerics_in_the_run(forks, monkeypatch, case):
    rng = np.random.default_rng(3)
    if case == "silu":
        x = rng.standard_normal(40_000).astype(np.float16)
        dy = rng.standard_normal(40_000).astype(np.float16)

        def call():
            return ops.silu_backward(dy, x, chip="atlas-a2")
    else:
        x = rng.standard_normal((2, 16, 12, 12)).astype(np.float16)
        w = rng.standard_normal((16, 16, 3, 3)).astype(np.float16)
        dy = rng.standard_normal((2, 16, 12, 12)).astype(np.float16)

        def call():
            return ops.convolution_backward(dy, x, w, bias_sizes=(16,), stride=(1, 1),
                                            padding=(1, 1), dilation=(1, 1), chip="atlas-a2")
    got = call()
    assert any(f is not None for f in forks)
    ref = in_run(monkeypatch, call)
    assert got.cycles == ref.cycles
    for name, value in ref.outputs.items():
        if value is not None:
            assert got.outputs[name].tobytes() == value.tobytes(), name


def test_a_launch_reading_what_it_writes_stays_in_the_run(forks):
    n, per = 4, 256
    x0 = np.arange(n * per, dtype=np.float16)
    gm = GlobalMemory()
    x, ws, z = (gm.tensor(k, np.float16, n * per, x0 if k == "x" else None)
                for k in ("x", "ws", "z"))
    r = launch(RotateKernel, chip="atlas-a2", block_dim=n, gm=gm,
               args=dict(x=x, ws=ws, z=z, per_core=per), outputs={"z": (z, (n * per,))})
    assert forks == [None]
    assert np.array_equal(r.outputs["z"], np.roll(x0, -per))


def rows(*ranges):
    return np.array(ranges, np.int64).reshape(-1, 3)


def test_gm_check_refuses_overlaps():
    assert beside._overlap(rows((0, 10, 0)), rows((9, 20, 1)))
    assert not beside._overlap(rows((0, 10, 0)), rows((10, 20, 1)))
    assert beside._shared(rows((0, 64, 0), (32, 96, 1)))
    assert not beside._shared(rows((0, 64, 0), (32, 96, 0)))
    assert not beside._shared(rows((0, 64, 0), (64, 96, 1)))
    # interleaved blocks of two cores: extents overlap, bytes do not
    assert not beside._shared(rows((0, 32, 0), (64, 96, 0), (32, 64, 1), (96, 128, 1)))
    assert beside._shared(rows((0, 32, 0), (64, 96, 0), (32, 65, 1)))


def test_a_failed_numerics_pass_runs_the_launch_again(forks, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(beside, "run_functional", broken)
    r, x0 = run_copy(block_dim=4, tiles=8)
    assert forks and forks[0] is not None
    assert np.array_equal(r.outputs["z"], x0)


def test_no_process_is_left_behind_a_race(forks):
    with pytest.raises(HazardError):
        run_copy(kernel=MissingDequeWait, tiles=4)
    assert forks and forks[0] is not None
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.mark.parametrize("racy", [False, True])
def test_detector_off_outputs_as_with_numerics_in_the_run(forks, monkeypatch, racy):
    """With sanitize=False a race-free launch still goes beside (the child checks quietly);
    a racy one runs again with numerics in the run, whose outputs follow its timing."""
    kernel = MissingDequeWait if racy else CopyKernel
    got, _ = run_copy(kernel=kernel, tiles=8, sanitize=False)
    assert forks and forks[0] is not None
    ref, _ = in_run(monkeypatch, lambda: run_copy(kernel=kernel, tiles=8, sanitize=False))
    assert got.outputs["z"].tobytes() == ref.outputs["z"].tobytes()
    assert got.cycles == ref.cycles


def test_a_host_that_cannot_fork_keeps_the_work(forks, monkeypatch):
    def no_memory():
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(beside.os, "fork", no_memory)
    fds = len(os.listdir("/proc/self/fd"))
    r, x0 = run_copy(block_dim=4, tiles=8)
    assert forks == [None]
    assert np.array_equal(r.outputs["z"], x0)
    assert len(os.listdir("/proc/self/fd")) == fds


class RoundTrip(Kernel):
    """Each core copies its slice of x to a GM workspace and reads it back into z: GM both
    written and read in one launch of independent cores (the child refuses it). A long stint
    of the V pipe holds the write back, so an unsynced read-back comes first in time."""

    def init(self, x, ws, z, per_core, synced=True):
        i = get_block_idx()
        self.x, self.ws, self.z = x[i * per_core], ws[i * per_core], z[i * per_core]
        self.n, self.synced = per_core, synced
        self.que = TQue(TPosition.VECIN, 2, consumer=Pipe.MTE3)   # no slot reuse to wait on
        self.pipe.init_buffer(self.que, 2, per_core * x.dtype.itemsize)
        self.calc = TBuf(TPosition.VECCALC, name="stint")
        self.pipe.init_buffer(self.calc, per_core * x.dtype.itemsize)

    def process(self):
        t = self.que.alloc_tensor(self.x.dtype)
        data_copy(t, self.x, self.n)
        self.que.enque(t)
        t = self.que.deque()
        set_flag(HardEvent.MTE2_V)             # the stint starts once x is in
        wait_flag(HardEvent.MTE2_V)
        for _ in range(100):
            vec.duplicate(self.calc.get(self.x.dtype), 0.0, self.n)
        set_flag(HardEvent.V_MTE3)
        wait_flag(HardEvent.V_MTE3)
        data_copy(self.ws, t, self.n)
        self.que.free_tensor(t)
        if self.synced:
            set_flag(HardEvent.MTE3_MTE2)
            wait_flag(HardEvent.MTE3_MTE2)
        t = self.que.alloc_tensor(self.x.dtype)
        data_copy(t, self.ws, self.n)
        self.que.enque(t)
        t = self.que.deque()
        data_copy(self.z, t, self.n)
        self.que.free_tensor(t)


@pytest.mark.parametrize("synced", [True, False])
def test_gm_read_back_found_beside_runs_the_launch_again(forks, monkeypatch, synced):
    """GM written and read back in one launch: the child refuses it, and the launch runs
    again with numerics in the run. Unsynced, the read-back races on GM (which the race
    detector does not follow): the timed run reads the workspace before it is written,
    program order after, so only the refusal gives the timed run's outputs."""
    n, per = 4, 512

    def run():
        x0 = (np.arange(n * per) % 251 + 1).astype(np.float16)
        gm = GlobalMemory()
        x, ws, z = (gm.tensor(k, np.float16, n * per, x0 if k == "x" else None)
                    for k in ("x", "ws", "z"))
        r = launch(RoundTrip, chip="atlas-a2", block_dim=n, gm=gm,
                   args=dict(x=x, ws=ws, z=z, per_core=per, synced=synced),
                   outputs={"z": (z, (n * per,))})
        return r, x0

    (got, x0), (ref, _) = run(), in_run(monkeypatch, run)
    assert forks and forks[0] is not None and forks[0].checks_gm
    assert got.outputs["z"].tobytes() == ref.outputs["z"].tobytes()
    assert got.cycles == ref.cycles
    assert np.array_equal(got.outputs["z"], x0) == synced   # unsynced: read before written
