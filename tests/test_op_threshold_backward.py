"""aclnnThresholdBackward: results against the golden and PyTorch's threshold_backward,
ReluGrad or ThresholdGradV2D by threshold, argument rules."""

import numpy as np
import pytest
import torch
from elementwise_check import CASES, normal

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import ParamError
from op_check import check_op


def torch_threshold_backward(dy, x, threshold=0.0):
    return {"gradInput": torch.ops.aten.threshold_backward(dy, x, threshold)}


def check(dy, x, threshold=0.0, chip="atlas-a2", mode="timed", **options):
    return check_op(ops.threshold_backward, golden.threshold_backward, torch_threshold_backward,
                    (dy, x), params={"threshold": threshold}, chip=chip, mode=mode, rtol=0.0,
                    atol=0.0, **options)


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("threshold,kernel", [(0.0, "ReluGrad"), (0.5, "ThresholdGradV2D"),
                                              (-1.25, "ThresholdGradV2D")])
def test_matches_golden_and_torch(chip, dtype, threshold, kernel):
    dy, x = normal((3, 5001), dtype, seed=1), normal((3, 5001), dtype, seed=2, scale=2.0)
    r = check(dy, x, threshold, chip=chip)
    assert [k["name"] for k in r.stats["kernels"]] == [kernel]


@pytest.mark.parametrize("chip,dtype", CASES)
def test_functional_mode_and_odd_shape(chip, dtype):
    dy, x = normal((5, 7, 13), dtype, seed=3), normal((5, 7, 13), dtype, seed=4)
    x.reshape(-1)[:3] = [0.0, -0.0, 0.5]        # at the threshold: gradient 0
    check(dy, x, chip=chip, mode="functional")
    check(dy, x, 0.5, chip=chip)


def test_relu_gradient_is_zero_at_zero():
    """torch's ReLU gives gradient 0 at x = 0; so does the kernel (self > 0, strictly)."""
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    r = ops.threshold_backward(np.ones(3, np.float32), x)
    assert r.outputs["gradInput"].tolist() == [0.0, 0.0, 1.0]


def test_on_the_inference_series():
    dy, x = normal((1000,), "float16", seed=5), normal((1000,), "float16", seed=6)
    check(dy, x, chip="atlas-inference")


def test_non_contiguous_inputs(chip_name):
    dy, x = normal((40, 50), "float32", seed=7), normal((50, 40), "float32", seed=8)
    r = check(dy.T, x, chip=chip_name)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(gradOutput)", "ReluGrad"]


def test_empty():
    r = ops.threshold_backward(np.zeros((0, 3), np.float16), np.zeros((0, 3), np.float16))
    assert r.outputs["gradInput"].shape == (0, 3) and r.cycles == 0


# --- argument rules --------------------------------------------------------------------------

def raises(code, match, *args, chip="atlas-a2", **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.threshold_backward(*args, chip=chip, **kwargs)
    assert info.value.code == code


ONE = np.ones(4, np.float16)


@pytest.mark.parametrize("args", [(None, ONE), (ONE, None), (ONE, ONE, None)])
def test_missing_is_161001(args):
    raises(161001, "is None", *args)


@pytest.mark.parametrize("chip,dtype", [("atlas-training", bfloat16), ("atlas-a2", np.float64),
                                        ("atlas-a2", np.int8), ("atlas-inference", bfloat16)])
def test_unsupported_dtype_is_161002(chip, dtype):
    a = np.ones(4, dtype)
    raises(161002, "dtype .* is not supported on .*allowed", a, a, chip=chip)


def test_mixed_dtypes_is_161002():
    raises(161002, "dtypes must be equal", ONE, np.ones(4, np.float32))


def test_shapes_that_do_not_broadcast_are_161002():
    raises(161002, "must broadcast", np.ones((2, 3), np.float16), np.ones((3, 2), np.float16))


def test_broadcast_is_not_modelled():
    raises(161002, "broadcasting is not modelled", np.ones((2, 3), np.float16),
           np.ones((1, 3), np.float16))


def test_more_than_8_dims_is_161002():
    a = np.ones((1,) * 9, np.float32)
    raises(161002, "at most 8", a, a)


@pytest.mark.parametrize("threshold", ["0.5", [1.0], True])
def test_threshold_not_a_number_is_161002(threshold):
    raises(161002, "threshold = .*a real number", ONE, ONE, threshold)
