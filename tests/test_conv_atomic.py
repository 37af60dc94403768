"""gradWeight summed by GM atomic adds: its order follows simulated time, so it is checked within
the summation-order bound (and said to be atomic); the deterministic variant is bit-identical,
jitter or not."""

import numpy as np
import pytest

from npusim import golden, ops
from npusim.cases import CASES
from npusim.cases.run import check_outputs
from npusim.golden.atomic import AtomicSum

CONV = dict(bias_sizes=(16,), stride=(1, 1), padding=(1, 1), dilation=(1, 1))


def _inputs(n=13, dtype=np.float32):
    rng = np.random.default_rng(7)
    dy = rng.standard_normal((n, 16, 8, 8)).astype(dtype)
    x = rng.standard_normal((n, 16, 8, 8)).astype(dtype)
    w = rng.standard_normal((16, 16, 3, 3)).astype(dtype)
    return dy, x, w


def _run(tiling, jitter=None, chip="atlas-a2"):
    dy, x, w = _inputs()
    return ops.convolution_backward(dy, x, w, **CONV, tiling=tiling, jitter=jitter, chip=chip,
                                    trace=False), (dy, x, w)


def _checks(result, args):
    kwargs = dict(CONV, groups=1, transposed=False, output_padding=(0, 0),
                  output_mask=(True, True, True), cube_math_type=1)
    return {name: (ok, text) for name, ok, text in
            check_outputs(CASES["convolution_backward"], args, kwargs, result)}


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
def test_atomic_parts_are_within_their_bound_and_said_to_be_atomic(chip):
    r, args = _run({"dw_k_parts": 5}, chip=chip)
    ok, text = _checks(r, args)["gradWeight"]
    assert ok and "atomic: order follows timing" in text


def test_jitter_reorders_atomic_adds_within_the_bound():
    base, args = _run({"dw_k_parts": 5})
    outs = [_run({"dw_k_parts": 5}, jitter=(seed, 40))[0] for seed in (1, 2)]
    # the landing order follows timing: jitter does change the last bits here
    assert any(r.outputs["gradWeight"].tobytes() != base.outputs["gradWeight"].tobytes()
               for r in outs)
    for r in outs:
        ok, text = _checks(r, args)["gradWeight"]
        assert ok and "atomic" in text
        assert np.array_equal(r.outputs["gradInput"], base.outputs["gradInput"])


def test_deterministic_variant_is_bit_identical_under_jitter():
    tiling = {"dw_k_parts": 5, "deterministic": True}
    base, args = _run(tiling)
    ok, text = _checks(base, args)["gradWeight"]
    assert ok and text == "bit-identical to the golden"
    for seed in (1, 2):
        r, _ = _run(tiling, jitter=(seed, 40))
        assert r.outputs["gradWeight"].tobytes() == base.outputs["gradWeight"].tobytes()


def test_the_bound_still_catches_a_lost_part():
    dy, x, w = _inputs()
    want = golden.convolution_backward(dy, x, w, stride=(1, 1), padding=(1, 1),
                                       dilation=(1, 1), dw_k_parts=5, atomic=True)["gradWeight"]
    assert isinstance(want, AtomicSum)
    one_less = golden.convolution_backward(dy[:-1], x[:-1], w, stride=(1, 1), padding=(1, 1),
                                           dilation=(1, 1))["gradWeight"]
    assert not want.within(one_less).all()
    assert want.bound.max() < 1e-3 * np.abs(want.value).max()
