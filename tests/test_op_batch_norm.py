"""aclnnBatchNorm (training) and aclnnBatchNormBackward: bit for bit against the goldens in both
modes, within the precision standard of torch (CPU, float64: native_batch_norm and
native_batch_norm_backward), the kernels each product runs, argument rules, tiling, sanitizer.

Tolerances (set before the first run): an output of the activation dtype is one rounding of an
fp32 chain: that dtype's rtol (fp32: 1e-5 for the chain), with an absolute floor of 1e-5 of the
largest reference (fp32 cancellation in x - mean and in dy - b - x_hat a). The per-channel fp32
results (sums of N x H x W values, a square root, a division): rtol 1e-5 and a floor of 1e-6
of the largest reference value (the means are near 0 and come from sums with cancellation).
"""

import numpy as np
import pytest
import torch
from elementwise_check import CASES, normal

from npusim import golden, ops
from npusim.errors import ParamError, TilingError
from op_check import assert_bit_equal, assert_close, to_torch

SHAPES = [(4, 64, 9, 9), (3, 20, 5, 7), (2, 70, 3, 5), (5, 16), (3, 24, 11)]
RTOL = {"float32": 1e-5, "float16": 1e-3, "bfloat16": 4e-3}
F32 = np.float32


def channels(c: int, seed: int = 7) -> tuple:
    rng = np.random.default_rng(seed)
    w, b, rm = (rng.standard_normal(c).astype(F32) for _ in range(3))
    return w, b, rm, (rng.random(c) + 0.5).astype(F32)


def golden_of(fn, result, *args, **kwargs):
    t = result.tiling
    return fn(*args, **kwargs, lanes=t.lanes, parts=t.parts, tile=t.tile, pitch=t.pitch,
              chunk_rows=t.chunk_rows)


def assert_golden(result, want: dict) -> None:
    for name, expected in want.items():
        if expected is None:
            assert result.outputs[name] is None, name
            continue
        assert_bit_equal(result.outputs[name], expected, name)


def close(got, ref, dtype: str, name: str, channel=False) -> None:
    ref = ref.detach().numpy()
    scale = float(np.max(np.abs(ref), initial=0.0))
    if channel:
        assert_close(got, ref, 1e-5, 1e-6 * scale, name)
    else:
        assert_close(got, ref, RTOL[dtype], 1e-5 * scale, name)


def run_forward(x, chip, momentum=0.1, eps=1e-5, mode="timed", **options):
    w, b, rm, rv = channels(x.shape[1])
    r = ops.batch_norm(x, w, b, rm, rv, momentum=momentum, eps=eps, chip=chip, mode=mode,
                       **options)
    assert_golden(r, golden_of(golden.batch_norm, r, x, w, b, rm, rv, momentum=momentum,
                               eps=eps))
    return r, (w, b, rm, rv)


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("shape", SHAPES)
def test_forward_matches_golden_and_torch(chip, dtype, shape):
    x = normal(shape, dtype, seed=len(shape))
    r, (w, b, rm, rv) = run_forward(x, chip)
    rmt, rvt = to_torch(rm), to_torch(rv)
    y, mean, invstd = torch.ops.aten.native_batch_norm(to_torch(x), to_torch(w), to_torch(b),
                                                      rmt, rvt, True, 0.1, 1e-5)
    close(r.outputs["output"], y, dtype, "output")
    for name, ref in (("saveMean", mean), ("saveInvstd", invstd), ("runningMean", rmt),
                      ("runningVar", rvt)):
        close(r.outputs[name], ref, dtype, name, channel=True)
    v3 = chip == "atlas-a2" and shape[1] >= 64
    names = [k["name"] for k in r.stats["kernels"]]
    assert names == (["BatchNormV3"] if v3 else ["TransData(input)", "BNTrainingReduce",
                                                 "BNTrainingUpdate", "TransData(output)"])


