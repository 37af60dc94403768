"""aclnnMaxPool2dWithIndices and aclnnMaxPool2dWithIndicesBackward (A2): bit for bit against the
goldens in both modes, against torch (CPU: max_pool2d_with_indices and its backward), odd
shapes, argument rules, tiling, sanitizer.

Tolerances (set before the first run): the forward is exact (a maximum and its position; torch's
first maximum wins in both): out and indices equal torch's. The backward adds at most kH x kW
fp32 gradients per position: rtol 1e-6, absolute floor 1e-6 of the largest reference value.
"""

import numpy as np
import pytest
import torch
from elementwise_check import normal

from npusim import golden, ops
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, assert_close

WINDOWS = [  # shape, kernel, stride, padding, ceil_mode
    ((2, 3, 9, 11), 3, 2, 1, False), ((2, 3, 9, 11), 3, 2, 1, True),
    ((3, 13, 13), 3, 1, 1, False), ((2, 3, 8, 8), (2, 3), (3, 2), (1, 0), True),
    ((1, 2, 5, 5), 4, 2, 2, False), ((2, 2, 7, 6), 2, 2, 0, False),
    ((2, 4, 16, 16), 3, 2, 1, False)]


def as_list(v) -> list:
    return list(v) if isinstance(v, tuple) else [v]


def window(kernel, stride, padding, ceil):
    return dict(kernel_size=as_list(kernel), stride=as_list(stride), padding=as_list(padding),
                ceil_mode=ceil)


