"""aclnnCrossEntropyLossGrad: results against the golden and PyTorch, argument rules, tiling,
modes, the aclnn API, the command and timing."""

import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import npusim
import npusim.aclnn as acl
from npusim import golden, ops
from npusim.dtypes import bfloat16
from npusim.errors import HazardError, MemoryAccessError, NpusimError, ParamError, TilingError
from npusim.face.cli import main as npusim_main
from npusim.ops.cross_entropy import kernel as ce_kernel
from npusim.ops.cross_entropy.tiling import (
    CrossEntropyLossGradTiling,
    cann_col_chunk,
    chunk_bytes,
    cross_entropy_loss_grad_tiling,
    meta_bytes,
)
from op_check import assert_bit_equal, assert_close, to_torch
from trace_check import check_trace

A2 = "atlas-a2"
RTOL = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 4e-3}
DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": bfloat16}
REDUCTIONS = ("mean", "sum", "none")


def torch_reference(grad_loss, log_prob, target, weight, reduction, ignore_index):
    """nll_loss's backward, then log_softmax's backward from its output, in float64."""
    lp = to_torch(log_prob).requires_grad_(True)
    w = None if weight is None else to_torch(weight)
    loss = torch.nn.functional.nll_loss(lp, torch.from_numpy(np.asarray(target, np.int64)),
                                        weight=w, reduction=reduction, ignore_index=ignore_index)
    (grad,) = torch.autograd.grad(loss, lp, to_torch(grad_loss))
    return torch._log_softmax_backward_data(grad, lp.detach(), 1, torch.float64).numpy()


def inputs(n, c, dtype, reduction="mean", weighted=False, ignore_index=-100, ignored=0.2,
           seed=0):
    """log_softmax of random logits in ``dtype``, targets with a fraction ``ignored`` set to
    ignore_index, a random gradLoss, and a weight when asked."""
    rng = np.random.default_rng(seed)
    dt = DTYPES[dtype]
    x = rng.standard_normal((n, c)) * 3
    lp = (x - x.max(1, keepdims=True))
    lp = (lp - np.log(np.exp(lp).sum(1, keepdims=True))).astype(dt)
    target = rng.integers(0, c, n)
    target[rng.random(n) < ignored] = ignore_index
    g = rng.uniform(0.5, 2, n if reduction == "none" else ()).astype(dt)
    w = rng.uniform(0.25, 4, c).astype(np.float32) if weighted else None
    return g, lp, target, w


def check(g, lp, target, w=None, *, reduction="mean", ignore_index=-100, **options):
    """Run; bit-exact against the golden (rounded in the kernel's order and with the run's
    tiling), within the precision standard of torch in float64. Returns the Result."""
    r = ops.cross_entropy_loss_grad(g, lp, target, w, reduction=reduction,
                                    ignore_index=ignore_index, **options)
    out = r.outputs["xGradOut"]
    assert out.shape == lp.shape and out.dtype == lp.dtype
    want = golden.cross_entropy_loss_grad(g, lp, target, w, reduction=reduction,
                                          ignore_index=ignore_index,
                                          block_dim=r.tiling.block_dim,
                                          row_batch=r.tiling.row_batch)
    assert_bit_equal(out, want, "xGradOut")
    ref = torch_reference(g, lp, target, w, reduction, ignore_index)
    assert_close(out, ref, RTOL[np.dtype(lp.dtype).name if lp.dtype != bfloat16 else
                                "bfloat16"], None, "xGradOut")
    return r


# --- results ---------------------------------------------------------------------------------

def test_seed_example():
    """The seed's C example: bf16 logProb -0.2 (2x3), target {0, 0}, weight 1, gradLoss 0.1."""
    g, lp = np.array(0.1, bfloat16), np.full((2, 3), -0.2, bfloat16)
    r = check(g, lp, np.array([0, 0]), np.ones(3, np.float32))
    np.testing.assert_allclose(r.outputs["xGradOut"].astype(np.float64),
                               [[-0.0091, 0.0409, 0.0409]] * 2, atol=2e-4)
    assert r.cycles > 0 and r.workspace_bytes == 32


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_golden_and_torch(dtype, reduction, weighted):
    check(*inputs(53, 1000, dtype, reduction, weighted, seed=3), reduction=reduction)


