"""aclnnMoeTokenPermute: results against the golden and PyTorch, consistency with
MoeTokenPermuteGrad, argument rules, tiling, the command, timing."""

import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import npusim
from npusim import golden, ops
from npusim.cases.moe_token_permute import router_choices
from npusim.dtypes import bfloat16
from npusim.errors import NpusimError, ParamError, TilingError
from npusim.ops.moe.permute_tiling import Problem, moe_token_permute_tiling
from op_check import assert_bit_equal, check_op
from trace_check import check_trace

DTYPES = {"bfloat16": bfloat16, "float16": np.float16, "float32": np.float32, "int8": np.int8}
A2 = "atlas-a2"


def routed(tokens, topk, hidden, dtype, *, experts=16, seed=0):
    rng = np.random.default_rng(seed)
    indices = router_choices(rng, tokens, topk, experts)
    x = (rng.standard_normal((tokens, hidden), dtype=np.float32) * 20).astype(dtype)
    return x, indices


def torch_permute(tokens, indices, *, num_out_tokens=0, padded_mode=False):
    """torch_npu's documented semantics (MindSpeed's reference): sortedIndices = stable argsort
    of the flattened indices, the tokens gathered by it // topK, and sortedIndicesOut its
    argsort."""
    flat = indices.reshape(-1).long()
    top_k = 1 if indices.dim() == 1 else indices.shape[1]
    rows = num_out_tokens + flat.numel() if num_out_tokens <= 0 else num_out_tokens
    rows = max(min(rows, flat.numel()), 0)
    first = torch.argsort(flat, stable=True)
    out = tokens.index_select(0, first[:rows] // top_k)
    return {"permuteTokensOut": out.double(),
            "sortedIndicesOut": torch.argsort(first, stable=True).double()}


def check(tokens, indices, num_out_tokens=0, **options):
    """Bit-exact against the golden, and equal to torch: a permute only moves bytes, so torch's
    precision standard for it is exact equality."""
    r = check_op(ops.moe_token_permute, golden.moe_token_permute, None, (tokens, indices),
                 params={"num_out_tokens": num_out_tokens}, rtol=0.0, **options)
    ref = torch_permute(torch.from_numpy(tokens.astype(np.float64)), torch.from_numpy(indices),
                        num_out_tokens=num_out_tokens)
    for name, want in ref.items():
        np.testing.assert_array_equal(r.outputs[name].astype(np.float64), want.numpy(), name)
    return r


# --- results -------------------------------------------------------------------------------

def test_small_example_by_hand():
    """Two tokens, top-2: experts [[1, 0], [0, 2]] -> slots sorted by expert 1, 2, 0, 3."""
    tokens = np.array([[1, 2], [3, 4]], np.float32)
    r = check(tokens, np.array([[1, 0], [0, 2]], np.int32))
    assert r.outputs["permuteTokensOut"].tolist() == [[1, 2], [3, 4], [1, 2], [3, 4]]
    assert r.outputs["sortedIndicesOut"].tolist() == [2, 0, 1, 3]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_torch_in_every_dtype_and_mode(dtype, mode):
    x, indices = routed(50, 6, 333, DTYPES[dtype], seed=1)
    check(x, indices, mode=mode)


@pytest.mark.parametrize("num_out_tokens", [0, 1, 77, 300, 400, -1, -100, -300, -1000])
def test_num_out_tokens_keeps_the_first_rows(num_out_tokens):
    x, indices = routed(50, 6, 40, np.float16, seed=2)
    r = check(x, indices, num_out_tokens)
    want = num_out_tokens + 300 if num_out_tokens <= 0 else num_out_tokens
    assert r.outputs["permuteTokensOut"].shape == (max(min(want, 300), 0), 40)


def test_one_dimensional_indices_are_top_1_and_repeats_are_stable():
    x, _ = routed(40, 1, 17, np.float32, seed=3)
    indices = np.random.default_rng(3).integers(0, 3, 40).astype(np.int32)
    r = check(x, indices)
    assert r.tiling.top_k == 1


def test_int64_indices_are_cast_first():
    x, indices = routed(30, 4, 64, bfloat16, seed=4)
    r = check(x, indices.astype(np.int64))
    assert [k["name"] for k in r.stats["kernels"]][0] == "Cast"


def test_more_than_two_dimensions_keep_their_trailing_shape():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((9, 3, 5)).astype(np.float32)
    r = check(x, router_choices(rng, 9, 2, 4))
    assert r.outputs["permuteTokensOut"].shape == (18, 3, 5)


def test_more_keys_than_one_ub_are_sorted_in_chunks_and_merged():
    x, indices = routed(300, 8, 24, np.float16, experts=5, seed=6)    # many ties
    r = check(x, indices, -7, tiling={"sort_chunk": 256, "merge_window": 64})
    names = [k["name"] for k in r.stats["kernels"]]
    assert names.count("Sort(chunks)") == 2 and "Sort(merge 1024+1024)" in names


def test_rows_too_long_for_two_ub_buffers_move_in_pieces():
    x, indices = routed(3, 2, 50001, bfloat16, seed=7)
    r = check(x, indices, -1)
    assert r.tiling.split_d and r.tiling.one_token_once_move == 48640


@settings(max_examples=15, deadline=None)
@given(tokens=st.integers(1, 60), topk=st.integers(1, 12), hidden=st.integers(1, 300),
       experts=st.integers(1, 40), out=st.integers(-800, 800),
       dtype=st.sampled_from(list(DTYPES)), seed=st.integers(0, 2**31))
def test_any_routing(tokens, topk, hidden, experts, out, dtype, seed):
    x, indices = routed(tokens, topk, hidden, DTYPES[dtype], experts=experts, seed=seed)
    check(x, indices, out)


@pytest.mark.parametrize("num_out_tokens", [0, -50])
def test_grad_of_the_forward_is_moe_token_permute_grad(num_out_tokens):
    """Where the two meet: the forward's sortedIndicesOut and a gradient of permuteTokensOut
    through MoeTokenPermuteGrad equal torch's autograd of the forward."""
    x, indices = routed(40, 5, 96, np.float32, seed=8)
    fwd = ops.moe_token_permute(x, indices, num_out_tokens=num_out_tokens)
    rows = fwd.outputs["permuteTokensOut"].shape[0]
    dy = np.random.default_rng(8).standard_normal((rows, 96)).astype(np.float32)
    bwd = ops.moe_token_permute_grad(dy, fwd.outputs["sortedIndicesOut"], num_topk=5)
    xt = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    out = torch_permute(xt, torch.tensor(indices), num_out_tokens=num_out_tokens)
    (dx,) = torch.autograd.grad(out["permuteTokensOut"], xt, torch.tensor(dy, dtype=torch.float64))
    np.testing.assert_allclose(bwd.outputs["out"], dx.numpy(), rtol=1e-5, atol=1e-5)


def test_empty_tokens_and_zero_hidden():
    r = ops.moe_token_permute(np.zeros((0, 8), np.float32), np.zeros((0, 4), np.int32))
    assert r.outputs["permuteTokensOut"].shape == (0, 8) and r.cycles == 0
    x, indices = routed(6, 2, 1, np.float32)
    r = check(x[:, :0], indices)
    assert r.outputs["permuteTokensOut"].shape == (12, 0)


def test_every_a2_model_and_no_other(any_chip):
    x, indices = routed(100, 4, 70, np.float16, seed=11)
    if any_chip.product != A2:
        with pytest.raises(ParamError, match="not supported on .*supported on: Atlas A2") as e:
            ops.moe_token_permute(x, indices, chip=any_chip)
        assert e.value.code == 161002
        return
    check(x, indices, chip=any_chip)


# --- argument rules ------------------------------------------------------------------------

def good(**change):
    args = dict(tokens=np.ones((4, 16), np.float16),
                indices=np.arange(8, dtype=np.int32).reshape(4, 2))
    args.update(change)
    return args


BAD_ARGS = {
    "tokens None": (good(tokens=None), 161001, "tokens is None"),
    "indices None": (good(indices=None), 161001, "indices is None"),
    "training product": (good(chip="atlas-training"), 161002, "not supported on atlas-training"),
    "tokens float64": (good(tokens=np.ones((4, 16))), 161002,
                       "tokens dtype float64 is not supported.*allowed: bfloat16"),
    "indices float32": (good(indices=np.ones((4, 2), np.float32)), 161002,
                        "indices dtype float32 is not supported.*allowed: int32, int64"),
    "tokens 1-D": (good(tokens=np.ones(4, np.float16)), 161002, "tokens has 1 dimensions"),
    "indices 3-D": (good(indices=np.zeros((4, 2, 1), np.int32)), 161002,
                    "indices has 3 dimensions"),
    "dim 0 differs": (good(indices=np.zeros((5, 2), np.int32)), 161002,
                      r"indices' dim 0 \(5\) must equal tokens' dim 0 \(4\)"),
    "topk 513": (good(tokens=np.ones((1, 4), np.float16), indices=np.zeros((1, 513), np.int32)),
                 161002, r"topK \(indices' dim 1\) = 513: allowed 1 to 512"),
    "topk 0": (good(indices=np.zeros((4, 0), np.int32)), 161002, "topK .* = 0"),
    "negative index": (good(indices=np.array([[0, 1], [2, -3], [4, 5], [6, 7]], np.int32)),
                       161002, r"indices element 3 = -3: expert indices must be 0 to 16777214"),
    "index too big": (good(indices=np.full((4, 2), 1 << 24, np.int64)), 161002,
                      "= 16777216: expert indices must be 0 to 16777214; 8 are outside"),
    "num out float": (good(num_out_tokens=2.5), 161002, "numOutTokens = 2.5: an integer"),
    "num out bool": (good(num_out_tokens=True), 161002, "numOutTokens = True"),
    "padded mode": (good(padded_mode=True), 161002, "paddedMode = True: only False"),
    "padded mode text": (good(padded_mode="no"), 161002, "paddedMode = 'no'"),
    "tokens strings": (good(tokens=np.array([["a"]])), 161002, "does not know"),
}


@pytest.mark.parametrize("case", list(BAD_ARGS))
def test_bad_argument_is_a_clear_param_error(case):
    args, code, match = BAD_ARGS[case]
    with pytest.raises(ParamError, match=match) as info:
        ops.moe_token_permute(**args)
    assert info.value.code == code


@pytest.mark.parametrize("option,match", [
    ({"numerics": False}, "numerics=False is not possible: the scalar reads each"),
    ({"mode": "fast"}, "mode 'fast': allowed timed, functional"),
    ({"chip": "ascend-999"}, "atlas-a2"),
])
def test_bad_run_option_is_a_clear_error(option, match):
    with pytest.raises(NpusimError, match=match):
        ops.moe_token_permute(**good(**option))


# --- tiling --------------------------------------------------------------------------------

def tiling_for(tokens=4096, topk=8, cols=7168, item=2, overrides=None):
    p = Problem(tokens=tokens, top_k=topk, cols=cols, num_out_tokens=tokens * topk, item=item)
    return moe_token_permute_tiling(npusim.load_chip(A2), p, overrides)


def test_index_copy_tiling_follows_the_host_code():
    """Tiling4IndexCopyCompute at UB 192 KB, 48 AIV cores, 4096 x 7168 bf16, top-8: rows of
    14336 bytes, UB / (2 x 14336 + 2 x 8 x 4) = 6 rows a copy-in, (UB - 6 x 2 x 14336) /
    (6 x 8 x 4) = 128 copy-ins of indices a batch; 4096 = 16 x 86 + 32 x 85 tokens."""
    t = tiling_for()
    assert (t.once_ub_token_nums, t.once_indices_token_nums, t.split_d) == (6, 768, False)
    assert (t.block_dim, t.front_core_num, t.core_calc_num, t.core_calc_tail) == (48, 16, 86, 85)
    few = tiling_for(tokens=5)
    assert (few.block_dim, few.front_core_num, few.core_calc_num) == (5, 5, 1)
    long = tiling_for(tokens=3, topk=2, cols=60000)
    assert long.split_d and long.one_token_once_move == 48640
    assert long.once_indices_token_nums == 256


@pytest.mark.parametrize("override", [{"block_dim": 7}, {"once_ub_token_nums": 1},
                                      {"once_ub_token_nums": 5, "block_dim": 3},
                                      {"sort_chunk": 32, "merge_window": 8}])
def test_overrides_change_the_schedule_not_the_answer(override):
    x, indices = routed(23, 4, 150, bfloat16, seed=12)
    r = check(x, indices, -9, tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


@pytest.mark.parametrize("override,match", [
    ({"split_d": True}, "split_d follows from the shape"),
    ({"block_dim": 0}, "block_dim = 0: .* allowed 1 to 48"),
    ({"block_dim": 49}, "allowed 1 to 48"),
    ({"once_ub_token_nums": 7}, "once_ub_token_nums = 7: allowed 1 to 6"),
    ({"sort_chunk": 33}, "sort_chunk = 33: a multiple of 32"),
    ({"merge_window": 100000}, "merge_window = 100000"),
    ({"colz": 1}, "unknown tiling field 'colz'"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        tiling_for(overrides=override)


def test_split_d_refuses_a_row_count():
    with pytest.raises(TilingError, match="moved in pieces"):
        tiling_for(tokens=3, topk=2, cols=60000, overrides={"once_ub_token_nums": 2})


# --- modes, trace, command, timing ---------------------------------------------------------

def test_modes_and_jitter_give_identical_bytes(tmp_path):
    x, indices = routed(30, 5, 200, bfloat16, seed=13)
    timed = ops.moe_token_permute(x, indices, num_out_tokens=-11)
    jittered = ops.moe_token_permute(x, indices, num_out_tokens=-11, jitter=(3, 40.0))
    for name in timed.outputs:
        assert_bit_equal(jittered.outputs[name], timed.outputs[name], name)
    assert jittered.cycles > timed.cycles
    check_trace(timed, tmp_path / "permute.json")


def test_run_command_checks_and_reports(tmp_path):
    out = subprocess.run([sys.executable, "-m", "npusim", "run", "moe_token_permute", "--shape",
                          "96x1000", "--param", "topk=4", "--param", "num_out_tokens=-30",
                          "--out", str(tmp_path / "p")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    for text in ("aclnnMoeTokenPermute", "permuteTokensOut: bit-identical to the golden",
                 "sortedIndicesOut: bit-identical", "num_out_tokens=354"):
        assert text in out.stdout


def test_index_copy_within_a_quarter_of_its_roofline():
    """512 tokens x 7168 bf16, top-8 of 256: the index copy reads each row once and writes it
    8 times; its time is within 1.25x of those bytes over the HBM bandwidth."""
    chip = npusim.load_chip(A2)
    x, indices = routed(512, 8, 7168, bfloat16, experts=256, seed=14)
    r = ops.moe_token_permute(x, indices, trace=False, sanitize=False)
    (copy,) = [k for k in r.stats["kernels"] if k["name"] == "MoeTokenPermute"]
    bound = (x.nbytes * 9 + indices.nbytes) / chip.hbm_bytes_per_s * chip.clock_hz
    assert bound <= copy["cycles"] <= 1.25 * bound, (copy["cycles"], bound)


def test_a_core_with_more_tokens_than_one_batch_of_indices():
    """48 x 1000 one-expert tokens of 16 fp32: 1000 tokens a core, their 4-byte indices in UB
    at once (CANN sizes that buffer in indices, not bytes; npusim in bytes)."""
    rng = np.random.default_rng(15)
    x = rng.standard_normal((48000, 16)).astype(np.float32)
    r = check(x, rng.integers(0, 8, 48000).astype(np.int32), trace=False)
    t = r.tiling
    assert (t.core_calc_num, t.once_ub_token_nums, t.once_indices_token_nums) == (1000, 1445,
                                                                                  2890)
    assert t.indices_ub == 2890 * 4 + 24