def torch_pool(x, w):
    k, s, p = (v * (2 // len(v)) for v in (w["kernel_size"], w["stride"], w["padding"]))
    t = torch.from_numpy(np.asarray(x).astype(np.float64))
    return torch.ops.aten.max_pool2d_with_indices(t, k, s, p, [1, 1], w["ceil_mode"]), (k, s, p)


def run_forward(x, w, mode="timed", **options):
    r = ops.max_pool2d_with_indices(x, **w, mode=mode, **options)
    want = golden.max_pool2d_with_indices(x, **w)
    for name in ("out", "indices"):
        assert_bit_equal(r.outputs[name], want[name], name)
    return r


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16"])
@pytest.mark.parametrize("shape,kernel,stride,padding,ceil", WINDOWS)
def test_forward_matches_golden_and_torch(dtype, shape, kernel, stride, padding, ceil):
    x = normal(shape, dtype, seed=len(shape))
    w = window(kernel, stride, padding, ceil)
    r = run_forward(x, w)
    (y, ind), _ = torch_pool(x, w)
    np.testing.assert_array_equal(r.outputs["out"].astype(np.float64), y.numpy())
    np.testing.assert_array_equal(r.outputs["indices"], ind.numpy())
    assert r.outputs["indices"].dtype == np.int32
    assert [k["name"] for k in r.stats["kernels"]] == ["MaxPool3DWithArgmaxV2"]


@pytest.mark.parametrize("shape,kernel,stride,padding,ceil", WINDOWS)
def test_backward_matches_golden_and_torch(shape, kernel, stride, padding, ceil):
    x = normal(shape, "float32", seed=1)
    w = window(kernel, stride, padding, ceil)
    (y, ind), (k, s, p) = torch_pool(x, w)
    dy = normal(tuple(y.shape), "float32", seed=2)
    indices = ind.numpy().astype(np.int32)
    r = ops.max_pool2d_with_indices_backward(dy, x, indices, **w)
    assert_bit_equal(r.outputs["gradInput"],
                     golden.max_pool2d_with_indices_backward(dy, x, indices, **w), "gradInput")
    ref = torch.ops.aten.max_pool2d_with_indices_backward(
        torch.from_numpy(dy.astype(np.float64)), torch.from_numpy(x.astype(np.float64)), k, s,
        p, [1, 1], w["ceil_mode"], ind).numpy()
    assert_close(r.outputs["gradInput"], ref, 1e-6, 1e-6 * float(np.abs(ref).max()),
                 "gradInput")
    assert [k_["name"] for k_ in r.stats["kernels"]] == ["MaxPool3DGradWithArgmax"]


def test_both_modes_jitter_and_the_sanitizer_agree():
    x = normal((3, 5, 12, 10), "float16", seed=3)
    w = window(3, 2, 1, False)
    timed = run_forward(x, w, tiling={"rows": 2}, sanitize=True)
    for other in (run_forward(x, w, mode="functional", tiling={"rows": 2}),
                  run_forward(x, w, jitter=(5, 50.0), tiling={"rows": 2})):
        for name in ("out", "indices"):
            assert_bit_equal(other.outputs[name], timed.outputs[name], name)
    xf = x.astype(np.float32)
    ind = golden.max_pool2d_with_indices(xf, **w)["indices"]
    dy = normal(ind.shape, "float32", seed=4)
    bt = ops.max_pool2d_with_indices_backward(dy, xf, ind, **w, tiling={"rows": 4},
                                              sanitize=True)
    bf = ops.max_pool2d_with_indices_backward(dy, xf, ind, **w, tiling={"rows": 4},
                                              mode="functional")
    assert_bit_equal(bf.outputs["gradInput"], bt.outputs["gradInput"])
    assert_bit_equal(bt.outputs["gradInput"],
                     golden.max_pool2d_with_indices_backward(dy, xf, ind, **w))


def test_tiling_overrides():
    x = normal((2, 3, 20, 9), "float32", seed=5)
    w = window(3, 2, 1, False)
    assert run_forward(x, w, tiling={"rows": 3, "buffer_num": 1}).tiling.rows == 3
    for bad in ({"rows": 0}, {"buffer_num": 3}, {"pitch": 8}, {"rows": 10 ** 6}):
        with pytest.raises(TilingError):
            ops.max_pool2d_with_indices(x, **w, tiling=bad)
    ind = golden.max_pool2d_with_indices(x, **w)["indices"]
    with pytest.raises(TilingError, match="multiple of 2"):
        ops.max_pool2d_with_indices_backward(np.zeros(ind.shape, np.float32), x, ind, **w,
                                             tiling={"rows": 3})


X = normal((2, 3, 8, 8), "float32")
IND = np.zeros((2, 3, 4, 4), np.int32)
DY = np.zeros((2, 3, 4, 4), np.float32)
K = dict(kernel_size=[2], stride=[2], padding=[0])


@pytest.mark.parametrize("call,code,match", [
    (lambda: ops.max_pool2d_with_indices(None, [2], [2], [0]), 161001, "self is None"),
    (lambda: ops.max_pool2d_with_indices(X, None, [2], [0]), 161001, "kernelSize is None"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [2], [0], chip="atlas-training"), 161002,
     "not supported"),
    (lambda: ops.max_pool2d_with_indices(X[0, 0], [2], [2], [0]), 161002, "dims"),
    (lambda: ops.max_pool2d_with_indices(X.astype(np.int32), [2], [2], [0]), 161002,
     "dtype int32"),
    (lambda: ops.max_pool2d_with_indices(X, [2, 2, 2], [2], [0]), 161002, "kernelSize"),
    (lambda: ops.max_pool2d_with_indices(X, [0], [2], [0]), 161002, "greater than 0"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [2, 2, 1], [0]), 161002, "stride"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [-1], [0]), 161002, "greater than 0"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [2], [2]), 161002, "padding"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [2], [-1]), 161002, "padding"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [2], [0], [2]), 161002, "dilation"),
    (lambda: ops.max_pool2d_with_indices(X, [2], [2], [0], ceil_mode=1), 161002, "ceilMode"),
    (lambda: ops.max_pool2d_with_indices(X[:, :, :1], [3], [1], [0]), 161002, "axis of 0"),
    (lambda: ops.max_pool2d_with_indices(X[:, :0], [2], [2], [0]), 161002, "empty"),
    (lambda: ops.max_pool2d_with_indices_backward(DY, X, None, **K), 161001, "indices"),
    (lambda: ops.max_pool2d_with_indices_backward(DY, X, IND, **K, chip="atlas-training"),
     161002, "not supported"),
    (lambda: ops.max_pool2d_with_indices_backward(DY.astype(np.float16), X.astype(np.float16),
                                                  IND, **K), 161002, "float16"),
    (lambda: ops.max_pool2d_with_indices_backward(DY, X, IND.astype(np.int64), **K), 161002,
     "INT32"),
    (lambda: ops.max_pool2d_with_indices_backward(DY[:, :, :3], X, IND, **K), 161002,
     "gradOutput has shape"),
    (lambda: ops.max_pool2d_with_indices_backward(DY, X, IND[:1], **K), 161002,
     "indices has shape"),
])
def test_argument_rules(call, code, match):
    with pytest.raises(ParamError, match=match) as err:
        call()
    assert err.value.code == code
