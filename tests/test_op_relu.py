"""aclnnRelu: results against the golden and PyTorch, argument rules (the template's tiling,
modes and timing are in test_elementwise_template.py)."""

import numpy as np
import pytest
import torch
from elementwise_check import CASES, normal

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError
from op_check import check_op


def torch_relu(x):
    return {"out": torch.relu(x)}


def check(x, chip="atlas-a2", mode="timed", **options):
    return check_op(ops.relu, golden.relu, torch_relu, (x,), chip=chip, mode=mode, rtol=0.0,
                    atol=0.0, **options)


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_golden_and_torch(chip, dtype, mode):
    r = check(normal((3, 5001), dtype), chip=chip, mode=mode)
    assert [k["name"] for k in r.stats["kernels"]] == ["Relu"]


@pytest.mark.parametrize("chip,dtype", CASES)
def test_odd_shapes_and_specials(chip, dtype):
    x = normal((7, 3, 11), dtype, seed=1)
    x.reshape(-1)[:2] = [0.0, -0.0]
    check(x, chip=chip)
    check(normal((1,), dtype), chip=chip)
    check(np.asarray(normal((), dtype)), chip=chip)
    inf = np.array([np.inf, -np.inf, -0.0, 3.0], np.float32).astype(x.dtype)
    out = ops.relu(inf, chip=chip).outputs["out"].astype(np.float32)
    assert out.tolist() == [np.inf, 0.0, 0.0, 3.0] and not np.signbit(out[2])


def test_doc_example():
    """The document's example: a 4 x 2 fp32 tensor."""
    x = np.array([[0, 1], [2, 3], [4, -5], [6, -7]], np.float32)
    r = check(x)
    assert r.outputs["out"].tolist() == [[0, 1], [2, 3], [4, 0], [6, 0]]


def test_non_contiguous_input_is_copied_first(chip_name):
    x = normal((64, 90), "float16", seed=2).T
    r = check(x, chip=chip_name)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(self)", "Relu"]


@pytest.mark.parametrize("shape", [(0,), (3, 0, 2)])
def test_empty(chip_name, shape):
    r = ops.relu(np.zeros(shape, np.float16), chip=chip_name)
    assert r.outputs["out"].shape == shape and r.cycles == 0


# --- argument rules --------------------------------------------------------------------------

def raises(code, match, *args, chip="atlas-a2"):
    with pytest.raises(ParamError, match=match) as info:
        ops.relu(*args, chip=chip)
    assert info.value.code == code


def test_missing_self_is_161001():
    raises(161001, "self is None", None)


@pytest.mark.parametrize("chip,dtype,match", [
    ("atlas-training", bfloat16, "allowed: float16, float32"),
    ("atlas-a2", np.float64, "allowed: bfloat16, float16, float32"),
    ("atlas-a2", np.int32, "int8, int32, int64, uint8 are not modelled"),
])
def test_unsupported_dtype_is_161002(chip, dtype, match):
    raises(161002, match, np.ones(4, dtype), chip=chip)


def test_inference_product_is_161002():
    raises(161002, "not supported on atlas-inference", np.ones(4, np.float16),
           chip="atlas-inference")


def test_more_than_8_dims_is_161002():
    raises(161002, "9 dimensions", np.ones((1,) * 9, np.float16))


def test_not_an_array():
    raises(161002, "not an array|does not know", object())
