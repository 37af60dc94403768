"""aclnnCrossEntropyLoss (the loss's forward): results bit for bit against the golden and within
the dtype's precision of PyTorch's log_softmax and cross_entropy, chunked rows and batches,
the forward feeding aclnnCrossEntropyLossGrad, the argument rules."""

import numpy as np
import pytest
import torch

from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import MemoryAccessError, ParamError, TilingError
from op_check import assert_bit_equal, assert_close, to_torch

DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": bfloat16}
RTOL = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2}   # a few roundings of the dtype
REDUCTIONS = ("mean", "sum", "none")


def inputs(n, c, dtype, weighted=False, ignore_index=-100, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * scale).astype(DTYPES[dtype])
    target = rng.integers(0, c, n)
    target[rng.random(n) < 0.2] = ignore_index
    w = rng.uniform(0.25, 4, c).astype(np.float32) if weighted else None
    return x, target, w


def check(x, target, weight=None, *, reduction="mean", ignore_index=-100, **options):
    r = ops.cross_entropy_loss(x, target, weight, reduction=reduction,
                               ignore_index=ignore_index, **options)
    t = r.tiling
    want = golden.cross_entropy_loss(x, target, weight, reduction=reduction,
                                     ignore_index=ignore_index, block_dim=t.block_dim,
                                     row_batch=t.row_batch, col_chunk=t.col_chunk)
    for name in ("lossOut", "logProbOut"):
        assert_bit_equal(r.outputs[name], want[name], name)
    assert r.outputs["zlossOut"] is None and r.outputs["lseForZlossOut"] is None
    xt = to_torch(x)
    rtol = RTOL["bfloat16" if x.dtype == bfloat16 else x.dtype.name]
    lp = torch.log_softmax(xt, 1).numpy()
    assert_close(r.outputs["logProbOut"], lp, rtol, rtol * float(np.abs(lp).max()), "logProbOut")
    ref = torch.nn.functional.cross_entropy(
        xt, torch.from_numpy(np.asarray(target, np.int64)),
        weight=None if weight is None else to_torch(weight), reduction=reduction,
        ignore_index=ignore_index).numpy().reshape(-1)
    got = r.outputs["lossOut"]
    assert got.shape == ((x.shape[0],) if reduction == "none" else (1,))
    scale = float(np.abs(lp).max()) * (1 if reduction == "none" else x.shape[0])
    assert_close(got, ref, rtol, rtol * scale, "lossOut")
    return r


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_resnet_loss_matches_golden_and_torch(dtype, reduction, mode):
    """ResNet-50's loss at batch 32: 32 x 1000, one row a core, the row resident."""
    x, target, _ = inputs(32, 1000, dtype)
    r = check(x, target, reduction=reduction, mode=mode)
    assert [k["name"] for k in r.stats["kernels"]] == ["CrossEntropyLoss"]
    assert r.tiling.col_chunk == 1000 and r.tiling.block_dim == 32
    assert r.workspace_bytes == (0 if reduction == "none" else 2 * 32 * 4)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_chunks_batches_and_weight(dtype, reduction):
    """Rows cut into 512-byte chunks with a tail (three passes), several row batches a core,
    an odd row count over 5 cores, a class weight."""
    x, target, w = inputs(37, 700, dtype, weighted=True, seed=1)
    r = check(x, target, w, reduction=reduction,
              tiling={"block_dim": 5, "row_batch": 3, "col_chunk": 256})
    assert len(r.tiling.chunks) == 3


def test_odd_shapes():
    for n, c in [(1, 1), (3, 7), (50, 33), (2, 4099)]:
        x, target, _ = inputs(n, c, "float16", seed=n)
        target = np.minimum(target, c - 1) if c == 1 else target
        check(x, target, reduction="mean" if n > 1 else "sum")


def test_large_logits_and_ignore_index_in_range():
    """Logits of +-60 (exp would overflow without the max), ignore_index a real class."""
    x, target, _ = inputs(16, 300, "float32", ignore_index=5, seed=3, scale=20.0)
    check(x, target, ignore_index=5)


def test_every_row_ignored_mean_is_nan_like_torch():
    x, _, _ = inputs(4, 10, "float32")
    r = ops.cross_entropy_loss(x, np.full(4, -100))
    assert np.isnan(r.outputs["lossOut"]).all()
    assert torch.isnan(torch.nn.functional.cross_entropy(to_torch(x), torch.full((4,), -100)))