@pytest.mark.parametrize("chip,dtype", CASES)
@pytest.mark.parametrize("shape", SHAPES)
def test_backward_matches_golden_and_torch(chip, dtype, shape):
    x, dy = normal(shape, dtype, seed=1), normal(shape, dtype, seed=2)
    w, _, rm, rv = channels(shape[1])
    axes = (0, *range(2, len(shape)))
    mean = x.astype(np.float64).mean(axis=axes).astype(F32)
    invstd = (1 / np.sqrt(x.astype(np.float64).var(axis=axes) + 1e-5)).astype(F32)
    r = ops.batch_norm_backward(dy, x, w, rm, rv, mean, invstd, chip=chip)
    assert_golden(r, golden_of(golden.batch_norm_backward, r, dy, x, w, rm, rv, mean, invstd))
    dx, dw, db = torch.ops.aten.native_batch_norm_backward(
        to_torch(dy), to_torch(x), to_torch(w), to_torch(rm), to_torch(rv), to_torch(mean),
        to_torch(invstd), True, 1e-5, [True, True, True])
    close(r.outputs["gradInput"], dx, dtype, "gradInput")
    close(r.outputs["gradWeight"], dw, dtype, "gradWeight", channel=True)
    close(r.outputs["gradBias"], db, dtype, "gradBias", channel=True)
    assert [k["name"] for k in r.stats["kernels"]] == [
        "TransData(gradOut)", "TransData(input)", "BNTrainingUpdateGrad", "BNTrainingReduceGrad",
        "TransData(gradInput)"]


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
def test_functional_mode_and_jitter_give_the_same_bits(chip):
    x, dy = normal((3, 40, 6, 5), "float16", seed=3), normal((3, 40, 6, 5), "float16", seed=4)
    timed, (w, b, rm, rv) = run_forward(x, chip, tiling={"tile": 64})
    func, _ = run_forward(x, chip, mode="functional", tiling={"tile": 64})
    jit, _ = run_forward(x, chip, jitter=(5, 50.0), tiling={"tile": 64})
    for name, value in timed.outputs.items():
        assert_bit_equal(func.outputs[name], value, name)
        assert_bit_equal(jit.outputs[name], value, name)
    mean, inv = timed.outputs["saveMean"], timed.outputs["saveInvstd"]
    args = (dy, x, w, rm, rv, mean, inv)
    bt = ops.batch_norm_backward(*args, chip=chip, tiling={"parts": 2})
    bf = ops.batch_norm_backward(*args, chip=chip, mode="functional", tiling={"parts": 2})
    for name, value in bt.outputs.items():
        assert_bit_equal(bf.outputs[name], value, name)
    assert_golden(bt, golden_of(golden.batch_norm_backward, bt, *args))


def test_output_mask_drops_outputs_and_strided_input_is_made_contiguous():
    x = normal((3, 7, 6, 20), "float32", seed=5).transpose(0, 3, 1, 2)
    r, _ = run_forward(x, "atlas-training")
    assert [k["name"] for k in r.stats["kernels"]][:2] == ["Contiguous(input)",
                                                            "TransData(input)"]
    w, _, rm, rv = channels(20)
    mean, inv = r.outputs["saveMean"], r.outputs["saveInvstd"]
    rb = ops.batch_norm_backward(x, x, w, rm, rv, mean, inv, output_mask=(False, True, False),
                                 chip="atlas-training")
    assert rb.outputs["gradInput"] is None and rb.outputs["gradBias"] is None
    assert_golden(rb, golden_of(golden.batch_norm_backward, rb, x, x, w, rm, rv, mean, inv,
                                output_mask=(False, True, False)))


def test_none_per_channel_tensors_take_aclnn_fills():
    x = normal((2, 12, 4, 4), "float32", seed=6)
    r = ops.batch_norm(x, None, None, None, None, chip="atlas-training")
    ones, zeros = np.ones(12, F32), np.zeros(12, F32)
    assert_golden(r, golden_of(golden.batch_norm, r, x, ones, zeros, zeros, ones))


