"""aclnnAdd (equal shapes): Add, Axpy or Mul then Add by alpha and dtype, against the golden
and PyTorch; argument rules."""

import numpy as np
import pytest
import torch
from elementwise_check import CASES, normal, rtol_of

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError
from op_check import check_op


def torch_add(a, b, alpha=1):
    return {"out": torch.add(a, b, alpha=alpha)}


def check(a, b, alpha=1, chip="atlas-a2", mode="timed", **options):
    """Within the dtype's rounding of the result and, for alpha != 1, of alpha * other (which
    Axpy and Mul round before adding): the bound scales with |self| + |alpha * other|."""
    rtol = rtol_of(a)
    scale = np.abs(a.astype(np.float64)) + np.abs(alpha * b.astype(np.float64))
    atol = None if alpha == 1 else 2 * rtol * float(scale.max())
    return check_op(ops.add, golden.add, torch_add, (a, b), params={"alpha": alpha},
                    chip=chip, mode=mode, rtol=rtol, atol=atol, **options)


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_golden_and_torch(chip, dtype, mode):
    a, b = normal((3, 5001), dtype, seed=1), normal((3, 5001), dtype, seed=2)
    r = check(a, b, chip=chip, mode=mode)
    assert [k["name"] for k in r.stats["kernels"]] == ["Add"]


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("alpha", [0.3, -2, 1e-3])
def test_alpha_runs_axpy_or_mul_then_add(chip, dtype, alpha):
    a, b = normal((7, 333), dtype, seed=3), normal((7, 333), dtype, seed=4)
    r = check(a, b, alpha, chip=chip)
    want = ["Mul", "Add"] if dtype == "bfloat16" else ["Axpy"]
    assert [k["name"] for k in r.stats["kernels"]] == want
    assert r.workspace_bytes == (a.nbytes if dtype == "bfloat16" else 0)


def test_doc_example():
    """The document's shape of example: self + 1.2 * other, fp32."""
    a = np.arange(8, dtype=np.float32).reshape(4, 2)
    b = np.ones((4, 2), np.float32)
    r = check(a, b, 1.2)
    np.testing.assert_allclose(r.outputs["out"], a + 1.2, rtol=1e-6)


def test_odd_shapes(chip_name):
    for shape in [(1,), (17,), (2, 3, 5, 7), ()]:
        a, b = np.asarray(normal(shape, "float16", 5)), np.asarray(normal(shape, "float16", 6))
        check(a, b, chip=chip_name)


def test_on_the_inference_series():
    a, b = normal((999,), "float32", 7), normal((999,), "float32", 8)
    check(a, b, 0.5, chip="atlas-inference")


def test_non_contiguous_inputs(chip_name):
    a, b = normal((30, 70), "float16", 9), normal((70, 30), "float16", 10)
    r = check(a.T, b, chip=chip_name)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(self)", "Add"]


def test_empty():
    r = ops.add(np.zeros((2, 0), np.float32), np.zeros((2, 0), np.float32))
    assert r.outputs["out"].shape == (2, 0) and r.cycles == 0


# --- argument rules --------------------------------------------------------------------------

def raises(code, match, *args, chip="atlas-a2", **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.add(*args, chip=chip, **kwargs)
    assert info.value.code == code


ONE = np.ones(4, np.float16)


@pytest.mark.parametrize("args", [(None, ONE), (ONE, None), (ONE, ONE, None)])
def test_missing_is_161001(args):
    raises(161001, "is None", *args)


@pytest.mark.parametrize("chip,dtype,match", [
    ("atlas-training", bfloat16, "allowed: float16, float32"),
    ("atlas-a2", np.float64, "double, bool, complex64, complex128 are not modelled"),
    ("atlas-a2", np.int32, "not supported on atlas-a2"),
])
def test_unsupported_dtype_is_161002(chip, dtype, match):
    a = np.ones(4, dtype)
    raises(161002, match, a, a, chip=chip)


def test_mixed_dtypes_are_not_modelled_161002():
    raises(161002, "Cast kernels, which npusim does not model", ONE, np.ones(4, np.float32))


def test_shapes_that_do_not_broadcast_are_161002():
    raises(161002, "must broadcast", np.ones((2, 3), np.float16), np.ones((4,), np.float16))


def test_broadcast_is_not_modelled():
    raises(161002, "broadcasting is not modelled", np.ones((2, 3), np.float16),
           np.ones((3,), np.float16))


def test_more_than_8_dims_is_161002():
    a = np.ones((1,) * 9, np.float16)
    raises(161002, "at most 8", a, a)


@pytest.mark.parametrize("alpha", ["2", None.__class__, 1j])
def test_alpha_not_a_real_number_is_161002(alpha):
    raises(161002, "alpha = .*a real number", ONE, ONE, alpha)