@pytest.mark.parametrize("c", [2, 3, 255, 256, 257, 4097, 32000, 152064])
def test_vocabularies(c):
    n = 3 if c > 40000 else 7
    check(*inputs(n, c, "bfloat16", "mean", True, ignored=0.0, seed=c), reduction="mean")


@pytest.mark.parametrize("n", [1, 47, 49, 97])
def test_rows_not_a_multiple_of_the_cores(n):
    r = check(*inputs(n, 300, "float16", "sum", True, seed=n), reduction="sum")
    assert r.tiling.block_dim == min(n, 48)
    if n > 48:
        assert r.tiling.front_row_num == r.tiling.tail_row_num + 1


@pytest.mark.parametrize("ignore_index", [-100, -1, 0, 5])
def test_ignored_rows_are_zero(ignore_index):
    g, lp, t, w = inputs(40, 64, "float32", "mean", True, ignore_index=ignore_index,
                         ignored=0.3, seed=1)
    r = check(g, lp, t, w, ignore_index=ignore_index)
    ignored = t == ignore_index
    assert ignored.any() and not np.any(r.outputs["xGradOut"][ignored])


def test_every_row_ignored_with_mean_gives_nan_as_cann_not_zero_as_torch():
    """aclnn follows CANN's kernel, not torch. CANN (ops-nn
    loss/cross_entropy_loss_grad/op_kernel/cross_entropy_loss_grad_weight_none.h, Process,
    REDUCTION_MEAN) divides with no guard: ``loss_out_grad = meanSumOutGrad /
    blockBuf2Local.GetValue(0)``, the sum over all cores of the ignore mask, 0 here, so
    gradLoss / 0 is inf (or NaN); ``Muls(targetCast, ignoreSelect, loss_out_grad)`` then gives
    0 * inf = NaN for every row's nll grad, and each row's softmax times it is NaN. torch's
    nll_loss backward gives zeros instead (its total weight 0 is special-cased)."""
    g, lp, t, w = inputs(5, 16, "float32", ignored=1.0)
    out = ops.cross_entropy_loss_grad(g, lp, t).outputs["xGradOut"]
    assert np.isnan(out).all()
    assert not torch_reference(g, lp, t, None, "mean", -100).any()   # torch: 0 everywhere


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_many_row_batches_and_chunks(reduction):
    """Rows walked in batches of 3 on 5 cores, 2 chunks of 256 per row plus a tail."""
    r = check(*inputs(61, 700, "bfloat16", reduction, True, seed=7), reduction=reduction,
              tiling={"block_dim": 5, "row_batch": 3, "col_chunk": 256})
    assert (r.tiling.col_loop, r.tiling.col_tail) == (2, 188)


targets = st.sampled_from(["float32", "float16", "bfloat16"])


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 60), c=st.integers(1, 2000), dtype=targets,
       reduction=st.sampled_from(REDUCTIONS), weighted=st.booleans(),
       ignored=st.sampled_from([0.0, 0.3]), seed=st.integers(0, 2**31))
def test_any_shape_and_values(n, c, dtype, reduction, weighted, ignored, seed):
    g, lp, t, w = inputs(n, c, dtype, reduction, weighted, ignored=ignored, seed=seed)
    if reduction == "mean" and np.all(t == -100):
        t[0] = 0
    check(g, lp, t, w, reduction=reduction)


def test_strided_log_prob_is_copied_by_a_kernel():
    g, lp, t, _ = inputs(30, 80, "float16")
    r = check(g, np.asfortranarray(lp), t)
    assert [k["name"] for k in r.stats["kernels"]] == ["Contiguous(logProb)",
                                                       "CrossEntropyLossGrad"]


def test_strided_target_weight_and_grad_loss():
    g, lp, t, w = inputs(30, 80, "float32", "none", True, seed=2)
    wide_t, wide_w = np.repeat(t, 2), np.repeat(w, 3)
    check(np.repeat(g, 2)[::2], lp, wide_t[::2], wide_w[::3], reduction="none")


