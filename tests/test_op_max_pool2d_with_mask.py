"""aclnnMaxPool2dWithMask and aclnnMaxPool2dWithMaskBackward (the training series): bit for bit
against the goldens in both modes, against torch (CPU: max_pool2d with return_indices, the
indices turned into the mask's layout; its backward), odd shapes, argument rules, tiling,
sanitizer.

Tolerances (set before the first run): the forward is exact against torch on fp16 input (a
maximum; the first maximum wins in both): out equal, and the mask's bits on the real channels
are torch's indices. The backward rounds fp32 sums of at most kH x kW fp16 gradients once to
fp16: within one fp16 ulp of torch's float64 gradient (rtol 2**-10, absolute floor 2**-24).
"""

import numpy as np
import pytest
import torch
from elementwise_check import normal

from npusim import golden, ops
from npusim.errors import ParamError, TilingError
from npusim.golden.pooling_mask import mask_of_indices
from op_check import assert_bit_equal

WINDOWS = [  # shape, kernel, stride, padding, ceil_mode
    ((2, 20, 9, 11), 3, 2, 1, False), ((2, 3, 9, 11), 3, 2, 1, True),
    ((3, 13, 13), 3, 1, 1, False), ((2, 16, 8, 8), (2, 3), (3, 2), (1, 0), True),
    ((1, 2, 5, 5), 4, 2, 2, False), ((1, 17, 9, 9), 2, 3, 0, False)]


def as_list(v) -> list:
    return list(v) if isinstance(v, tuple) else [v]


def window(kernel, stride, padding, ceil):
    return dict(kernel_size=as_list(kernel), stride=as_list(stride), padding=as_list(padding),
                ceil_mode=ceil)


