"""The calibration (npusim/studies/validate/calibrate.py): models/ holds what each number's
instruction-level or smallest-kernel source gives, and no number is fitted to operator rows."""

import re

import pytest

from npusim import load_chip
from npusim.chip import chips, models_dir
from npusim.engine.kernel_costs import START_KEYS
from npusim.studies.validate import calibrate, vector_costs


@pytest.mark.parametrize("name", calibrate.A2_MODELS)
def test_models_hold_what_the_sources_give(name):
    chip = load_chip(name)
    for key, (value, source) in calibrate.derive(name).items():
        assert chip.values[key] == value, (key, source)
    assert vector_costs.derive(chip.cost) == chip.cost
    assert chip.rate_tables, "the A2 models take their data paths from measured tables"


def test_the_command_prints_every_source_and_exits_0(capsys):
    assert calibrate.main(["--chip", "atlas-a2"]) == 0
    out = capsys.readouterr().out
    for text in ("GM_TO_UB_910b3", "cann-bench", "MatMul x 1, 64x64x64", "conv_2d case 12",
                 "load_data_perf", "vector.cost", "holds them"):
        assert text in out


def test_a_number_that_differs_from_its_source_fails_the_command(monkeypatch, capsys):
    monkeypatch.setattr(calibrate, "MATMUL_US", calibrate.MATMUL_US + 0.5)
    assert calibrate.main(["--chip", "atlas-a2"]) == 1
    assert "kernel_start_cycles" in capsys.readouterr().out


def test_no_kernel_start_up_above_4_us_on_a2():
    chip = load_chip("atlas-a2")
    per_block = chip.kernel_start_per_block_cycles * chip.aiv_count
    for key in START_KEYS.values():
        assert (chip.values[key] + per_block) / chip.clock_hz <= 4e-6, key


def test_no_number_is_fitted_to_operator_rows():
    """``grep -i fitted models/*.toml`` names nothing: every number is documented, measured
    (an instruction-level table or a smallest kernel) or assumed."""
    for name in chips():
        text = (models_dir() / f"{name}.toml").read_text()
        assert not re.search("fitted", text, re.I), name


def test_training_and_inference_chips_take_the_a2_times_marked_assumed():
    a2 = load_chip("atlas-a2")
    for name in ("atlas-training", "atlas-inference", "atlas-inference-310p1"):
        chip = load_chip(name)
        for key in ("kernel_start_cycles", "tbe_kernel_start_cycles"):
            assert chip.sources[f"launch.{key}"].startswith("assumed: the Atlas A2 figure")
            us = a2.values[key] / a2.clock_hz
            assert chip.values[key] == round(us * chip.clock_hz)
        assert chip.tik_kernel_start_cycles == chip.tbe_kernel_start_cycles