def test_no_rows_runs_nothing():
    r = ops.cross_entropy_loss_grad(np.array(1.0, np.float32), np.zeros((0, 5), np.float32),
                                    np.zeros(0, np.int64))
    assert r.outputs["xGradOut"].shape == (0, 5) and r.cycles == 0


# --- targets the kernel refuses ---------------------------------------------------------------

@pytest.mark.parametrize("bad", [7, -1, 10**6])
@pytest.mark.parametrize("weighted", [False, True])
def test_target_out_of_range_is_a_clear_error(bad, weighted):
    g, lp, t, w = inputs(9, 7, "float32", weighted=weighted, ignored=0.0)
    t[4] = bad
    with pytest.raises(MemoryAccessError, match=rf"target\[4\] = {bad} is outside \[0, 7\)"):
        ops.cross_entropy_loss_grad(g, lp, t, w)


# --- argument rules ---------------------------------------------------------------------------

def good(**change):
    args = dict(grad_loss=np.array(1.0, np.float16), log_prob=np.zeros((4, 6), np.float16),
                target=np.arange(4), weight=None)
    args.update(change)
    return args


BAD_ARGS = {
    "gradLoss None": (good(grad_loss=None), 161001, "gradLoss is None"),
    "logProb None": (good(log_prob=None), 161001, "logProb is None"),
    "target None": (good(target=None), 161001, "target is None"),
    "training chip": (dict(good(), chip="atlas-training"), 161002,
                      "not supported on atlas-training .*supported on: Atlas A2"),
    "logProb fp64": (good(log_prob=np.zeros((4, 6))), 161002, "logProb dtype float64"),
    "logProb int32": (good(log_prob=np.zeros((4, 6), np.int32)), 161002, "logProb dtype int32"),
    "gradLoss other dtype": (good(grad_loss=np.array(1.0, np.float32)), 161002,
                             "dtypes must be equal"),
    "target int32": (good(target=np.arange(4, dtype=np.int32)), 161002, "target dtype int32"),
    "weight fp16": (good(weight=np.ones(6, np.float16)), 161002, "weight dtype float16"),
    "logProb 1-D": (good(log_prob=np.zeros(6, np.float16)), 161002, "must be 2-D"),
    "logProb 3-D": (good(log_prob=np.zeros((2, 2, 6), np.float16)), 161002, "must be 2-D"),
    "no classes": (good(log_prob=np.zeros((4, 0), np.float16)), 161002, "C, the number"),
    "N too large": (good(log_prob=np.zeros((200_000, 1), np.float16),
                         target=np.zeros(200_000, np.int64)), 161002, "N must be below 200000"),
    "target shape": (good(target=np.arange(5)), 161002, r"target has shape \(5,\)"),
    "weight shape": (good(weight=np.ones(5, np.float32)), 161002, r"weight has shape \(5,\)"),
    "gradLoss 1-D for mean": (good(grad_loss=np.ones(4, np.float16)), 161002,
                              r"gradLoss has shape \(4,\); must be \(\) \(reduction 'mean'\)"),
    "gradLoss 0-D for none": (dict(good(), reduction="none"), 161002,
                              r"must be \(4,\) \(reduction 'none'\)"),
    "reduction": (dict(good(), reduction="avg"), 161002, "reduction = 'avg'; allowed"),
    "reduction not a string": (dict(good(), reduction=1), 161002, "reduction = 1"),
    "ignore_index = C": (dict(good(), ignore_index=6), 161002, "must be less than C = 6"),
    "ignore_index float": (dict(good(), ignore_index=1.5), 161002, "an integer is required"),
    "label_smoothing": (dict(good(), label_smoothing=0.1), 161002, "label_smoothing = 0.1"),
    "zloss scale": (dict(good(), lse_square_scale_for_zloss=1.0), 161002,
                    "lse_square_scale_for_zloss = 1.0"),
    "grad_zloss": (dict(good(), grad_zloss=np.array(1.0, np.float16)), 161002,
                   "gradZlossOptional must be None"),
    "lse_for_zloss": (dict(good(), lse_for_zloss=np.zeros(4, np.float16)), 161002,
                      "lseForZlossOptional must be None"),
    "not an array": (good(log_prob=object()), 161002, "not an array|does not know"),
}


