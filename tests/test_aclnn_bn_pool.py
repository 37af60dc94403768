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


def test_max_pool2d_with_mask_and_backward(stream):  # noqa: F811
    """The training series' pool: the INT8 mask, then the gradient through it."""
    x = np.arange(16, dtype=np.float16).reshape(1, 1, 4, 4)
    _, tx = create_acl_tensor(x, [1, 1, 4, 4], acl.ACL_FLOAT16)
    o_addr, to = create_acl_tensor(np.zeros(4, np.float16), [1, 1, 2, 2], acl.ACL_FLOAT16)
    m_addr, tm = create_acl_tensor(np.zeros(9 * 64, np.int8), [1, 1, 9, 64], acl.ACL_INT8)
    if current_chip() != "atlas-training":    # npusim models the training series' path only
        ret, _, _ = acl.aclnnMaxPool2dWithMaskGetWorkspaceSize(tx, [3], [2], [1], [1], False,
                                                               to, tm)
        assert ret == 161002 and "does not model" in acl.aclGetRecentErrMsg()
        return
    executor, ws, size = run(acl.aclnnMaxPool2dWithMaskGetWorkspaceSize(
        tx, [3], [2], [1], [1], False, to, tm), stream)
    assert acl.aclnnMaxPool2dWithMask(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(o_addr, (2, 2), np.float16).tolist() == [[5, 7], [13, 15]]
    mask = read(m_addr, (9, 64), np.int8)
    words = np.ascontiguousarray(mask).view(np.uint16)    # per tap, per output position
    lane0 = words & 1          # channel 0; lanes 1-15 are the channels TransData adds
    assert lane0[8, :4].tolist() == [1, 1, 1, 1] and lane0[:8].sum() == 0   # tap (2, 2)
    _, tdy = create_acl_tensor(np.ones(4, np.float16), [1, 1, 2, 2], acl.ACL_FLOAT16)
    g_addr, tg = create_acl_tensor(np.zeros(16, np.float16), [1, 1, 4, 4], acl.ACL_FLOAT16)
    executor, ws, size = run(acl.aclnnMaxPool2dWithMaskBackwardGetWorkspaceSize(
        tdy, tx, tm, [3], [2], [1], [1], False, tg), stream)
    assert acl.aclnnMaxPool2dWithMaskBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    g = read(g_addr, (16,), np.float16)
    assert g.sum() == 4 and g[[5, 7, 13, 15]].tolist() == [1, 1, 1, 1]


def test_the_training_series_loss(stream):  # noqa: F811
    """aclnnLogSoftmax -> aclnnNLLLoss (mean) -> aclnnNLLLossBackward -> aclnnLogSoftmaxBackward,
    each against its npusim.ops call."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((4, 10)).astype(np.float32)
    t = np.array([1, 3, -100, 9], np.int64)
    _, tx = create_acl_tensor(x, [4, 10], acl.ACL_FLOAT)
    lp_addr, tlp = create_acl_tensor(np.zeros(40, np.float32), [4, 10], acl.ACL_FLOAT)
    if current_chip() != "atlas-training":    # npusim models the training series' path only
        ret, _, _ = acl.aclnnLogSoftmaxGetWorkspaceSize(tx, 1, tlp)
        assert ret == 161002 and "does not model" in acl.aclGetRecentErrMsg()
        return
    executor, ws, size = run(acl.aclnnLogSoftmaxGetWorkspaceSize(tx, 1, tlp), stream)
    assert acl.aclnnLogSoftmax(ws, size, executor, stream) == acl.ACL_SUCCESS
    lp = read(lp_addr, (4, 10), np.float32)
    assert lp.tolist() == ops.log_softmax(x, 1).outputs["out"].tolist()
    _, tt = create_acl_tensor(t, [4], acl.ACL_INT64)
    _, tw = create_acl_tensor(np.ones(10, np.float32), [10], acl.ACL_FLOAT)
    o_addr, to = create_acl_tensor(np.zeros(1, np.float32), [1], acl.ACL_FLOAT)
    w_addr, ttw = create_acl_tensor(np.zeros(1, np.float32), [1], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnNLLLossGetWorkspaceSize(tlp, tt, tw, 1, -100, to, ttw),
                             stream)
    assert acl.aclnnNLLLoss(ws, size, executor, stream) == acl.ACL_SUCCESS
    want = ops.nll_loss(lp, t, np.ones(10, np.float32), 1, -100).outputs
    assert read(o_addr, (1,), np.float32).tolist() == want["out"].tolist()
    assert read(w_addr, (1,), np.float32).tolist() == [3.0]
    _, tg = create_acl_tensor(np.ones(1, np.float32), [1], acl.ACL_FLOAT)
    d_addr, td = create_acl_tensor(np.zeros(40, np.float32), [4, 10], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnNLLLossBackwardGetWorkspaceSize(
        tg, tlp, tt, tw, 1, -100, ttw, td), stream)
    assert acl.aclnnNLLLossBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    d = read(d_addr, (4, 10), np.float32)
    assert d[0, 1] == d[1, 3] == d[3, 9] == np.float32(-1 / 3) and (d != 0).sum() == 3
    g_addr, tgi = create_acl_tensor(np.zeros(40, np.float32), [4, 10], acl.ACL_FLOAT)
    executor, ws, size = run(acl.aclnnLogSoftmaxBackwardGetWorkspaceSize(td, tlp, 1, tgi),
                             stream)
    assert acl.aclnnLogSoftmaxBackward(ws, size, executor, stream) == acl.ACL_SUCCESS
    assert read(g_addr, (4, 10), np.float32).tolist() == ops.log_softmax_backward(
        d, lp, 1).outputs["out"].tolist()
    ret, _, _ = acl.aclnnNLLLossGetWorkspaceSize(tlp, tt, None, 1, -100, to, ttw)
    assert ret == 161001
