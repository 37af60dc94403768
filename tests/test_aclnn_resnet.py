"""npusim.aclnn for the ResNet step's operators: aclnnRelu, aclnnThresholdBackward, aclnnAdd
and aclnnMatmul, two-phase, with their statuses."""

import numpy as np
import pytest
from test_aclnn import create_acl_tensor, stream  # noqa: F401 - the fixture

import npusim.aclnn as acl
from npusim import ops


def run(status_ws_exec, stream):  # noqa: F811
    ret, size, executor = status_ws_exec
    assert ret == acl.ACL_SUCCESS, acl.aclGetRecentErrMsg()
    workspace = None
    if size:
        _, workspace = acl.aclrtMalloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    return executor, workspace, size


def read(addr, shape, dtype):
    out = np.zeros(int(np.prod(shape)), dtype)
    acl.aclrtMemcpy(out, out.nbytes, addr, out.nbytes, acl.ACL_MEMCPY_DEVICE_TO_HOST)
    return out.reshape(shape)


def test_relu_and_its_gradient(stream):  # noqa: F811
    x = [[0, 1], [2, 3], [4, -5], [6, -7]]
    _, self_ = create_acl_tensor(x, [4, 2], acl.ACL_FLOAT)
    out_addr, out = create_acl_tensor(np.zeros(8), [4, 2], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnReluGetWorkspaceSize(self_, out), stream)
    assert acl.aclnnRelu(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(out_addr, (4, 2), np.float32).tolist() == [[0, 1], [2, 3], [4, 0], [6, 0]]
    _, grad = create_acl_tensor(np.ones(8), [4, 2], acl.ACL_FLOAT)
    gi_addr, gi = create_acl_tensor(np.zeros(8), [4, 2], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnThresholdBackwardGetWorkspaceSize(grad, self_, 1.5, gi),
                             stream)
    assert acl.aclnnThresholdBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(gi_addr, (4, 2), np.float32).tolist() == [[0, 0], [1, 1], [1, 0], [1, 0]]
    assert stream.results[-1].stats["kernels"][-1]["name"] == "ThresholdGradV2D"


def test_add_with_alpha(stream):  # noqa: F811
    _, a = create_acl_tensor(np.arange(6), [2, 3], acl.ACL_FLOAT16)
    _, b = create_acl_tensor(np.ones(6), [2, 3], acl.ACL_FLOAT16)
    out_addr, out = create_acl_tensor(np.zeros(6), [2, 3], acl.ACL_FLOAT16)
    executor, ws, size = run(acl.aclnnAddGetWorkspaceSize(a, b, 1.25, out), stream)
    assert acl.aclnnAdd(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(out_addr, (2, 3), np.float16).tolist() == [[1.25, 2.25, 3.25],
                                                           [4.25, 5.25, 6.25]]


@pytest.mark.parametrize("call,code", [
    (lambda t: acl.aclnnReluGetWorkspaceSize(None, t), 161001),
    (lambda t: acl.aclnnThresholdBackwardGetWorkspaceSize(t, t, None, t), 161001),
    (lambda t: acl.aclnnAddGetWorkspaceSize(t, t, "x", t), 161002),
    (lambda t: acl.aclnnMatmulGetWorkspaceSize(t, None, t, 1), 161001),
])
def test_bad_arguments_are_statuses(stream, call, code):  # noqa: F811
    _, t = create_acl_tensor(np.zeros(4), [4], acl.ACL_FLOAT16)
    ret, size, executor = call(t)
    assert ret == code and executor is None and acl.aclGetRecentErrMsg()


def test_matmul_on_a2_and_training():
    acl.aclInit(None)
    try:
        for chip in ("atlas-a2", "atlas-training"):
            acl.aclrtSetDevice(0, chip=chip)
            _, s = acl.aclrtCreateStream()
            a = np.arange(12, dtype=np.float16).reshape(3, 4)
            b = np.ones((4, 2), np.float16)
            _, ta = create_acl_tensor(a, [3, 4], acl.ACL_FLOAT16)
            _, tb = create_acl_tensor(b, [4, 2], acl.ACL_FLOAT16)
            out_addr, to = create_acl_tensor(np.zeros(6), [3, 2], acl.ACL_FLOAT16)
            ret, size, executor = acl.aclnnMatmulGetWorkspaceSize(ta, tb, to, 1)
            # the training series: TransData to FRACTAL_NZ (16 x 16 each operand, 16 x 16 out)
            assert ret == acl.ACL_SUCCESS and size == (0 if chip == "atlas-a2" else 3 * 512)
            executor, ws, size = run((ret, size, executor), s)
            assert acl.aclnnMatmul(ws, size, executor, s) == acl.ACL_SUCCESS
            want = ops.matmul(a, b, chip=chip).outputs["out"]
            assert read(out_addr, (3, 2), np.float16).tolist() == want.tolist() == \
                (a.astype(np.float32) @ b.astype(np.float32)).tolist()
    finally:
        acl.aclrtResetDevice(0)
        acl.aclrtSetDevice(0)
        acl.aclFinalize()


def test_adaptive_avg_pool2d_and_backward(stream):  # noqa: F811
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    _, tx = create_acl_tensor(x, [2, 3, 2, 2], acl.ACL_FLOAT)
    out_addr, to = create_acl_tensor(np.zeros(6), [2, 3, 1, 1], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnAdaptiveAvgPool2dGetWorkspaceSize(tx, [1, 1], to),
                             stream)
    assert acl.aclnnAdaptiveAvgPool2d(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(out_addr, (2, 3), np.float32).tolist() == x.mean(axis=(2, 3)).tolist()
    _, tdy = create_acl_tensor(np.full(6, 4.0), [2, 3, 1, 1], acl.ACL_FLOAT)
    gi_addr, tgi = create_acl_tensor(np.zeros(24), [2, 3, 2, 2], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnAdaptiveAvgPool2dBackwardGetWorkspaceSize(tdy, tx, tgi),
                             stream)
    assert size == x.nbytes
    assert acl.aclnnAdaptiveAvgPool2dBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert (read(gi_addr, (2, 3, 2, 2), np.float32) == 1.0).all()
    ret, _, _ = acl.aclnnAdaptiveAvgPool2dGetWorkspaceSize(tx, [2, 2], to)
    assert ret == 161002 and "(1, 1) only" in acl.aclGetRecentErrMsg()
