"""The race detector fed in program order (npusim/engine/race_order.py) gives the timed run's
verdict, and a launch whose race check ran beside its timing run still raises the timed run's
error."""

import numpy as np
import pytest
from test_micro_vector import NoReuseWaitForZ

import npusim.engine.beside as beside
import npusim.engine.launch as launch_module
import npusim.micro.vector as mv
from kernels import (
    CopyKernel,
    HandOffKernel,
    MissingDequeWait,
    RotateKernel,
    WaitWithoutSet,
    run_copy,
)
from npusim.engine import race_order
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import DeadlockError, HazardError
from npusim.micro.vector import run_vector


@pytest.fixture
def recorded(monkeypatch):
    """The specs of every launch, once recorded."""
    seen: list = []
    real = launch_module.record

    def spy(kernel_cls, chip, specs, args, eager, fast=False):
        real(kernel_cls, chip, specs, args, eager, fast)
        seen.append(specs)

    monkeypatch.setattr(launch_module, "record", spy)
    return seen


@pytest.fixture
def vector_kernel(monkeypatch):
    """Set the class run_vector launches."""
    return lambda cls: monkeypatch.setattr(mv, "VectorKernel", cls)


def in_run(monkeypatch, fn):
    with monkeypatch.context() as m:
        m.setenv("NPUSIM_BESIDE", "0")
        return fn()


def test_race_free_kernels_pass(recorded):
    run_copy(kernel=CopyKernel, tiles=4)
    run_vector("mul", tiles=4, block_dim=3)
    assert [race_order.check(specs) for specs in recorded] == ["ok", "ok"]


def test_removed_waits_are_races(recorded, vector_kernel):
    with pytest.raises(HazardError):
        run_copy(kernel=MissingDequeWait, tiles=4)
    vector_kernel(NoReuseWaitForZ)
    with pytest.raises(HazardError):
        run_vector("add", tiles=4)
    assert [race_order.check(specs) for specs in recorded] == ["race", "race"]


def test_cross_core_order_is_left_to_the_timed_run(recorded):
    n, per = 4, 256
    run_copy(kernel=CopyKernel, tiles=2)
    gm = GlobalMemory()
    x, ws, z = (gm.tensor(k, np.float16, n * per, np.ones(n * per, np.float16))
                for k in ("x", "ws", "z"))
    launch(RotateKernel, chip="atlas-a2", block_dim=n, gm=gm,
           args=dict(x=x, ws=ws, z=z, per_core=per), outputs={})
    gm = GlobalMemory()
    x, ws, z = (gm.tensor(k, np.float16, 64, np.ones(64, np.float16)) for k in ("x", "ws", "z"))
    launch(HandOffKernel, chip="atlas-a2", block_dim=1, gm=gm,
           args=dict(x=x, ws=ws, z=z, n=64), outputs={})
    assert [race_order.decidable(specs) for specs in recorded] == [True, False, False]
    assert race_order.check(recorded[2]) == "unordered"


@pytest.fixture
def forked(monkeypatch):
    """Every launch may fork (no size threshold)."""
    monkeypatch.setattr(beside, "MIN_INSTRUCTIONS", 0)
    monkeypatch.setenv("NPUSIM_BESIDE", "1")


@pytest.mark.parametrize("numerics", [True, False])
def test_a_race_checked_beside_raises_the_timed_runs_error(forked, monkeypatch, vector_kernel,
                                                           numerics):
    vector_kernel(NoReuseWaitForZ)
    with pytest.raises(HazardError) as beside_error:
        run_vector("add", tiles=4, numerics=numerics)
    with pytest.raises(HazardError) as run_error:
        in_run(monkeypatch, lambda: run_vector("add", tiles=4, numerics=numerics))
    assert str(beside_error.value) == str(run_error.value)


def test_a_wait_before_its_set_is_the_timed_runs_business(forked, monkeypatch, recorded):
    with pytest.raises(DeadlockError) as beside_error:
        run_copy(kernel=WaitWithoutSet, tiles=2, numerics=False)
    assert race_order.check(recorded[0]) == "unordered"
    with pytest.raises(DeadlockError) as run_error:
        in_run(monkeypatch, lambda: run_copy(kernel=WaitWithoutSet, tiles=2, numerics=False))
    assert str(beside_error.value) == str(run_error.value)


def test_race_free_outputs_and_cycles_with_the_check_beside(forked, monkeypatch):
    got = run_vector("add", tiles=8, block_dim=4, numerics=False)
    ref = in_run(monkeypatch, lambda: run_vector("add", tiles=8, block_dim=4, numerics=False))
    assert got.cycles == ref.cycles
    assert got.stats["instruction_counts"] == ref.stats["instruction_counts"]