def pair(v) -> list:
    return v * (2 // len(v))


def torch_pool(x, w):
    t = torch.from_numpy(np.asarray(x).astype(np.float64))
    return torch.nn.functional.max_pool2d(t, pair(w["kernel_size"]), pair(w["stride"]),
                                          pair(w["padding"]), ceil_mode=w["ceil_mode"],
                                          return_indices=True)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape,kernel,stride,padding,ceil", WINDOWS)
def test_forward_matches_golden_and_torch(dtype, shape, kernel, stride, padding, ceil):
    x = normal(shape, "float16", seed=len(shape)).astype(dtype)
    w = window(kernel, stride, padding, ceil)
    r = ops.max_pool2d_with_mask(x, **w)
    want = golden.max_pool2d_with_mask(x, **w)
    for name in ("out", "indices"):
        assert_bit_equal(r.outputs[name], want[name], name)
    y, ind = torch_pool(x, w)
    np.testing.assert_array_equal(r.outputs["out"].astype(np.float64), y.numpy())
    oracle = mask_of_indices(ind.numpy(), x.shape[:-2], w["kernel_size"], *y.shape[-2:],
                             x.shape[-1], w["stride"], w["padding"])
    got, ref = (m.reshape(-1).view(np.uint16) for m in (r.outputs["indices"], oracle))
    np.testing.assert_array_equal(got & ref, ref)     # torch's argmax, on the real lanes
    lanes = int(np.prod(x.shape[:-3])) * -(-x.shape[-3] // 16) * 16 * y.shape[-2] * y.shape[-1]
    assert int(np.unpackbits(got.view(np.uint8)).sum()) == lanes   # one tap a lane, no more
    assert r.outputs["indices"].dtype == np.int8
    names = [k["name"] for k in r.stats["kernels"]]
    assert "MaxPoolWithArgmaxV1" in names and names[-1].startswith(
        "Cast" if dtype == "float32" else "TransData")


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("shape,kernel,stride,padding,ceil", WINDOWS)
def test_backward_matches_golden_and_torch(dtype, shape, kernel, stride, padding, ceil):
    x = normal(shape, "float16", seed=1).astype(dtype)
    w = window(kernel, stride, padding, ceil)
    fwd = golden.max_pool2d_with_mask(x, **w)
    dy = normal(fwd["out"].shape, "float16", seed=2).astype(dtype)
    r = ops.max_pool2d_with_mask_backward(dy, x, fwd["indices"], **w)
    assert_bit_equal(r.outputs["gradInput"],
                     golden.max_pool2d_with_mask_backward(dy, x, fwd["indices"], **w),
                     "gradInput")
    xt = torch.from_numpy(x.astype(np.float64)).requires_grad_()
    y = torch.nn.functional.max_pool2d(xt, pair(w["kernel_size"]), pair(w["stride"]),
                                       pair(w["padding"]), ceil_mode=w["ceil_mode"])
    y.backward(torch.from_numpy(dy.astype(np.float64)))
    np.testing.assert_allclose(r.outputs["gradInput"].astype(np.float64), xt.grad.numpy(),
                               rtol=2.0 ** -10, atol=2.0 ** -24)
    assert "MaxPoolGradWithArgmaxV1" in [k["name"] for k in r.stats["kernels"]]


def test_slabs_modes_jitter_and_the_sanitizer_agree():
    x = normal((2, 18, 15, 10), "float16", seed=3)
    w = window(3, 2, 1, False)
    base = ops.max_pool2d_with_mask(x, **w, tiling={"rows": 2}, sanitize=True)
    for other in (ops.max_pool2d_with_mask(x, **w, mode="functional", tiling={"rows": 3}),
                  ops.max_pool2d_with_mask(x, **w, jitter=(5, 50.0), tiling={"rows": 1,
                                                                            "buffer_num": 1})):
        for name in ("out", "indices"):
            assert_bit_equal(other.outputs[name], base.outputs[name], name)
    mask = base.outputs["indices"]
    dy = normal(base.outputs["out"].shape, "float16", seed=4)
    want = golden.max_pool2d_with_mask_backward(dy, x, mask, **w)
    for kw in ({"tiling": {"rows": 1}}, {"tiling": {"rows": 3}, "mode": "functional"},
               {"tiling": {"rows": 2, "buffer_num": 1}, "jitter": (7, 50.0)}):
        r = ops.max_pool2d_with_mask_backward(dy, x, mask, **w, **kw)
        assert_bit_equal(r.outputs["gradInput"], want)


def test_tiling_overrides():
    x = normal((2, 3, 20, 9), "float16", seed=5)
    w = window(3, 2, 1, False)
    assert ops.max_pool2d_with_mask(x, **w, tiling={"rows": 3}).tiling.rows == 3
    for bad in ({"rows": 0}, {"buffer_num": 3}, {"pitch": 8}, {"rows": 10 ** 6}):
        with pytest.raises(TilingError):
            ops.max_pool2d_with_mask(x, **w, tiling=bad)


X = normal((2, 3, 8, 8), "float16")
M = golden.max_pool2d_with_mask(X, [2], [2], [0])["indices"]
DY = np.zeros((2, 3, 4, 4), np.float16)
K = dict(kernel_size=[2], stride=[2], padding=[0])
TRAIN = dict(chip="atlas-training")


@pytest.mark.parametrize("call,code,match", [
    (lambda: ops.max_pool2d_with_mask(None, [2], [2], [0]), 161001, "self is None"),
    (lambda: ops.max_pool2d_with_mask(X, None, [2], [0]), 161001, "kernelSize is None"),
    (lambda: ops.max_pool2d_with_mask(X, [2], [2], [0], chip="atlas-a2"), 161002,
     "does not model"),
    (lambda: ops.max_pool2d_with_mask(X[0, 0], [2], [2], [0]), 161002, "dims"),
    (lambda: ops.max_pool2d_with_mask(X.astype(np.int32), [2], [2], [0]), 161002,
     "dtype int32"),
    (lambda: ops.max_pool2d_with_mask(X, [2, 2, 2], [2], [0]), 161002, "kernelSize"),
    (lambda: ops.max_pool2d_with_mask(X, [0], [2], [0]), 161002, "greater than 0"),
    (lambda: ops.max_pool2d_with_mask(X, [2], [2, 2, 1], [0]), 161002, "stride"),
    (lambda: ops.max_pool2d_with_mask(X, [2], [2], [2]), 161002, "padding"),
    (lambda: ops.max_pool2d_with_mask(X, [2], [2], [0], [2]), 161002, "dilation"),
    (lambda: ops.max_pool2d_with_mask(X, [2], [2], [0], ceil_mode=1), 161002, "ceilMode"),
    (lambda: ops.max_pool2d_with_mask(X[:, :, :1], [3], [1], [0]), 161002, "axis of 0"),
    (lambda: ops.max_pool2d_with_mask(X[:, :0], [2], [2], [0]), 161002, "empty"),
    (lambda: ops.max_pool2d_with_mask_backward(DY, X, None, **K), 161001, "indices"),
    (lambda: ops.max_pool2d_with_mask_backward(DY, X, M, **K, chip="atlas-a2"), 161002,
     "does not model"),
    (lambda: ops.max_pool2d_with_mask_backward(DY.astype(np.float32), X, M, **K), 161002,
     "differs"),
    (lambda: ops.max_pool2d_with_mask_backward(DY, X, M.view(np.uint8), **K), 161002, "INT8"),
    (lambda: ops.max_pool2d_with_mask_backward(DY[:, :, :3], X, M, **K), 161002,
     "gradOutput has shape"),
    (lambda: ops.max_pool2d_with_mask_backward(DY, X, M[:, :, :, :32], **K), 161002,
     "indices has shape"),
])
def test_argument_rules(call, code, match):
    with pytest.raises(ParamError, match=match) as err:
        call()
    assert err.value.code == code
