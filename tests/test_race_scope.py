"""The race detector follows one core of each on-chip program (npusim/engine/race_scope.py): cores
that differ only in GM offsets share a verdict, and a core whose program differs is followed."""

import numpy as np
import pytest
from test_micro_vector import NoReuseWaitForZ

import npusim.engine.timed as engine_module
import npusim.micro.vector as mv
from npusim import ops
from npusim.dsl import get_block_idx
from npusim.errors import HazardError
from npusim.micro.vector import run_vector


@pytest.fixture
def followed(monkeypatch):
    """The labels of the cores each launch's race detector was given."""
    seen: list = []
    real = engine_module.Sanitizer

    def spy(cores, **options):
        seen.append([core.label for core in cores])
        return real(cores, **options)

    monkeypatch.setattr(engine_module, "Sanitizer", spy)
    return seen


def test_cores_running_one_program_are_followed_once(followed):
    run_vector("add", tiles=4, block_dim=8)
    assert followed == [["aiv0"]]


class RaceOnBlockFive(NoReuseWaitForZ):
    """Block 5 alone reuses a z buffer without waiting for MTE3: its program differs."""

    def process(self):
        if get_block_idx() == 5:
            return super().process()
        return super(NoReuseWaitForZ, self).process()


def test_a_race_on_one_core_of_many_is_found(monkeypatch, followed):
    monkeypatch.setattr(mv, "VectorKernel", RaceOnBlockFive)
    with pytest.raises(HazardError, match=r"aiv5.UB.*data_copy on aiv5 PIPE-MTE3 reads"):
        run_vector("add", tiles=4, block_dim=8)
    assert followed == [["aiv0", "aiv5"]]


def test_a_race_on_every_core_is_reported_on_the_first(monkeypatch):
    monkeypatch.setattr(mv, "VectorKernel", NoReuseWaitForZ)
    with pytest.raises(HazardError, match=r"aiv0.UB"):
        run_vector("add", tiles=4, block_dim=8)


def test_cores_with_cross_core_flags_are_all_followed(followed):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5, 8, 8)).astype(np.float16)
    w = rng.standard_normal((7, 5, 3, 3)).astype(np.float16)
    dy = rng.standard_normal((4, 7, 8, 8)).astype(np.float16)
    r = ops.convolution_backward(dy, x, w, bias_sizes=[7], stride=[1, 1], padding=[1, 1],
                                 dilation=[1, 1], output_padding=[0, 0],
                                 output_mask=(False, True, False), chip="atlas-a2",
                                 tiling={"dw_k_parts": 4, "deterministic": True})
    mixed = [k for k in r.stats["kernels"] if k["task_type"].startswith("MIX")]
    assert mixed, "the deterministic gradWeight on atlas-a2 runs a mixed AIC/AIV kernel"
    labels = next(lb for lb in followed if any(c.startswith("aic") for c in lb))
    aic = [c for c in labels if c.startswith("aic")]
    assert len(labels) == 3 * len(aic)      # every AIC and both its AIVs
