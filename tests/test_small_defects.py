"""Small defects users met (issue 42, item 8): HardEvent members are an enum that still equals
the strings the DSL takes; the block_dim error's grammar; lesson 1 prints whole trace lines."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernels import run_copy
from npusim.dsl import HardEvent
from npusim.dsl.core import _pipes_of
from npusim.errors import TilingError

ROOT = Path(__file__).resolve().parents[1]


def test_hard_events_are_an_enum_equal_to_their_strings():
    assert isinstance(HardEvent.MTE2_V, HardEvent) and len(list(HardEvent)) > 10
    assert HardEvent.MTE2_V == "MTE2_V" and f"{HardEvent.V_MTE3}" == "V_MTE3"
    assert {"MTE2_V": 1}[HardEvent.MTE2_V] == 1
    assert _pipes_of(HardEvent.MTE3_V) == _pipes_of("MTE3_V") == ("MTE3", "V")


def test_block_dim_error_says_an_aiv_kernel():
    with pytest.raises(TilingError, match="an aiv kernel can use 1 to 48 cores"):
        run_copy(block_dim=49, tiles=1, tile=256, dtype=np.float16)


def test_lesson_one_prints_whole_trace_lines(tmp_path):
    script = tmp_path / "01_copy.py"          # a copy: its figure goes to tmp_path/figures
    shutil.copy(ROOT / "docs/lessons/01_copy.py", script)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    lines = out.stdout.splitlines()
    trace = lines[lines.index(next(x for x in lines if x.strip().startswith("issue"))):]
    assert len(trace) == 12
    assert all(line.rstrip().endswith(("issued", "id 0", "until " + line.split()[-1]))
               or line.strip().startswith("issue") for line in trace), trace


@pytest.mark.parametrize("name, shape", [("rms_norm_grad", (0, 4)), ("rms_norm_grad", (3, 0)),
                                         ("batch_norm_backward", (2, 4, 0, 0))])
def test_inputs_of_an_empty_shape_warn_nothing(name, shape):
    """A maker that takes saved statistics over an empty axis (found by the fuzzer: 'Mean of
    empty slice' on stderr) gives NaN values quietly; the run ends or says one NpusimError."""
    import warnings

    from npusim.cases import find_case
    from npusim.cases.run import run_case
    from npusim.errors import NpusimError

    case = find_case(name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            run = run_case(case, "atlas-a2", shape, case.dtypes[0], case.parse_params({}))
        except NpusimError as exc:
            assert "\n" not in str(exc)
        else:
            assert run.ok


def test_loss_of_no_class_is_one_clear_error():
    """cross_entropy_loss at N x 0 (fuzzer seed 20021) drew targets from an empty range inside
    numpy ('high <= 0'); it is one NpusimError, as its gradient's case says."""
    from npusim.cases import find_case
    from npusim.cases.run import run_case
    from npusim.errors import NpusimError

    case = find_case("cross_entropy_loss")
    with pytest.raises(NpusimError, match="at least 1"):
        run_case(case, "atlas-a2", (64, 0), "float32", case.parse_params({}))
