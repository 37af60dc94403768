"""aclnnMuls (what torch_npu runs per tensor for SGD's momentum on the Atlas training series):
Mul in the dtype, Muls through fp32 for bf16, against the golden and PyTorch; argument rules."""

import numpy as np
import pytest
import torch
from elementwise_check import CASES, normal, rtol_of

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError
from op_check import check_op


def torch_muls(x, other):
    return {"out": torch.mul(x, other)}


def check(x, other, chip="atlas-a2", mode="timed", **options):
    """The scalar rounded to the dtype (fp16, fp32), then the product: two roundings."""
    return check_op(ops.muls, golden.muls, torch_muls, (x,), params={"other": other}, chip=chip,
                    mode=mode, rtol=2 * rtol_of(x), **options)


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_golden_and_torch(chip, dtype, mode):
    r = check(normal((3, 5001), dtype, seed=1), 0.9, chip=chip, mode=mode)
    assert [k["name"] for k in r.stats["kernels"]] == ["Muls" if dtype == "bfloat16" else "Mul"]


def test_odd_shapes_and_the_inference_series(chip_name):
    for shape in [(1,), (17,), (512, 512, 3, 3), ()]:
        check(np.asarray(normal(shape, "float16", 5)), -1.3, chip=chip_name)
    check(normal((999,), "float32", 7), 1e-4, chip="atlas-inference")


def test_non_contiguous_input(chip_name):
    r = check(normal((30, 70), "float32", 9).T, 0.5, chip=chip_name)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(self)", "Mul"]


def raises(code, match, *args, chip="atlas-a2", **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.muls(*args, chip=chip, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("args", [(None, 1.0), (np.ones(4, np.float16), None)])
def test_missing_is_161001(args):
    raises(161001, "is None", *args)


@pytest.mark.parametrize("chip,dtype,match", [
    ("atlas-training", bfloat16, "allowed: float16, float32"),
    ("atlas-a2", np.int32, "not supported on atlas-a2"),
])
def test_unsupported_dtype_is_161002(chip, dtype, match):
    raises(161002, match, np.ones(4, dtype), 2.0, chip=chip)


@pytest.mark.parametrize("other", [True, "2", np.ones(2)])
def test_bad_scalar_is_161002(other):
    raises(161002, "a real number", np.ones(4, np.float32), other)


def test_more_than_8_dims_is_161002():
    raises(161002, "at most 8", np.ones((1,) * 9, np.float16), 2.0)