def test_the_sanitizer_finds_nothing():
    x = normal((2, 24, 5, 5), "float16", seed=8)
    for chip in ("atlas-a2", "atlas-training"):
        r, _ = run_forward(x, chip, sanitize=True)
        assert r.cycles > 0
    r, _ = run_forward(normal((2, 64, 3, 3), "float32", seed=9), "atlas-a2", sanitize=True)
    assert [k["name"] for k in r.stats["kernels"]] == ["BatchNormV3"]


def test_tiling_overrides_and_bad_overrides():
    x = normal((4, 20, 9, 9), "float16", seed=10)
    r, _ = run_forward(x, "atlas-training", tiling={"tile": 128, "parts": 3, "buffer_num": 1})
    assert (r.tiling.tile, r.tiling.parts, r.tiling.buffer_num) == (128, 3, 1)
    for bad in ({"tile": 100}, {"tile": 32}, {"parts": 0}, {"parts": 5}, {"buffer_num": 3},
                {"lanes": 8}, {"nope": 1}):
        with pytest.raises(TilingError):
            run_forward(x, "atlas-training", tiling=bad)
    with pytest.raises(TilingError, match="parts"):       # BatchNormV3 takes whole channels
        run_forward(normal((2, 64, 3, 3), "float16"), "atlas-a2", tiling={"parts": 2})


@pytest.mark.parametrize("tile,rows", [(64, 0), (128, 1), (256, 2), (1024, 3)])
def test_batch_norm_v3_batches_short_runs(tile, rows):
    """BatchNormV3 takes ``chunk_rows`` runs of 81 fp16 (96 in UB) per chunk when they fit
    the tile, else chunks of one run; the golden follows either order."""
    r, _ = run_forward(normal((3, 64, 9, 9), "float16", seed=13), "atlas-a2",
                       tiling={"tile": tile})
    assert (r.tiling.chunk_rows, r.tiling.pitch) == (rows, 96 if rows else 0)


X = normal((2, 8, 3, 3), "float32")
W = np.ones(8, F32)


@pytest.mark.parametrize("call,code,match", [
    (lambda: ops.batch_norm(None, W, W, W, W), 161001, "input is None"),
    (lambda: ops.batch_norm(X[0, 0, 0], W, W, W, W), 161002, "allowed 2 to 8"),
    (lambda: ops.batch_norm(X.reshape(1, 2, 8, 3, 3), W, W, W, W), 161002, "BN3D"),
    (lambda: ops.batch_norm(X.astype(np.int32), W, W, W, W), 161002, "dtype int32"),
    (lambda: ops.batch_norm(X.astype("bfloat16"), W, W, W, W, chip="atlas-training"), 161002,
     "bfloat16"),
    (lambda: ops.batch_norm(X, W[:5], W, W, W), 161002, "weight has shape"),
    (lambda: ops.batch_norm(X, W, W.astype(np.float16), W, W), 161002, "float32 per-channel"),
    (lambda: ops.batch_norm(X, W, W, W, W, training=False), 161002, "training mode"),
    (lambda: ops.batch_norm(X, W, W, W, W, momentum=float("nan")), 161002, "momentum"),
    (lambda: ops.batch_norm(X, W, W, W, W, eps="1"), 161002, "eps"),
    (lambda: ops.batch_norm(X[:1, :, :1, :1], W, W, W, W), 161002, "more than 1"),
    (lambda: ops.batch_norm(X[:, :, :0], W, W, W, W), 161002, "empty"),
    (lambda: ops.batch_norm(X, W, W, W, W, chip="atlas-inference"), 161002, "not supported"),
    (lambda: ops.batch_norm_backward(X, None, W, W, W, W, W), 161001, "input is None"),
    (lambda: ops.batch_norm_backward(X[:, :4], X, W, W, W, W, W), 161002, "same dtype"),
    (lambda: ops.batch_norm_backward(X.astype(np.float16), X, W, W, W, W, W), 161002,
     "same dtype"),
    (lambda: ops.batch_norm_backward(X, X, W, W, W, W[:3], W), 161002, "save_mean has shape"),
    (lambda: ops.batch_norm_backward(X, X, W, W[:2], W, W, W), 161002, "running_mean"),
    (lambda: ops.batch_norm_backward(X, X, W, W, W, W, W, training=False), 161002, "training"),
    (lambda: ops.batch_norm_backward(X, X, W, W, W, W, W, output_mask=(1, 1)), 161002,
     "output_mask"),
])
def test_argument_rules(call, code, match):
    with pytest.raises(ParamError, match=match) as err:
        call()
    assert err.value.code == code


