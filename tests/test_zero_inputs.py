"""A timing-only run of a case marked ``values_free_timing`` makes its inputs as zeros
(``npusim.cases.common.zero_inputs``): its cycles, every kernel's, must be those of the same
run on the seeded random inputs."""

import numpy as np
import pytest

from npusim.cases import CASES
from npusim.cases.common import random_array, zero_inputs
from npusim.cases.run import run_case
from npusim.errors import NpusimError

FREE = sorted(name for name, case in CASES.items() if case.values_free_timing)
SHAPES = {"convolution_backward": (2, 32, 14, 14), "convolution": (2, 32, 14, 14)}


def _cycles(result) -> tuple:
    return result.cycles, tuple(k["cycles"] for k in result.stats.get("kernels", ()))


def test_the_marked_cases_are_the_expected_ones():
    assert {"convolution_backward", "convolution", "silu_backward"} <= set(FREE)


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
@pytest.mark.parametrize("name", FREE)
def test_zero_inputs_give_the_random_inputs_cycles(name, chip):
    case = CASES[name]
    if not case.available():
        pytest.skip(f"{name} is not in npusim.ops")
    shape = SHAPES.get(name, case.quick_shape)
    params = case.parse_params({})
    try:
        zeros = run_case(case, chip, shape, case.dtypes[0], params, numerics=False,
                         sanitize=False, trace=False, check=False)
    except NpusimError as exc:     # the operator does not run on this chip
        pytest.skip(str(exc))
    assert all(not np.any(a) for a in zeros.args if isinstance(a, np.ndarray))
    rng = np.random.default_rng(0)
    args, kwargs = case.make(shape, case.dtypes[0], params, rng)
    assert any(np.any(a) for a in args if isinstance(a, np.ndarray))
    seeded = case.function()(*args, **kwargs, chip=chip, numerics=False, sanitize=False,
                             trace=False)
    assert _cycles(zeros.result) == _cycles(seeded)


def test_zero_inputs_draw_nothing():
    rng = np.random.default_rng(0)
    with zero_inputs():
        z = random_array(rng, (3, 4), "float16")
    assert z.dtype == np.float16 and not z.any()
    assert rng.standard_normal() == np.random.default_rng(0).standard_normal()


def test_zero_contents_are_not_copied_into_gm_and_read_back_right():
    """GM starts zeroed and never gives an address twice: a content of zeros is left out of
    the copy (its pages stay untouched), the others are copied; both read back as given."""
    from npusim.engine.memory import GlobalMemory

    gm = GlobalMemory()
    big = 1 << 20
    z = gm.tensor("z", np.float16, big, np.zeros(big, np.float16))
    tail = np.zeros(big, np.float16)
    tail[-1] = 3.0                         # zeros up front, one value at the very end
    x = gm.tensor("x", np.float16, big, tail)
    gm.load_inputs()
    assert not gm.read_back(z, (big,)).any()
    assert np.array_equal(gm.read_back(x, (big,)), tail)


def test_a_timing_only_runs_outputs_are_read_only_views():
    """numerics=False computes no outputs: they are GM as it stands, not copies."""
    case = CASES["silu_backward"]
    run = run_case(case, "atlas-a2", case.quick_shape, case.dtypes[0], case.parse_params({}),
                   numerics=False, sanitize=False, trace=False, check=False)
    outs = [a for a in run.result.outputs.values() if a is not None]
    assert outs and all(not a.flags.writeable and not a.flags.owndata for a in outs)
    with pytest.raises(ValueError):
        outs[0][...] = 1
