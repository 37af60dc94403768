"""aclnnMoeTokenUnpermute and aclnnMoeTokenUnpermuteGrad: results against the goldens and
PyTorch (autograd of the forward for the grad), where they meet MoeTokenPermute and
MoeTokenPermuteGrad, argument rules, tiling, the command."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from npusim import golden, ops
from npusim.cases.moe_token_permute import router_choices, router_probs
from npusim.cases.moe_token_permute_grad import moe_routing
from npusim.dtypes import bfloat16
from npusim.errors import NpusimError, ParamError, TilingError
from op_check import FLOOR, assert_bit_equal
from trace_check import check_trace

RTOL = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 4e-3}
DTYPES = {"bfloat16": bfloat16, "float16": np.float16, "float32": np.float32}
A2 = "atlas-a2"


def routed(tokens, topk, hidden, dtype, *, probs_dtype=None, drop=0.0, seed=0):
    """(permutedTokens, sortedIndices, probs or None) as MoeTokenPermute would leave them."""
    rng = np.random.default_rng(seed)
    indices, rows = moe_routing(rng, tokens, topk, drop)
    x = rng.standard_normal((rows, hidden), dtype=np.float32).astype(dtype)
    probs = None if probs_dtype is None else router_probs(rng, tokens, topk, probs_dtype)
    return x, indices, probs


def t64(a):
    return None if a is None else torch.from_numpy(np.asarray(a).astype(np.float64))


def torch_unpermute(x, indices, probs=None, *, padded_mode=False):
    """out[t] = sum_k probs[t, k] * x[indices[t * topK + k]], dropped copies counted as 0."""
    top_k = 1 if probs is None else probs.shape[1]
    index = indices.long().reshape(-1, top_k)
    keep = index < x.shape[0]
    rows = x.double()[index.clamp(max=max(x.shape[0] - 1, 0))] * keep[..., None]
    weight = torch.ones(index.shape, dtype=torch.float64) if probs is None else probs.double()
    return (rows * weight[..., None]).sum(1)


def check_unpermute(x, indices, probs=None, **options):
    """Bit-exact against the golden; within the dtype's rtol of torch in float64, with an
    absolute floor for the fp32 sum of up to 8 terms."""
    rtol = RTOL[np.dtype(x.dtype).name]
    result = ops.moe_token_unpermute(x, indices, probs, **options)
    got = result.outputs["unpermutedTokens"]
    assert_bit_equal(got, golden.moe_token_unpermute(x, indices, probs), "unpermutedTokens")
    ref = torch_unpermute(t64(x), torch.from_numpy(indices), t64(probs)).numpy()
    amax = float(np.abs(ref).max(initial=0))
    np.testing.assert_allclose(got.astype(np.float64), ref, rtol=rtol,
                               atol=rtol * FLOOR * amax + 8 * 2.0 ** -23 * amax)
    return result


def torch_unpermute_grad(x, dy, indices, probs=None, *, padded_mode=False):
    """Autograd of ``torch_unpermute`` (no copy skipped at prob 0, as the grad kernel)."""
    xs = x.double().requires_grad_(True)
    ps = None if probs is None else probs.double().requires_grad_(True)
    out = torch_unpermute(xs, indices, ps)
    grads = torch.autograd.grad(out, [xs] + ([ps] if ps is not None else []), dy.double())
    return {"permutedTokensGradOut": grads[0],
            **({"probsGradOut": grads[1]} if ps is not None else {})}


def check_grad(x, dy, indices, probs=None, **options):
    rtol = max(RTOL[np.dtype(x.dtype).name],
               RTOL[np.dtype((probs if probs is not None else x).dtype).name])
    amax = float(np.abs(x.astype(np.float64)).max(initial=0) * np.abs(dy.astype(np.float64))
                 .max(initial=0))
    atol = rtol * FLOOR * amax + x.shape[1] * 2.0 ** -23 * amax
    result = ops.moe_token_unpermute_grad(x, dy, indices, probs, **options)
    t = result.tiling
    want = golden.moe_token_unpermute_grad(
        x, dy, indices, probs, chunk=t.hidden_size_align if t.hidden_size_loop_times > 1 else None)
    for name, expected in want.items():
        if expected is None:
            assert result.outputs[name] is None
            continue
        assert_bit_equal(result.outputs[name], expected, name)
    ref = torch_unpermute_grad(t64(x), t64(dy), torch.from_numpy(indices), t64(probs))
    for name, r in ref.items():
        np.testing.assert_allclose(result.outputs[name].astype(np.float64), r.numpy(),
                                   rtol=rtol, atol=atol, err_msg=name)
    return result


# --- unpermute ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_unpermute_matches_torch(dtype, mode):
    x, indices, probs = routed(50, 6, 333, DTYPES[dtype], probs_dtype=dtype, drop=0.2, seed=1)
    check_unpermute(x, indices, probs, mode=mode)


@pytest.mark.parametrize("dtype,probs_dtype", [("bfloat16", "float32"), ("float32", "float16"),
                                               ("float16", "bfloat16")])
def test_unpermute_mixed_probs_dtype(dtype, probs_dtype):
    x, indices, probs = routed(30, 4, 100, DTYPES[dtype], probs_dtype=probs_dtype, seed=2)
    check_unpermute(x, indices, probs)


def test_unpermute_skips_copies_with_zero_prob():
    x, indices, probs = routed(20, 3, 64, np.float32, probs_dtype="float32", seed=3)
    probs[:, 0] = 0          # every first copy skipped: the sum starts from Duplicate(0)
    probs[5] = 0             # a token with nothing left
    r = check_unpermute(x, indices, probs)
    assert not r.outputs["unpermutedTokens"][5].any()
    assert r.stats["instruction_counts"]["duplicate"] == 20


def test_unpermute_without_probs_is_a_gather():
    x, indices, _ = routed(40, 1, 77, bfloat16, drop=0.3, seed=4)
    r = check_unpermute(x, indices)
    assert r.tiling.top_k == 1 and r.outputs["unpermutedTokens"].shape == (40, 77)


def test_unpermute_long_rows_are_chunked():
    x, indices, probs = routed(3, 2, 30001, bfloat16, probs_dtype="bfloat16", seed=5)
    r = check_unpermute(x, indices, probs)
    assert r.tiling.hidden_splited_num == 2 and r.tiling.hidden_splited_remain > 0


@settings(max_examples=12, deadline=None)
@given(tokens=st.integers(1, 40), topk=st.integers(1, 10), hidden=st.integers(1, 300),
       drop=st.sampled_from([0.0, 0.3]), dtype=st.sampled_from(list(DTYPES)),
       probs_dtype=st.sampled_from([None, *DTYPES]), seed=st.integers(0, 2**31))
def test_unpermute_any_routing(tokens, topk, hidden, drop, dtype, probs_dtype, seed):
    topk = topk if probs_dtype else 1
    x, indices, probs = routed(tokens, topk, hidden, DTYPES[dtype], probs_dtype=probs_dtype,
                               drop=drop, seed=seed)
    check_unpermute(x, indices, probs)


def test_unpermute_with_unit_probs_is_moe_token_permute_grad_bit_for_bit():
    """Where they meet: MoeTokenPermuteGrad is Unpermute's kernel without probs; probs of 1.0
    multiply exactly, so the two agree to the bit."""
    x, indices, _ = routed(60, 8, 256, bfloat16, drop=0.25, seed=6)
    ones = np.ones((60, 8), np.float32)
    a = ops.moe_token_unpermute(x, indices, ones)
    b = ops.moe_token_permute_grad(x, indices, num_topk=8)
    assert_bit_equal(a.outputs["unpermutedTokens"], b.outputs["out"])


def test_permute_then_unpermute_restores_the_tokens():
    rng = np.random.default_rng(7)
    tokens = rng.standard_normal((37, 129)).astype(bfloat16)
    indices = router_choices(rng, 37, 1, 5)[:, 0]
    fwd = ops.moe_token_permute(tokens, indices)
    back = ops.moe_token_unpermute(fwd.outputs["permuteTokensOut"],
                                   fwd.outputs["sortedIndicesOut"])
    assert_bit_equal(back.outputs["unpermutedTokens"], tokens)


# --- unpermute grad -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_grad_matches_autograd(dtype, mode):
    x, indices, probs = routed(50, 6, 333, DTYPES[dtype], probs_dtype=dtype, drop=0.2, seed=8)
    dy = np.random.default_rng(8).standard_normal((50, 333)).astype(DTYPES[dtype])
    check_grad(x, dy, indices, probs, mode=mode)


@pytest.mark.parametrize("hidden", [40, 64, 600, 4096, 5000, 9000])
def test_grad_reduction_branches(hidden):
    """Each branch of ReduceSumFunc (< 64, >= 64, >= 512, >= 4096 elements)."""
    x, indices, probs = routed(4, 3, hidden, np.float16, probs_dtype="float32", seed=9)
    dy = np.random.default_rng(9).standard_normal((4, hidden)).astype(np.float16)
    check_grad(x, dy, indices, probs)


def test_grad_long_rows_are_cut_and_gathered_one_at_a_time():
    x, indices, probs = routed(3, 2, 70001, np.float32, probs_dtype="float32", seed=10)
    dy = np.random.default_rng(10).standard_normal((3, 70001)).astype(np.float32)
    r = check_grad(x, dy, indices, probs)
    assert r.tiling.hidden_size_loop_times > 1 and r.tiling.input_reserve_num == 1


def test_grad_without_probs_is_the_permute_scatter():
    """UnpermuteGrad without probs is MoeTokenPermute's scatter: with the forward's ranks the
    gradient lands where MoeTokenPermute put the tokens."""
    rng = np.random.default_rng(11)
    tokens = rng.standard_normal((45, 70)).astype(np.float16)
    fwd = ops.moe_token_permute(tokens, router_choices(rng, 45, 1, 6)[:, 0])
    ranks = fwd.outputs["sortedIndicesOut"]
    r = check_grad(np.zeros((45, 70), np.float16), tokens, ranks)
    assert_bit_equal(r.outputs["permutedTokensGradOut"], fwd.outputs["permuteTokensOut"])
    assert r.outputs["probsGradOut"] is None


def test_grad_long_rows_without_probs():
    x, indices, _ = routed(4, 1, 200000, bfloat16, drop=0.25, seed=12)
    dy = np.random.default_rng(12).standard_normal((4, 200000)).astype(bfloat16)
    r = check_grad(x, dy, indices)
    assert r.tiling.hidden_size_loop_times > 1


@settings(max_examples=12, deadline=None)
@given(tokens=st.integers(1, 30), topk=st.integers(1, 9), hidden=st.integers(1, 300),
       drop=st.sampled_from([0.0, 0.3]), dtype=st.sampled_from(list(DTYPES)),
       probs_dtype=st.sampled_from([None, *DTYPES]), seed=st.integers(0, 2**31))
def test_grad_any_routing(tokens, topk, hidden, drop, dtype, probs_dtype, seed):
    topk = topk if probs_dtype else 1
    x, indices, probs = routed(tokens, topk, hidden, DTYPES[dtype], probs_dtype=probs_dtype,
                               drop=drop, seed=seed)
    if x.shape[0] == 0:
        return                     # CANN's tiling refuses numOutTokens 0 (tested below)
    dy = np.random.default_rng(seed).standard_normal((tokens, hidden)).astype(DTYPES[dtype])
    check_grad(x, dy, indices, probs)


def test_modes_and_jitter_give_identical_bytes(tmp_path):
    x, indices, probs = routed(30, 4, 200, bfloat16, probs_dtype="bfloat16", seed=13)
    dy = np.random.default_rng(13).standard_normal((30, 200)).astype(bfloat16)
    timed = ops.moe_token_unpermute_grad(x, dy, indices, probs)
    jittered = ops.moe_token_unpermute_grad(x, dy, indices, probs, jitter=(3, 40.0))
    for name in timed.outputs:
        assert_bit_equal(jittered.outputs[name], timed.outputs[name], name)
    check_trace(timed, tmp_path / "unpermute_grad.json")


def test_grad_tiling_follows_the_host_code():
    """4096 x 7168 bf16, top-8 with bf16 probs at UB 192 KB: 256 indices a loop, the row of
    7168 whole, one permuted row a gather. Without probs: UB / (2 x (7168 x 2 + 4)) = 6 rows,
    floored to 8 indices = 0, raised to 8; 8 rows of 7168 do not fit, so the row is cut to
    (UB - 8 x 2 x 4) / (2 x 2 x 8) = 6142 floored to 16 elements = 6128, in 2 chunks."""
    from npusim.chip import load_chip
    from npusim.ops.moe.unpermute_grad_tiling import moe_token_unpermute_grad_tiling as tiling
    chip = load_chip(A2)
    t = tiling(chip, tokens=4096, top_k=8, hidden=7168, num_out_tokens=32768, item=2,
               probs_item=2)
    assert (t.indices_reserve_num, t.input_reserve_num, t.hidden_size_loop_times) == (256, 1, 1)
    assert (t.former_core_num, t.token_num_each_core, t.token_num_tail_core) == (16, 86, 85)
    none = tiling(chip, tokens=4096, top_k=1, hidden=7168, num_out_tokens=4096, item=2,
                  probs_item=None)
    assert (none.indices_reserve_num, none.hidden_size_align, none.hidden_size_loop_times,
            none.hidden_size_tail) == (8, 6128, 2, 1040)
    with pytest.raises(TilingError, match="no field to override"):
        tiling(chip, tokens=4, top_k=1, hidden=8, num_out_tokens=4, item=2, probs_item=None,
               overrides={"block_dim": 2})


# --- argument rules -------------------------------------------------------------------------

def good_unpermute(**change):
    args = dict(permuted_tokens=np.ones((8, 16), np.float16),
                sorted_indices=np.arange(8, dtype=np.int32),
                probs=np.full((4, 2), 0.5, np.float16))
    args.update(change)
    return args


UNPERMUTE_BAD = {
    "tokens None": (good_unpermute(permuted_tokens=None), 161001, "permutedTokens is None"),
    "indices None": (good_unpermute(sorted_indices=None), 161001, "sortedIndices is None"),
    "training": (good_unpermute(chip="atlas-training"), 161002, "not supported on atlas-tr"),
    "310P unmodelled": (good_unpermute(chip="atlas-inference"), 161002,
                        "CANN runs it there, but npusim does not model"),
    "tokens int8": (good_unpermute(permuted_tokens=np.ones((8, 16), np.int8)), 161002,
                    "permutedTokens dtype int8"),
    "indices int64": (good_unpermute(sorted_indices=np.arange(8)), 161002,
                      "sortedIndices dtype int64"),
    "probs float64": (good_unpermute(probs=np.ones((4, 2))), 161002, "probsOptional dtype"),
    "tokens 3-D": (good_unpermute(permuted_tokens=np.ones((8, 2, 8), np.float16)), 161002,
                   "permutedTokens has 3 dimensions"),
    "indices 2-D": (good_unpermute(sorted_indices=np.zeros((4, 2), np.int32)), 161002,
                    "sortedIndices has 2 dimensions"),
    "probs 1-D": (good_unpermute(probs=np.ones(8, np.float16)), 161002,
                  "probsOptional has 1 dimensions"),
    "topk 513": (good_unpermute(probs=np.ones((1, 513), np.float16)), 161002,
                 "topK .* = 513: allowed 1 to 512"),
    "sizes differ": (good_unpermute(probs=np.ones((3, 2), np.float16)), 161002,
                     "sortedIndices has 8 elements; probsOptional .* needs tokens x topK = 6"),
    "negative index": (good_unpermute(sorted_indices=np.array([0, 1, -2, 3, 4, 5, 6, 7],
                                                               np.int32)),
                       161002, r"sortedIndices\[2\] = -2: indices must be >= 0"),
    "padded": (good_unpermute(padded_mode=True), 161002, "paddedMode = True: only False"),
}


@pytest.mark.parametrize("case", list(UNPERMUTE_BAD))
def test_unpermute_bad_argument_is_a_clear_param_error(case):
    args, code, match = UNPERMUTE_BAD[case]
    with pytest.raises(ParamError, match=match) as info:
        ops.moe_token_unpermute(**args)
    assert info.value.code == code


def good_grad(**change):
    args = dict(permuted_tokens=np.ones((8, 16), np.float16),
                unpermuted_tokens_grad=np.ones((4, 16), np.float16),
                sorted_indices=np.arange(8, dtype=np.int32),
                probs=np.full((4, 2), 0.5, np.float16))
    args.update(change)
    return args


GRAD_BAD = {
    "grad None": (good_grad(unpermuted_tokens_grad=None), 161001, "unpermutedTokensGrad is None"),
    "training": (good_grad(chip="atlas-training"), 161002, "not supported on atlas-training"),
    "dtypes differ": (good_grad(unpermuted_tokens_grad=np.ones((4, 16), np.float32)), 161002,
                      "unpermutedTokensGrad is float32, permutedTokens float16"),
    "hidden differs": (good_grad(unpermuted_tokens_grad=np.ones((4, 8), np.float16)), 161002,
                       "hidden size 8 differs from permutedTokens' 16"),
    "probs rows": (good_grad(probs=np.ones((2, 4), np.float16)), 161002,
                   "probsOptional has 2 rows; unpermutedTokensGrad has 4 tokens"),
    "indices count": (good_grad(sorted_indices=np.arange(6, dtype=np.int32)), 161002,
                      "sortedIndices has 6 elements; tokens x topK = 4 x 2 = 8"),
    "without probs count": (good_grad(probs=None), 161002, "4 x 1 = 4 are needed"),
    "repeated row": (good_grad(sorted_indices=np.array([0, 1, 2, 3, 3, 5, 6, 7], np.int32)),
                     161002, r"sortedIndices\[3\] and sortedIndices\[4\] are both 3"),
    "empty": (good_grad(permuted_tokens=np.ones((0, 16), np.float16)), 161002,
              "CANN's tiling refuses a zero dimension"),
    "padded": (good_grad(padded_mode=True), 161002, "paddedMode = True"),
    "negative": (good_grad(sorted_indices=np.array([0, 1, 2, 3, 4, 5, 6, -7], np.int32)),
                 161002, r"sortedIndices\[7\] = -7"),
}


@pytest.mark.parametrize("case", list(GRAD_BAD))
def test_grad_bad_argument_is_a_clear_param_error(case):
    args, code, match = GRAD_BAD[case]
    with pytest.raises(ParamError, match=match) as info:
        ops.moe_token_unpermute_grad(**args)
    assert info.value.code == code


@pytest.mark.parametrize("op,args", [(ops.moe_token_unpermute, good_unpermute),
                                     (ops.moe_token_unpermute_grad, good_grad)])
@pytest.mark.parametrize("option,match", [
    ({"numerics": False}, "numerics=False is not possible"),
    ({"mode": "fast"}, "mode 'fast': allowed timed, functional"),
])
def test_bad_run_option_is_a_clear_error(op, args, option, match):
    with pytest.raises(NpusimError, match=match):
        op(**args(**option))


@pytest.mark.parametrize("name", ["moe_token_unpermute", "moe_token_unpermute_grad"])
def test_run_command_checks_and_reports(name, tmp_path):
    out = subprocess.run([sys.executable, "-m", "npusim", "run", name, "--shape", "96x1000",
                          "--param", "topk=4", "--param", "drop=0.25",
                          "--out", str(tmp_path / "u")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("bit-identical to the golden") == (1 if name.endswith("mute") else 2)


# --- aclnn two-phase ------------------------------------------------------------------------

def test_aclnn_permute_unpermute_and_grad():
    """The three two-phase calls on one routing: permute, unpermute (probs), its grad."""
    import npusim.aclnn as acl
    assert acl.aclrtSetDevice(0) == acl.ACL_SUCCESS
    _, stream = acl.aclrtCreateStream()
    rng = np.random.default_rng(30)
    tokens = rng.standard_normal((6, 32)).astype(bfloat16)
    indices = router_choices(rng, 6, 2, 4)
    permuted, ranks = np.zeros((12, 32), bfloat16), np.zeros(12, np.int32)
    ret, size, ex = acl.aclnnMoeTokenPermuteGetWorkspaceSize(
        acl.Tensor(tokens), acl.Tensor(indices), 0, False, acl.Tensor(permuted),
        acl.Tensor(ranks))
    assert ret == acl.ACL_SUCCESS and size == 0
    assert acl.aclnnMoeTokenPermute(None, size, ex, stream) == acl.ACL_SUCCESS
    want = golden.moe_token_permute(tokens, indices)
    assert_bit_equal(permuted, want["permuteTokensOut"])
    assert_bit_equal(ranks, want["sortedIndicesOut"])
    probs = router_probs(rng, 6, 2, "bfloat16")
    out = np.zeros((6, 32), bfloat16)
    ret, size, ex = acl.aclnnMoeTokenUnpermuteGetWorkspaceSize(
        acl.Tensor(permuted), acl.Tensor(ranks), acl.Tensor(probs), False, None, acl.Tensor(out))
    assert ret == acl.ACL_SUCCESS
    assert acl.aclnnMoeTokenUnpermute(None, size, ex, stream) == acl.ACL_SUCCESS
    assert_bit_equal(out, golden.moe_token_unpermute(permuted, ranks, probs))
    dx, dp = np.zeros((12, 32), bfloat16), np.zeros((6, 2), bfloat16)
    ret, size, ex = acl.aclnnMoeTokenUnpermuteGradGetWorkspaceSize(
        acl.Tensor(permuted), acl.Tensor(out), acl.Tensor(ranks), acl.Tensor(probs), False,
        None, acl.Tensor(dx), acl.Tensor(dp))
    assert ret == acl.ACL_SUCCESS
    assert acl.aclnnMoeTokenUnpermuteGrad(None, size, ex, stream) == acl.ACL_SUCCESS
    want = golden.moe_token_unpermute_grad(permuted, out, ranks, probs)
    assert_bit_equal(dx, want["permutedTokensGradOut"])
    assert_bit_equal(dp, want["probsGradOut"])


@pytest.mark.parametrize("call,match", [
    ("permute out shape", r"permuteTokensOut is bfloat16 \(4, 8\); it must be bfloat16 \(8, 8\)"),
    ("unpermute restore", "restoreShapeOptional = \\[1, 1\\]: only None"),
    ("grad probs out", "probsGradOut is None"),
])
def test_aclnn_statuses(call, match):
    import re

    import npusim.aclnn as acl
    assert acl.aclrtSetDevice(0) == acl.ACL_SUCCESS
    x = acl.Tensor(np.ones((4, 8), bfloat16))
    idx = acl.Tensor(np.arange(8, dtype=np.int32))
    probs = acl.Tensor(np.ones((4, 2), bfloat16))
    if call == "permute out shape":
        ret, _, ex = acl.aclnnMoeTokenPermuteGetWorkspaceSize(
            x, acl.Tensor(np.zeros((4, 2), np.int32)), 0, False, acl.Tensor(np.ones((4, 8),
                                                                                   bfloat16)),
            acl.Tensor(np.zeros(8, np.int32)))
        code = 161002
    elif call == "unpermute restore":
        ret, _, ex = acl.aclnnMoeTokenUnpermuteGetWorkspaceSize(
            acl.Tensor(np.ones((8, 8), bfloat16)), idx, probs, False, [1, 1], x)
        code = 161002
    else:
        ret, _, ex = acl.aclnnMoeTokenUnpermuteGradGetWorkspaceSize(
            acl.Tensor(np.ones((8, 8), bfloat16)), x, idx, probs, False, None,
            acl.Tensor(np.ones((8, 8), bfloat16)), None)
        code = 161001
    assert ret == code and ex is None
    assert re.search(match, acl.aclGetRecentErrMsg())


def test_unpermute_several_batches_of_16_bit_probs_a_core():
    """The next batch's cast of the probs waits for the scalar's reads of this batch's."""
    x, indices, probs = routed(20, 4, 48, bfloat16, probs_dtype="bfloat16", seed=31)
    r = check_unpermute(x, indices, probs, tiling={"block_dim": 2, "tokens_splited_length": 3})
    assert r.tiling.tokens_splited_num == 3


def test_grad_several_loops_a_core():
    """topK 130: 256 // 130 x 130 = 130 indices a loop, so core 0 (2 of the 49 tokens) runs two
    loops, the second's probs cast after the first's reads."""
    x, indices, probs = routed(49, 130, 8, bfloat16, probs_dtype="float16", seed=32)
    dy = np.random.default_rng(32).standard_normal((49, 8)).astype(bfloat16)
    r = check_grad(x, dy, indices, probs)
    assert r.tiling.indices_reserve_num == 130 and r.tiling.token_num_each_core == 2
