"""The training series' loss, as torch's cross_entropy runs there: aclnnLogSoftmax,
aclnnNLLLoss, aclnnNLLLossBackward and aclnnLogSoftmaxBackward: bit for bit against the goldens
in both modes, against torch (CPU, float64: log_softmax, nll_loss and their backward, and the
chain against F.cross_entropy's gradient), odd shapes, argument rules, sanitizer.

Tolerances (set before the first run): fp32 results within 1e-5 relative, absolute floor 1e-6
(a row's exp, sum and ln, each rounded once in fp32); fp16 within 2**-10 relative (twice
fp16's unit roundoff: an fp32 result within 1e-6, rounded once to fp16), absolute floor 2**-14.
(The fp16 bound first written, 2e-3 absolute, was below half an fp16 ulp at |x| = 16, where
log-probabilities of 1000 classes lie; it was replaced by the rounding bound above.)
"""

import numpy as np
import pytest
import torch
from elementwise_check import normal

from npusim import golden, ops
from npusim.errors import ParamError
from op_check import assert_bit_equal, assert_close

SHAPES = [(32, 1000), (3, 7), (50, 129), (1, 2000)]
RED = {0: "none", 1: "mean", 2: "sum"}


def t64(a):
    return torch.from_numpy(np.asarray(a).astype(np.float64))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("shape", SHAPES)
def test_log_softmax_and_its_backward(shape, dtype):
    x, g = normal(shape, dtype, seed=1), normal(shape, dtype, seed=2)
    r = ops.log_softmax(x, 1)
    assert_bit_equal(r.outputs["out"], golden.log_softmax(x, 1)["out"], "out")
    tol = (1e-5, 1e-6) if dtype == "float32" else (2.0 ** -10, 2.0 ** -14)
    assert_close(r.outputs["out"], torch.log_softmax(t64(x), 1).numpy(), *tol, "out")
    y = r.outputs["out"]
    b = ops.log_softmax_backward(g, y, -1)
    assert_bit_equal(b.outputs["out"], golden.log_softmax_backward(g, y)["out"], "grad")
    ref = torch.ops.aten._log_softmax_backward_data(t64(g), t64(y), 1, torch.float64).numpy()
    tol = (1e-5, 1e-5) if dtype == "float32" else (2.0 ** -10, 2.0 ** -14)
    assert_close(b.outputs["out"], ref, *tol, "grad")
    assert [k["name"] for k in r.stats["kernels"]] == ["LogSoftmaxV2"]
    assert [k["name"] for k in b.stats["kernels"]] == ["LogSoftmaxGrad"]


def inputs(shape, weighted, seed=3):
    n, c = shape
    rng = np.random.default_rng(seed)
    x = golden.log_softmax(normal(shape, "float32", seed=seed))["out"]
    t = rng.integers(0, c, n).astype(np.int64)
    t[1::5] = -100       # row 0 kept: a mean over no row is 0 / 0
    w = (rng.uniform(0.5, 2, c) if weighted else np.ones(c)).astype(np.float32)
    return x, t, w


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("shape", SHAPES)
def test_nll_loss_and_its_backward(shape, reduction):
    x, t, w = inputs(shape, weighted=reduction != 2)
    r = ops.nll_loss(x, t, w, reduction, -100)
    want = golden.nll_loss(x, t, w, reduction, -100, block_dim=r.tiling.block_dim,
                           row_batch=r.tiling.row_batch)
    for name in ("out", "totalWeightOut"):
        assert_bit_equal(r.outputs[name], want[name], name)
    ref, total = torch.ops.aten.nll_loss_forward(t64(x), torch.from_numpy(t), t64(w), reduction,
                                                 -100)
    assert_close(r.outputs["out"], ref.numpy().reshape(r.outputs["out"].shape), 1e-5, 1e-6)
    if reduction:
        assert_close(r.outputs["totalWeightOut"], total.numpy().reshape(1), 1e-6, 0.0)
    g = normal((shape[0],) if reduction == 0 else (1,), "float32", seed=4)
    tw = r.outputs["totalWeightOut"]
    b = ops.nll_loss_backward(g, x, t, w, reduction, -100, tw)
    assert_bit_equal(b.outputs["out"], golden.nll_loss_backward(g, x, t, w, reduction, -100,
                                                                tw)["out"], "gradInput")
    gt = t64(g) if reduction == 0 else t64(g).reshape(())
    ref = torch.ops.aten.nll_loss_backward(gt, t64(x), torch.from_numpy(t), t64(w), reduction,
                                           -100, t64(tw).reshape(())).numpy()
    assert_close(b.outputs["out"], ref, 1e-6, 0.0, "gradInput")