@pytest.mark.parametrize("case", list(BAD_ARGS))
def test_bad_argument_is_a_clear_param_error(case):
    kwargs, code, match = BAD_ARGS[case]
    with pytest.raises(ParamError, match=match) as info:
        ops.cross_entropy_loss_grad(**kwargs)
    assert info.value.code == code


# --- tiling -----------------------------------------------------------------------------------

def tiling(n, c, dtype="bfloat16", reduction="mean", weighted=False, **overrides):
    return cross_entropy_loss_grad_tiling(npusim.load_chip(A2), n, c, DTYPES[dtype],
                                          reduction=reduction, weighted=weighted,
                                          overrides=overrides or None)


def test_cann_formula_gives_the_worked_example_and_the_default_says_why_it_differs():
    """kernels.md §3(b)'s worked example: 8192 x 32000 bf16, mean, no weight, 40 cores (an
    Atlas A2 of 40 AIV, 910B3): 205 rows on 32 cores and 204 on 8, chunk 23808, one full chunk
    and a tail of 8192 per row. npusim's rows split the same; its chunk is CANN's less the
    8704 bytes (1088 elements, 1024 aligned) its kernel's extra row buffers take (ce_tiling)."""
    chip = npusim.load_chip("atlas-a2-910b3")
    assert chip.vector_core_count == 40
    assert cann_col_chunk(chip.ub_bytes, 8192, 32000, 2, reduction="mean", weighted=False,
                          cores=40) == 23808
    t = cross_entropy_loss_grad_tiling(chip, 8192, 32000, bfloat16, reduction="mean",
                                       weighted=False)
    assert (t.block_dim, t.front_core_num, t.front_row_num, t.tail_row_num) == (40, 32, 205, 204)
    assert t.row_batch == 205 and t.col_loop == 1
    extra = meta_bytes(205, 2, False, "mean", 40) - 4416     # CANN's per-row buffers: 4416 B
    assert extra == 8704 and (t.col_chunk, t.col_tail) == (23808 - 1024, 32000 - 22784)
    a2 = npusim.load_chip(A2)      # 48 AIV: 171 rows, CANN's formula 23552 less the same 1024
    assert cann_col_chunk(a2.ub_bytes, 8192, 32000, 2, reduction="mean", weighted=False,
                          cores=48) == tiling(8192, 32000).col_chunk + 1024


def test_default_tiling_follows_the_host_code():
    """kernels.md's worked example (8192 x 32000 bf16, mean) on A2's 48 AIV cores: 171 rows on
    32 cores and 170 on 16, one chunk of 512-byte pieces plus a tail per row."""
    t = tiling(8192, 32000)
    assert isinstance(t, CrossEntropyLossGradTiling)
    assert (t.block_dim, t.front_core_num, t.front_row_num, t.tail_row_num) == (48, 32, 171, 170)
    assert t.row_batch == 171 and t.buffer_num == 1
    assert t.col_chunk % 256 == 0 and t.col_loop == 1 and t.col_tail == 32000 - t.col_chunk
    ub = npusim.load_chip(A2).ub_bytes
    used = meta_bytes(171, 2, False, "mean", 48) + chunk_bytes(t.col_chunk, 2, 1)
    assert used <= ub < used + chunk_bytes(256, 2, 1)     # the largest aligned chunk that fits


def test_small_vocabulary_is_one_tail_and_many_rows_are_batched():
    assert (tiling(10, 100).col_chunk, tiling(10, 100).col_tail) == (0, 100)
    big = tiling(199_999, 3, "float32", "none", True, block_dim=1)
    assert 1 < big.row_batch < big.front_row_num == 199_999


@pytest.mark.parametrize("override", [{"buffer_num": 2}, {"col_chunk": 2048},
                                      {"block_dim": 7}, {"row_batch": 2}])
