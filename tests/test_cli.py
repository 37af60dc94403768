"""The npusim command, through a subprocess as a user runs it."""

import subprocess
import sys

import pytest


def npusim(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "npusim.cli", *args], capture_output=True,
                          text=True, timeout=timeout)


def test_chips_lists_every_model():
    out = npusim("chips")
    assert out.returncode == 0
    for name in ("atlas-a2", "atlas-training", "atlas-a2-910b4"):
        assert name in out.stdout
    assert "24+48" in out.stdout


def test_demo_runs_both_chips_and_checks_results():
    out = npusim("demo")
    assert out.returncode == 0, out.stderr
    assert "== atlas-training" in out.stdout and "== atlas-a2" in out.stdout
    assert "1.60 TB/s of 1.60 TB/s HBM" in out.stdout
    assert "Traceback" not in out.stderr


def test_bench_quick_reports_speed():
    out = npusim("bench", "--quick")
    assert out.returncode == 0, out.stderr
    assert "instr/s" in out.stdout and "vector add fp16" in out.stdout


@pytest.mark.parametrize("args", [["frobnicate"], ["bench", "--fast"]])
def test_bad_usage_is_one_line_not_a_traceback(args):
    out = npusim(*args)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert "error" in out.stderr