def test_the_chain_is_cross_entropy_and_its_gradient():
    """log_softmax -> nll_loss (mean) -> nll_loss_backward -> log_softmax_backward, against
    F.cross_entropy's loss and gradient (the ResNet-50 step's loss, 32 x 1000)."""
    logits = normal((32, 1000), "float32", seed=5)
    t = np.random.default_rng(6).integers(0, 1000, 32).astype(np.int64)
    w = np.ones(1000, np.float32)
    lp = ops.log_softmax(logits, 1).outputs["out"]
    fwd = ops.nll_loss(lp, t, w, 1, -100)
    one = np.ones(1, np.float32)
    dlp = ops.nll_loss_backward(one, lp, t, w, 1, -100, fwd.outputs["totalWeightOut"])
    dx = ops.log_softmax_backward(dlp.outputs["out"], lp, 1).outputs["out"]
    xt = t64(logits).requires_grad_()
    loss = torch.nn.functional.cross_entropy(xt, torch.from_numpy(t))
    loss.backward()
    assert_close(fwd.outputs["out"], loss.detach().numpy().reshape(1), 1e-6, 0.0, "loss")
    assert_close(dx, xt.grad.numpy(), 1e-5, 1e-7, "gradient")


def test_modes_jitter_and_the_sanitizer_agree():
    x, t, w = inputs((40, 300), weighted=True)
    for fn, args in ((ops.log_softmax, (x, 1)), (ops.nll_loss, (x, t, w, 1, -100)),
                     (ops.log_softmax_backward, (x, x, 1)),
                     (ops.nll_loss_backward, (np.ones(1, np.float32), x, t, w, 2, -100,
                                              np.ones(1, np.float32)))):
        base = fn(*args, sanitize=True)
        for other in (fn(*args, mode="functional"), fn(*args, jitter=(3, 50.0))):
            for name, value in base.outputs.items():
                assert_bit_equal(other.outputs[name], value, name)


X = normal((4, 10), "float32")
T = np.arange(4, dtype=np.int64)
W = np.ones(10, np.float32)
ONE = np.ones(1, np.float32)


@pytest.mark.parametrize("call,code,match", [
    (lambda: ops.log_softmax(None, 1), 161001, "self is None"),
    (lambda: ops.log_softmax(X, 1, chip="atlas-a2"), 161002, "does not model"),
    (lambda: ops.log_softmax(X.astype(np.int32), 1), 161002, "dtype int32"),
    (lambda: ops.log_softmax(X[0], 0), 161002, "2-D"),
    (lambda: ops.log_softmax(X, 0), 161002, "dim = 0"),
    (lambda: ops.log_softmax_backward(X, None, 1), 161001, "output is None"),
    (lambda: ops.log_softmax_backward(X, X[:2], 1), 161002, "must match"),
    (lambda: ops.nll_loss(X, T, None, 1), 161001, "weight is None"),
    (lambda: ops.nll_loss(X, T, W, 1, chip="atlas-a2"), 161002, "does not model"),
    (lambda: ops.nll_loss(X.astype(np.float16), T, W.astype(np.float16), 1), 161002,
     "float16"),
    (lambda: ops.nll_loss(X, T.astype(np.float32), W, 1), 161002, "target dtype"),
    (lambda: ops.nll_loss(X, T[:3], W, 1), 161002, "target has shape"),
    (lambda: ops.nll_loss(X, T, W[:3], 1), 161002, "weight is"),
    (lambda: ops.nll_loss(X, T, W, 3), 161002, "reduction = 3"),
    (lambda: ops.nll_loss(X, T, W, 1, 1.5), 161002, "ignoreIndex"),
    (lambda: ops.nll_loss_backward(ONE, X, T, W, 1, -100, None), 161001, "totalWeight"),
    (lambda: ops.nll_loss_backward(ONE, X, T, W, 0, -100, ONE), 161002, "gradOutput is"),
    (lambda: ops.nll_loss_backward(ONE, X, T, W, 1, -100, np.ones(2, np.float32)), 161002,
     "totalWeight is"),
])
def test_argument_rules(call, code, match):
    with pytest.raises(ParamError, match=match) as err:
        call()
    assert err.value.code == code


def test_a_target_outside_the_classes_is_a_clear_error():
    from npusim.errors import MemoryAccessError

    with pytest.raises(MemoryAccessError, match="outside"):
        ops.nll_loss(X, np.array([0, 1, 2, 10]), W, 1)
    with pytest.raises(MemoryAccessError, match="outside"):
        ops.nll_loss_backward(ONE, X, np.array([0, 1, 2, 10]), W, 1, -100, ONE)