def test_long_rows_are_chunked_by_default():
    x, target, _ = inputs(2, 40000, "float32", seed=4)
    r = check(x, target)
    assert r.tiling.col_chunk < 40000 and r.tiling.col_chunk % 128 == 0


def test_forward_feeds_the_backward():
    """logProbOut into aclnnCrossEntropyLossGrad gives torch's gradient of F.cross_entropy."""
    x, target, w = inputs(32, 1000, "float32", weighted=True, seed=5)
    fwd = ops.cross_entropy_loss(x, target, w)
    g = np.array(1.0, np.float32)
    dx = ops.cross_entropy_loss_grad(g, fwd.outputs["logProbOut"], target, w).outputs["xGradOut"]
    xt = to_torch(x).requires_grad_(True)
    loss = torch.nn.functional.cross_entropy(xt, torch.from_numpy(target), weight=to_torch(w))
    (ref,) = torch.autograd.grad(loss, xt)
    assert_close(dx, ref.numpy(), 1e-4, 1e-4 * float(np.abs(ref.numpy()).max()), "xGradOut")


def test_non_contiguous_input():
    x, target, _ = inputs(40, 30, "float16", seed=6)
    xs = np.ascontiguousarray(x.T).T
    r = check(xs, target)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(input)", "CrossEntropyLoss"]


def test_bad_target_is_a_memory_access_error():
    x, target, _ = inputs(4, 10, "float32")
    target[2] = 10
    with pytest.raises(MemoryAccessError, match=r"target\[2\] = 10 is outside \[0, 10\)"):
        ops.cross_entropy_loss(x, target)


# --- argument rules --------------------------------------------------------------------------

X = np.zeros((4, 5), np.float32)
T = np.zeros(4, np.int64)


def raises(code, match, *args, **kwargs):
    with pytest.raises(ParamError, match=match) as info:
        ops.cross_entropy_loss(*args, **kwargs)
    assert info.value.code == code


@pytest.mark.parametrize("args", [(None, T), (X, None)])
def test_missing_is_161001(args):
    raises(161001, "is None", *args)


def test_atlas_training_is_161002():
    raises(161002, "not supported on atlas-training", X, T, chip="atlas-training")


@pytest.mark.parametrize("args,match", [
    ((X.astype(np.float64), T), "input dtype float64"),
    ((X, T.astype(np.float32)), "target dtype float32"),
    ((X, T, np.ones(5, np.float16)), "weightOptional dtype float16"),
])
def test_bad_dtype_is_161002(args, match):
    raises(161002, match, *args)


def test_label_smoothing_is_not_modelled_161002():
    raises(161002, "models 0.0 only", X, T, label_smoothing=0.1)


@pytest.mark.parametrize("args,kwargs,match", [
    ((np.zeros(5, np.float32), T), {}, "must be 2-D"),
    ((np.zeros((4, 0), np.float32), T), {}, "C > 0"),
    ((X, np.zeros(3, np.int64)), {}, "target has shape"),
    ((X, T, np.ones(4, np.float32)), {}, "weightOptional has shape"),
    ((X, T), {"reduction": "avg"}, "reduction = 'avg'"),
    ((X, T), {"label_smoothing": 1.5}, "allowed 0.0 to 1.0"),
])
def test_shape_and_value_rules_are_561002(args, kwargs, match):
    raises(561002, match, *args, **kwargs)


def test_int32_target_runs():
    x, target, _ = inputs(8, 20, "float32", seed=7)
    check(x, target.astype(np.int32))


@pytest.mark.parametrize("tiling,match", [
    ({"block_dim": 33}, "allowed 1 to 32"), ({"col_chunk": 100}, "multiple of 128"),
    ({"row_batch": 2}, "at most 1 rows"), ({"buffer_num": 3}, "allowed 1 or 2"),
    ({"front_row_num": 1}, "derived from the shape"),
])
def test_bad_tiling(tiling, match):
    x, target, _ = inputs(32, 1000, "float32")
    with pytest.raises(TilingError, match=match):
        ops.cross_entropy_loss(x, target, tiling=tiling)
