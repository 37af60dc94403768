"""npusim.aclnn for batch norm and the max pool with indices: two-phase, with their statuses;
the forward writes the running statistics back as aclnn does."""

import numpy as np
from test_aclnn import create_acl_tensor, stream  # noqa: F401 - the fixture
from test_aclnn_resnet import read, run

import npusim.aclnn as acl
from npusim import ops
from npusim.aclnn.runtime import current_chip


def test_batch_norm_and_backward(stream):  # noqa: F811
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2)
    ones, zeros = np.ones(3, np.float32), np.zeros(3, np.float32)
    _, tx = create_acl_tensor(x, [2, 3, 2, 2], acl.ACL_FLOAT)
    tw, tb = (create_acl_tensor(v, [3], acl.ACL_FLOAT)[1] for v in (ones, zeros))
    rm_addr, trm = create_acl_tensor(zeros, [3], acl.ACL_FLOAT)
    rv_addr, trv = create_acl_tensor(ones, [3], acl.ACL_FLOAT)
    y_addr, ty = create_acl_tensor(np.zeros(24), [2, 3, 2, 2], acl.ACL_FLOAT)
    m_addr, tm = create_acl_tensor(zeros, [3], acl.ACL_FLOAT)
    i_addr, ti = create_acl_tensor(zeros, [3], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnBatchNormGetWorkspaceSize(
        tx, tw, tb, trm, trv, True, 0.1, 1e-5, ty, tm, ti), stream)
    assert size > 0
    assert acl.aclnnBatchNorm(ws, size, executor, stream) == acl.ACL_SUCCESS
    want = ops.batch_norm(x, ones, zeros, zeros, ones, chip=current_chip())
    assert read(y_addr, (2, 3, 2, 2), np.float32).tolist() == want.outputs["output"].tolist()
    assert read(rm_addr, (3,), np.float32).tolist() == want.outputs["runningMean"].tolist()
    assert read(rv_addr, (3,), np.float32).tolist() == want.outputs["runningVar"].tolist()
    mean, inv = read(m_addr, (3,), np.float32), read(i_addr, (3,), np.float32)
    assert mean.tolist() == [7.5, 11.5, 15.5]
    _, tm2 = create_acl_tensor(mean, [3], acl.ACL_FLOAT)
    _, ti2 = create_acl_tensor(inv, [3], acl.ACL_FLOAT)
    gw_addr, tgw = create_acl_tensor(zeros, [3], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnBatchNormBackwardGetWorkspaceSize(
        tx, tx, tw, None, None, tm2, ti2, True, 1e-5, [False, True, False], None, tgw, None),
        stream)
    assert acl.aclnnBatchNormBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    grad = ops.batch_norm_backward(x, x, ones, None, None, mean, inv,
                                   output_mask=(False, True, False), chip=current_chip())
    assert read(gw_addr, (3,), np.float32).tolist() == grad.outputs["gradWeight"].tolist()
    ret, _, _ = acl.aclnnBatchNormGetWorkspaceSize(tx, tw, tb, trm, trv, False, 0.1, 1e-5, ty,
                                                   tm, ti)
    assert ret == 161002 and "training mode" in acl.aclGetRecentErrMsg()
    ret, _, _ = acl.aclnnBatchNormGetWorkspaceSize(tx, tw, tb, trm, trv, True, 0.1, 1e-5, ty,
                                                   None, ti)
    assert ret == 161001


def test_max_pool2d_with_indices_and_backward(stream):  # noqa: F811
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    _, tx = create_acl_tensor(x, [1, 1, 4, 4], acl.ACL_FLOAT)
    o_addr, to = create_acl_tensor(np.zeros(4), [1, 1, 2, 2], acl.ACL_FLOAT)
    i_addr, ti = create_acl_tensor(np.zeros(4, np.int64), [1, 1, 2, 2], acl.ACL_INT64)
    if current_chip() == "atlas-training":    # CANN runs aclnnMaxPool2dWithMask there
        ret, _, _ = acl.aclnnMaxPool2dWithIndicesGetWorkspaceSize(tx, [3], [2], [1], [1],
                                                                  False, to, ti)
        assert ret == 161002 and "not supported" in acl.aclGetRecentErrMsg()
        return
    executor, ws, size = run(acl.aclnnMaxPool2dWithIndicesGetWorkspaceSize(
        tx, [3], [2], [1], [1], False, to, ti), stream)
    assert acl.aclnnMaxPool2dWithIndices(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(o_addr, (2, 2), np.float32).tolist() == [[5, 7], [13, 15]]
    assert read(i_addr, (2, 2), np.int64).tolist() == [[5, 7], [13, 15]]
    _, tind = create_acl_tensor(np.array([5, 7, 13, 15], np.int32), [1, 1, 2, 2],
                                acl.ACL_INT32)
    _, tdy = create_acl_tensor(np.ones(4), [1, 1, 2, 2], acl.ACL_FLOAT)
    g_addr, tg = create_acl_tensor(np.zeros(16), [1, 1, 4, 4], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnMaxPool2dWithIndicesBackwardGetWorkspaceSize(
        tdy, tx, tind, [3], [2], [1], [1], False, tg), stream)
    assert acl.aclnnMaxPool2dWithIndicesBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    g = read(g_addr, (16,), np.float32)
    assert g.sum() == 4 and g[[5, 7, 13, 15]].tolist() == [1, 1, 1, 1]
    ret, _, _ = acl.aclnnMaxPool2dWithIndicesGetWorkspaceSize(tx, [3], [2], [1], [2], False,
                                                              to, ti)
    assert ret == 161002 and "dilation" in acl.aclGetRecentErrMsg()