def to_5hd(a: np.ndarray) -> np.ndarray:
    n, c, h, w = a.shape
    c1 = -(-c // 16)
    pad = np.zeros((n, c1 * 16, h, w), a.dtype)
    pad[:, :c] = a
    return pad.reshape(n, c1, 16, h * w).transpose(0, 1, 3, 2).copy()


def test_the_5hd_entry_points_run_only_the_compute_kernels():
    """Graph mode's hook: BNTrainingReduce + BNTrainingUpdate (and the backward pair) on
    activations already in NC1HWC0 give the operator's results in NC1HWC0."""
    from npusim.chip import load_chip
    from npusim.engine.sequence import OpRun
    from npusim.ops.batch_norm.backward import launch_backward_5hd
    from npusim.ops.batch_norm.forward import launch_forward_5hd

    x, dy = normal((2, 20, 3, 5), "float16", seed=11), normal((2, 20, 3, 5), "float16", seed=12)
    w, b, rm, rv = channels(20)
    full = ops.batch_norm(x, w, b, rm, rv, chip="atlas-training")
    run = OpRun(load_chip("atlas-training"))
    x5 = run.gm.tensor("x5", x.dtype, to_5hd(x).size, to_5hd(x))
    pad = [np.concatenate([v, np.zeros(12, F32)]) for v in (w, b, rm, rv)]
    ins = [run.gm.tensor(f"c{i}", F32, 32, v) for i, v in enumerate(pad)]
    outs = [run.gm.tensor(f"o{i}", F32, 20) for i in range(4)]
    y5, _ = launch_forward_5hd(run, x5, x.shape, ins, outs, 0.1, 1e-5)
    r = run.result({"y5": (y5, to_5hd(x).shape), "saveMean": (outs[0], (20,))})
    assert [k["name"] for k in r.stats["kernels"]] == ["BNTrainingReduce", "BNTrainingUpdate"]
    assert_bit_equal(r.outputs["y5"], to_5hd(full.outputs["output"]), "output")
    assert_bit_equal(r.outputs["saveMean"], full.outputs["saveMean"], "saveMean")
    mean, inv = full.outputs["saveMean"], full.outputs["saveInvstd"]
    grad = ops.batch_norm_backward(dy, x, w, rm, rv, mean, inv, chip="atlas-training")
    run = OpRun(load_chip("atlas-training"))
    dy5 = run.gm.tensor("dy5", x.dtype, to_5hd(dy).size, to_5hd(dy))
    x5 = run.gm.tensor("x5", x.dtype, to_5hd(x).size, to_5hd(x))
    ins = [run.gm.tensor(f"c{i}", F32, 32, np.concatenate([v, np.zeros(12, F32)]))
           for i, v in enumerate((w, mean, inv))]
    outs = [run.gm.tensor(f"g{i}", F32, 20) for i in range(2)]
    dx5, _ = launch_backward_5hd(run, dy5, x5, x.shape, ins, outs)
    r = run.result({"dx5": (dx5, to_5hd(x).shape), "gradWeight": (outs[0], (20,))})
    assert [k["name"] for k in r.stats["kernels"]] == ["BNTrainingUpdateGrad",
                                                        "BNTrainingReduceGrad"]
    assert_bit_equal(r.outputs["dx5"], to_5hd(grad.outputs["gradInput"]), "gradInput")
    assert_bit_equal(r.outputs["gradWeight"], grad.outputs["gradWeight"], "gradWeight")