def test_overrides_change_the_schedule_not_the_answer(override):
    r = check(*inputs(60, 3000, "float16", seed=5), tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


def test_overriding_buffer_num_alone_re_derives_the_chunk():
    one, two = tiling(64, 100_000), tiling(64, 100_000, buffer_num=2)
    assert two.col_chunk < one.col_chunk and two.col_chunk % 256 == 0


def test_overriding_col_chunk_alone_re_derives_the_row_batch():
    t = tiling(8000, 100_000, "float32", block_dim=1, col_chunk=8192)
    assert 1 <= t.row_batch < 8000
    assert meta_bytes(t.row_batch, 4, False, "mean", 1) + chunk_bytes(8192, 4, 1) \
        <= npusim.load_chip(A2).ub_bytes


@pytest.mark.parametrize("override,match", [
    ({"chunk": 256}, "unknown tiling field 'chunk'"),
    ({"col_loop": 2}, "col_loop is derived from the shape"),
    ({"col_chunk": 100}, "positive multiple of 256 elements"),
    ({"col_chunk": 0}, "positive multiple of 256 elements"),
    ({"col_chunk": 1 << 20}, r"needs \d+ bytes of UB for the column buffers; beside one "
                             r"row's metadata \(\d+ bytes\) atlas-a2's 196608 bytes hold at "
                             r"most 768 elements"),
    ({"col_chunk": 65536, "row_batch": 64}, "at most 768 elements fit"),   # C = 1000
    ({"block_dim": 49}, "allowed 1 to 48"),
    ({"block_dim": 0}, "allowed 1 to 48"),
    ({"buffer_num": 3}, "allowed 1 or 2"),
    ({"row_batch": 65}, "allowed 1 to 64"),
    ({"block_dim": 2.5}, "an integer is required"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        ops.cross_entropy_loss_grad(*inputs(3072, 1000, "bfloat16"), tiling=override)


def test_row_batch_too_big_for_ub_says_how_many_fit():
    with pytest.raises(TilingError, match=r"row_batch = 6000 needs \d+ bytes .*at most \d+ rows"):
        tiling(6000, 20_000, block_dim=1, row_batch=6000)


# --- modes, jitter, trace, workspace -----------------------------------------------------------

def test_modes_and_jitter_give_identical_bytes(tmp_path):
    args = inputs(50, 600, "bfloat16", "mean", True, seed=8)
    options = dict(tiling={"col_chunk": 256, "block_dim": 6})
    timed = check(*args, **options)
    functional = ops.cross_entropy_loss_grad(*args, mode="functional", **options)
    jittered = ops.cross_entropy_loss_grad(*args, jitter=(3, 60.0), **options)
    assert_bit_equal(functional.outputs["xGradOut"], timed.outputs["xGradOut"])
    assert_bit_equal(jittered.outputs["xGradOut"], timed.outputs["xGradOut"])
    assert jittered.cycles > timed.cycles
    check_trace(timed, tmp_path / "ce.json")
    counts = timed.stats["instruction_counts"]
    assert counts["sync_all"] == 6 and counts["scalar_sub_value"] == sum(args[2] != -100)


@pytest.mark.parametrize("dropped", ["V_S", "S_V", "MTE2_V"])
def test_sanitizer_catches_a_missing_flag(monkeypatch, dropped):
    """Without one of the kernel's flags the scalar's read-modify-write (or the vector's read
    of the targets) races: a HazardError, not a silently different answer."""
    keep = ce_kernel.sync
    monkeypatch.setattr(ce_kernel, "sync", lambda event: None if event == dropped else
                        keep(event))
    with pytest.raises(HazardError):
        ops.cross_entropy_loss_grad(*inputs(8, 300, "float16", ignored=0.0))


def test_numerics_off_keeps_the_cycles():
    args = inputs(100, 5000, "bfloat16", "none", True)
    on = ops.cross_entropy_loss_grad(*args, reduction="none")
    off = ops.cross_entropy_loss_grad(*args, reduction="none", numerics=False)
    assert on.cycles == off.cycles


@pytest.mark.parametrize("reduction,workspace", [("mean", 64), ("sum", 0), ("none", 0)])
def test_workspace_is_one_partial_per_core_for_mean(reduction, workspace):
    r = ops.cross_entropy_loss_grad(*inputs(10, 40, "float32", reduction), reduction=reduction)
    assert r.workspace_bytes == workspace     # align32(10 cores x 4 bytes) for mean
    assert ("sync_all" in r.stats["instruction_counts"]) == (reduction == "mean")


# --- the aclnn API -----------------------------------------------------------------------------

def test_aclnn_seed_example():
    """The seed's C example, step by step."""
    assert acl.aclrtSetDevice(0) == acl.ACL_SUCCESS
    _, stream = acl.aclrtCreateStream()
    grad = acl.Tensor(np.array(0.1, bfloat16))
    log_prob = acl.Tensor(np.full((2, 3), -0.2, bfloat16))
    target = acl.Tensor(np.array([0, 0], np.int64))
    weight = acl.Tensor(np.ones(3, np.float32))
    out = acl.Tensor(np.zeros((2, 3), bfloat16))
    ret, size, executor = acl.aclnnCrossEntropyLossGradGetWorkspaceSize(
        grad, log_prob, target, weight, None, None, "mean", -100, 0.0, 0.0, out)
    assert ret == acl.ACL_SUCCESS and size == 32
    assert acl.aclnnCrossEntropyLossGrad(None, size, executor, stream) == \
        acl.ACLNN_ERR_PARAM_INVALID                       # the workspace must be allocated
    ret, workspace = acl.aclrtMalloc(size, acl.ACL_MEM_MALLOC_HUGE_FIRST)
    assert ret == acl.ACL_SUCCESS
    assert acl.aclnnCrossEntropyLossGrad(workspace, size, executor, stream) == acl.ACL_SUCCESS
    assert acl.aclrtSynchronizeStream(stream) == acl.ACL_SUCCESS
    np.testing.assert_allclose(out.array.astype(np.float64), [[-0.0091, 0.0409, 0.0409]] * 2,
                               atol=2e-4)


@pytest.mark.parametrize("change,code,match", [
    ({"xGradOut": None}, 161001, "xGradOut is None"),
    ({"target": None}, 161001, "target is None"),
    ({"xGradOut": np.zeros((2, 3), np.float32)}, 161002, "dtypes must be equal"),
    ({"xGradOut": np.zeros((3, 2), bfloat16)}, 161002, r"xGradOut has shape \(3, 2\)"),
    ({"reduction": "avg"}, 161002, "reduction = 'avg'"),
    ({"labelSmoothing": 0.5}, 161002, "label_smoothing = 0.5"),
    ({"gradZlossOptional": np.array(1.0, bfloat16)}, 161002, "gradZlossOptional must be None"),
    ({"chip": "atlas-training"}, 161002, "not supported on atlas-training"),
])
def test_aclnn_statuses(change, code, match):
    chip = change.pop("chip", A2)
    assert acl.aclrtSetDevice(0, chip=chip) == acl.ACL_SUCCESS
    try:
        args = dict(gradLoss=np.array(0.1, bfloat16), logProb=np.full((2, 3), -0.2, bfloat16),
                    target=np.array([0, 0], np.int64), weightOptional=None,
                    gradZlossOptional=None, lseForZlossOptional=None, reduction="mean",
                    ignoreIndex=-100, labelSmoothing=0.0, lseSquareScaleForZloss=0.0,
                    xGradOut=np.zeros((2, 3), bfloat16))
        args.update(change)
        args = {k: acl.Tensor(v) if isinstance(v, np.ndarray) else v for k, v in args.items()}
        ret, _, executor = acl.aclnnCrossEntropyLossGradGetWorkspaceSize(**args)
        assert ret == code and executor is None
        assert re.search(match, acl.aclGetRecentErrMsg())
    finally:
        acl.aclrtSetDevice(0)


# --- the command -------------------------------------------------------------------------------

def test_run_command_checks_and_reports(tmp_path, capsys):
    status = npusim_main(["run", "cross_entropy_loss_grad", "--shape", "50x700", "--param",
                          "reduction=sum", "--param", "weight=true", "--param", "ignore_index=3",
                          "--tiling", "col_chunk=256", "--out", str(tmp_path / "ce")])
    out = capsys.readouterr().out
    assert status == 0
    for text in ("aclnnCrossEntropyLossGrad", "xGradOut: bit-identical to the golden",
                 "roofline", "col_chunk=256", "col_tail=188"):
        assert text in out


CLI_BAD = {
    "training product": (["--chip", "atlas-training"], "not supported on atlas-training"),
    "reduction": (["--param", "reduction=avg"], "reduction = 'avg'"),
    "ignore_index = C": (["--param", "ignore_index=256"], "must be less than C = 256"),
    "ignore_index not an int": (["--param", "ignore_index=x"], "parameter ignore_index='x'"),
    "weight not a bool": (["--param", "weight=maybe"], "parameter weight='maybe'"),
    "unknown param": (["--param", "smoothing=0.1"], "no parameter 'smoothing'"),
    "shape 3-D": (["--shape", "4x4x4"], "N x C (rows x classes), got 3 dimensions"),
    "shape 1-D": (["--shape", "64"], "got 1 dimensions"),
    "N too large": (["--shape", "200000x2"], "N must be below 200000"),
    "dtype int8": (["--dtype", "int8"], "does not take dtype"),
    "derived tiling": (["--tiling", "col_tail=2"], "col_tail is derived from the shape"),
    "col_chunk": (["--tiling", "col_chunk=100"], "col_chunk = 100"),
    "buffer_num": (["--tiling", "buffer_num=4"], "buffer_num = 4: allowed 1 or 2"),
    "block_dim": (["--tiling", "block_dim=100"], "block_dim = 100"),
}


@pytest.mark.parametrize("case", list(CLI_BAD))
def test_command_bad_input_is_one_line_and_no_files(case, tmp_path, capsys):
    args, message = CLI_BAD[case]
    shape = [] if "--shape" in args else ["--shape", "64x256"]
    status = npusim_main(["run", "cross_entropy_loss_grad", *shape, *args,
                          "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and message in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_command_refusal_from_a_subprocess_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "npusim", "run", "cross_entropy_loss_grad",
                          "--shape", "64x256", "--chip", "atlas-training",
                          "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    lines = [line for line in out.stderr.strip().splitlines()    # progress shows when slow
             if not line.startswith("running cross_entropy_loss_grad")]
    assert out.returncode != 0 and "Traceback" not in out.stderr and len(lines) == 1
    assert "supported on: Atlas A2" in lines[0] and list(tmp_path.iterdir()) == []


def test_unknown_chip_names_the_chips():
    with pytest.raises(NpusimError, match="atlas-a2.*atlas-training"):
        ops.cross_entropy_loss_grad(**good(), chip="ascend-999")


# --- timing ------------------------------------------------------------------------------------

def hbm_bound_us(*arrays, out) -> float:
    nbytes = sum(a.nbytes for a in arrays if a is not None) + out
    return nbytes / npusim.load_chip(A2).hbm_bytes_per_s * 1e6


def test_4096_by_32000_bf16_within_one_and_a_half_rooflines():
    n, c = 4096, 32000
    lp = np.full((n, c), -10.0, bfloat16)
    g, t = np.array(1.0, bfloat16), np.arange(n, dtype=np.int64) % c
    r = ops.cross_entropy_loss_grad(g, lp, t, numerics=False, trace=False, sanitize=False)
    bound = hbm_bound_us(g, lp, t, out=lp.nbytes)
    assert bound <= r.time_us <= 1.5 * bound, (r.time_us, bound)


def test_time_is_linear_in_rows_once_every_core_is_busy():
    def us(n):
        lp = np.full((n, 8192), -9.0, np.float16)
        return ops.cross_entropy_loss_grad(np.array(1.0, np.float16), lp,
                                           np.zeros(n, np.int64), numerics=False,
                                           trace=False, sanitize=False).time_us
    assert us(1536) / us(768) == pytest.approx(2.0, rel=0.08)


def test_rows_beyond_half_of_ub_are_walked_in_batches():
    """3000 rows on one core: their metadata would take more than half of UB (CANN has no
    guard), so the default tiling batches them; mean's partial sum adds the batch sums."""
    r = check(*inputs(3000, 2, "float32", "mean", True, seed=4), tiling={"block_dim": 1})
    assert 1 < r.tiling.row_batch < 3000
