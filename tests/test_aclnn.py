"""npusim.aclnn: the two-phase interface, ported from the seeds' C examples, and its statuses."""

import numpy as np
import pytest

import npusim.aclnn as acl
from npusim.dtypes import bfloat16


def create_acl_tensor(host_data, shape, data_type):
    """The seed example's CreateAclTensor: malloc, copy host to device, create the tensor."""
    item = np.dtype(data_type if data_type != acl.ACL_BF16 else bfloat16).itemsize
    size = int(np.prod(shape)) * item
    ret, device_addr = acl.aclrtMalloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == acl.ACL_SUCCESS
    host = np.asarray(host_data, dtype=data_type if data_type != acl.ACL_BF16 else bfloat16)
    ret = acl.aclrtMemcpy(device_addr, size, host, size, acl.ACL_MEMCPY_HOST_TO_DEVICE)
    assert ret == acl.ACL_SUCCESS
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    tensor = acl.aclCreateTensor(shape, data_type, strides, 0, acl.ACL_FORMAT_ND, shape,
                                 device_addr)
    return device_addr, tensor


@pytest.fixture(params=["atlas-a2", "atlas-training"])
def stream(request):
    """Steps 1 of the example: aclInit, aclrtSetDevice, aclrtCreateStream."""
    assert acl.aclInit(None) == acl.ACL_SUCCESS
    assert acl.aclrtSetDevice(0, chip=request.param) == acl.ACL_SUCCESS
    ret, stream = acl.aclrtCreateStream()
    assert ret == acl.ACL_SUCCESS
    yield stream
    acl.aclrtDestroyStream(stream)
    acl.aclrtResetDevice(0)
    acl.aclrtSetDevice(0)
    acl.aclFinalize()


