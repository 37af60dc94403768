"""No prediction above its bound: over every case of the command's registry, on every chip,
dtype and cube math type it takes, the simulated time is never below the roofline (achieved
<= 100% of it). The roofline divides by the cube peak at the dtype the cube computes in."""

import pytest

from npusim.cases import CASES
from npusim.cases.run import metrics, run_case
from npusim.errors import ParamError

CHIPS = ("atlas-a2", "atlas-training")


def _variants(case):
    """Parameter sets to walk: every cube_math_type for a case that has one."""
    names = {p.name for p in case.params}
    if "cube_math_type" in names:
        return [{"cube_math_type": str(c)} for c in range(4)]
    return [{}]


def _points():
    for case in CASES.values():
        if not case.available():
            continue
        for chip in CHIPS:
            for dtype in case.dtypes:
                for variant in _variants(case):
                    yield pytest.param(case, chip, dtype, variant,
                                       id=f"{case.name}-{chip}-{dtype}-{variant}")


def _ratio(case, chip, shape, dtype, variant):
    try:
        run = run_case(case, chip, shape, dtype, case.parse_params(variant), trace=False)
    except ParamError:
        pytest.skip("the operator does not take this combination on this chip")
    return metrics(run), run


@pytest.mark.parametrize(("case", "chip", "dtype", "variant"), list(_points()))
def test_achieved_never_above_roofline(case, chip, dtype, variant):
    m, run = _ratio(case, chip, case.quick_shape, dtype, variant)
    assert run.ok, run.checks
    assert m["roofline_ratio"] <= 1.0, (m["roofline_ratio"], m["bound"], m.get("cube_dtype"))


def test_fp32_with_fp16_cube_bounded_by_the_fp16_peak():
    """fp32 inputs with cube_math_type 2 run the cube in fp16 on atlas-a2: the bound uses the
    fp16 peak (it used the fp32 peak and printed 141% of it at this, the default, size)."""
    case = CASES["convolution_backward"]
    m, _ = _ratio(case, "atlas-a2", case.default_shape, "float32", {"cube_math_type": "2"})
    assert m["cube_dtype"] == "float16"
    assert m["roofline_ratio"] <= 1.0
