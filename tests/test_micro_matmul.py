"""The cube micro-kernel C = A.B: exact against the documented order, cycles pinned."""

import numpy as np
import pytest

from npusim import load_chip
from npusim.micro.matmul import run_matmul
from trace_check import check_trace


def golden(a, b, k0=16):
    """isa/cube.py's order: per k-step of k0, products summed exactly, rounded once to fp32,
    then added to the fp32 accumulator in increasing k."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for lo in range(0, a.shape[1], k0):
        step = a[:, lo:lo + k0].astype(np.float64) @ b[lo:lo + k0].astype(np.float64)
        acc = acc + step.astype(np.float32)
    return acc


@pytest.mark.parametrize("mode", ["timed", "functional"])
@pytest.mark.parametrize("shape", [(128, 128, 256), (32, 64, 48), (16, 16, 16)])
def test_exact_on_both_chips(chip_name, mode, shape):
    m, n, k = shape
    base_k = 128 if k % 128 == 0 else k
    r = run_matmul(chip=chip_name, m=m, n=n, k=k, base_k=base_k, mode=mode)
    a, b, c = r.outputs["a"], r.outputs["b"], r.outputs["c"]
    assert c.dtype == np.float32
    assert np.array_equal(c.view(np.uint32), golden(a, b).view(np.uint32))
    truth = a.astype(np.float64) @ b.astype(np.float64)
    assert np.max(np.abs(c - truth)) <= 1e-5 * np.max(np.abs(truth))


def test_each_mmad_costs_the_pto_formula(chip_name):
    chip = load_chip(chip_name)
    r = run_matmul(chip=chip_name, m=128, n=128, k=256, base_k=128)
    fractals = (128 // 16) * (128 // 16) * (128 // 16)
    mmads = [rec for rec in r.tracer.records if rec[2].name == "mmad"]
    assert len(mmads) == 2
    previous_end = -1.0
    for _core, _pipe, _inst, _issue, start, end in mmads:
        idle = start > previous_end + 1e-9
        assert end - start == pytest.approx(fractals * chip.b16_cycles_per_fractal
                                            + (chip.head_cycles if idle else 0))
        previous_end = end


@pytest.mark.parametrize("chip_name, cycles", [("atlas-a2", 3952), ("atlas-training", 11800)])
def test_total_cycles_are_pinned(chip_name, cycles):
    """Regression pin: change it deliberately when the model changes."""
    assert run_matmul(chip=chip_name, m=128, n=128, k=256, base_k=128).cycles == cycles


def test_chips_differ_in_their_paths():
    a2 = run_matmul(chip="atlas-a2").stats["instruction_counts"]
    tr = run_matmul(chip="atlas-training").stats["instruction_counts"]
    assert a2["fixpipe"] == 1 and "data_copy_l0c_to_ub" not in a2
    assert tr["data_copy_l0c_to_ub"] == 1 and "fixpipe" not in tr


def test_numerics_off_same_cycles(chip_name):
    on = run_matmul(chip=chip_name, m=64, n=64, k=128, base_k=64)
    off = run_matmul(chip=chip_name, m=64, n=64, k=128, base_k=64, numerics=False)
    assert on.cycles == off.cycles and not off.outputs["c"].any()


def test_jitter_keeps_outputs(chip_name):
    base = run_matmul(chip=chip_name, m=64, n=64, k=128, base_k=64)
    jit = run_matmul(chip=chip_name, m=64, n=64, k=128, base_k=64, jitter=(3, 40.0))
    assert np.array_equal(base.outputs["c"], jit.outputs["c"]) and base.cycles != jit.cycles


def test_trace_schema(chip_name, tmp_path):
    check_trace(run_matmul(chip=chip_name, m=64, n=64, k=128, base_k=64), tmp_path / "mm.json")