def test_silu_backward_seed_example(stream):
    """aclnnSiluBackward's call example, line by line."""
    grad_output_shape, self_shape, grad_input_shape = [2, 3], [2, 3], [2, 3]
    _, grad_out = create_acl_tensor([1, 1, 1, 1, 1, 1], grad_output_shape, acl.ACL_FLOAT)
    _, self_ = create_acl_tensor([1, 2, 3, 4, 5, 6], self_shape, acl.ACL_FLOAT)
    grad_input_addr, grad_input = create_acl_tensor([0, 0, 0, 0, 0, 0], grad_input_shape,
                                                    acl.ACL_FLOAT)
    ret, workspace_size, executor = acl.aclnnSiluBackwardGetWorkspaceSize(grad_out, self_,
                                                                          grad_input)
    assert ret == acl.ACL_SUCCESS
    workspace_addr = None
    if workspace_size > 0:
        ret, workspace_addr = acl.aclrtMalloc(workspace_size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    ret = acl.aclnnSiluBackward(workspace_addr, workspace_size, executor, stream)
    assert ret == acl.ACL_SUCCESS
    assert acl.aclrtSynchronizeStream(stream) == acl.ACL_SUCCESS
    size = int(np.prod(grad_input_shape))
    out_data = np.zeros(size, np.float32)
    ret = acl.aclrtMemcpy(out_data, out_data.nbytes, grad_input_addr, size * 4,
                          acl.ACL_MEMCPY_DEVICE_TO_HOST)
    assert ret == acl.ACL_SUCCESS
    x = np.arange(1, 7, dtype=np.float64)
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(out_data, sig * (1 + x * (1 - sig)), rtol=1e-6)
    assert stream.results[-1] is executor.result and executor.result.cycles > 0


def tensors(dtype=acl.ACL_FLOAT16, shapes=((4, 5),) * 3):
    return [create_acl_tensor(np.zeros(s), list(s), dtype)[1] for s in shapes]


@pytest.mark.parametrize("which", [0, 1, 2])
def test_null_tensor_is_161001(stream, which):
    args = tensors()
    args[which] = None
    ret, size, executor = acl.aclnnSiluBackwardGetWorkspaceSize(*args)
    assert (ret, size, executor) == (acl.ACLNN_ERR_PARAM_NULLPTR, 0, None)
    assert "is None" in acl.aclGetRecentErrMsg()


@pytest.mark.parametrize("dtypes", [(acl.ACL_INT32,) * 3, (acl.ACL_DOUBLE,) * 3,
                                    (acl.ACL_FLOAT16, acl.ACL_FLOAT, acl.ACL_FLOAT16),
                                    (acl.ACL_FLOAT16, acl.ACL_FLOAT16, acl.ACL_FLOAT)])
def test_bad_dtypes_are_161002(stream, dtypes):
    args = [create_acl_tensor(np.zeros(6), [2, 3], dt)[1] for dt in dtypes]
    assert acl.aclnnSiluBackwardGetWorkspaceSize(*args)[0] == acl.ACLNN_ERR_PARAM_INVALID
    assert "dtype" in acl.aclGetRecentErrMsg()


def test_bf16_is_a2_only():
    args = tensors(acl.ACL_BF16)
    acl.aclrtSetDevice(0, chip="atlas-training")
    try:
        assert acl.aclnnSiluBackwardGetWorkspaceSize(*args)[0] == acl.ACLNN_ERR_PARAM_INVALID
        assert "atlas-training" in acl.aclGetRecentErrMsg()
    finally:
        acl.aclrtSetDevice(0)
    assert acl.aclnnSiluBackwardGetWorkspaceSize(*args)[0] == acl.ACL_SUCCESS


@pytest.mark.parametrize("bad", [0, 2])
def test_shape_mismatch_is_161002(stream, bad):
    shapes = [(4, 5)] * 3
    shapes[bad] = (5, 4)
    ret = acl.aclnnSiluBackwardGetWorkspaceSize(*tensors(shapes=shapes))[0]
    assert ret == acl.ACLNN_ERR_PARAM_INVALID
    assert "shapes must be equal" in acl.aclGetRecentErrMsg()


def test_not_a_tensor_is_161002(stream):
    args = tensors()
    args[1] = np.zeros((4, 5), np.float16)
    assert acl.aclnnSiluBackwardGetWorkspaceSize(*args)[0] == acl.ACLNN_ERR_PARAM_INVALID


def test_executor_runs_once_and_must_match(stream):
    args = tensors()
    ret, size, executor = acl.aclnnSiluBackwardGetWorkspaceSize(*args)
    assert acl.aclnnSiluBackward(None, size, "not an executor", stream) == \
        acl.ACLNN_ERR_PARAM_INVALID
    assert acl.aclnnSiluBackward(None, size, executor, stream) == acl.ACL_SUCCESS
    assert acl.aclnnSiluBackward(None, size, executor, stream) == acl.ACLNN_ERR_PARAM_INVALID
    assert "already run" in acl.aclGetRecentErrMsg()


def test_unknown_device_chip_is_a_status():
    assert acl.aclrtSetDevice(0, chip="ascend-999") == acl.ACLNN_ERR_PARAM_INVALID
    assert "atlas-a2" in acl.aclGetRecentErrMsg()


def test_strided_tensors_in_and_out(stream):
    """A transposed input view and a strided output view: Contiguous in, view write out."""
    ret, dev = acl.aclrtMalloc(4 * 6 * 4)
    host = np.arange(24, dtype=np.float32) / 4 - 3
    acl.aclrtMemcpy(dev, dev.nbytes, host, host.nbytes, acl.ACL_MEMCPY_HOST_TO_DEVICE)
    x_t = acl.aclCreateTensor([6, 4], acl.ACL_FLOAT, [1, 6], 0, acl.ACL_FORMAT_ND, [24], dev)
    ones = create_acl_tensor(np.ones(24), [6, 4], acl.ACL_FLOAT)[1]
    _, out_dev = acl.aclrtMalloc(6 * 8 * 4)
    out = acl.aclCreateTensor([6, 4], acl.ACL_FLOAT, [8, 2], 0, acl.ACL_FORMAT_ND, [48], out_dev)
    ret, size, executor = acl.aclnnSiluBackwardGetWorkspaceSize(ones, x_t, out)
    assert ret == acl.ACL_SUCCESS
    assert acl.aclnnSiluBackward(None, size, executor, stream) == acl.ACL_SUCCESS
    x = host.reshape(4, 6).T.astype(np.float64)
    sig = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(out.array, sig * (1 + x * (1 - sig)), rtol=1e-5)
    assert np.all(out_dev.view(np.float32).reshape(6, 8)[:, 1::2] == 0)
    assert any(k["name"].startswith("Contiguous") for k in executor.result.stats["kernels"])


def test_create_tensor_past_its_memory_is_none():
    _, dev = acl.aclrtMalloc(16)
    assert acl.aclCreateTensor([5], acl.ACL_FLOAT, [1], 0, acl.ACL_FORMAT_ND, [5], dev) is None
    assert "reaches element 4" in acl.aclGetRecentErrMsg()
