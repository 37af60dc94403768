"""aclnnMoeTokenPermuteGrad: results against the golden and PyTorch, argument rules, tiling,
the aclnn two-phase port of the seed example, the command, timing."""

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
from npusim.cases.moe_token_permute_grad import moe_routing
from npusim.dtypes import bfloat16
from npusim.errors import NpusimError, ParamError, TilingError
from npusim.ops.moe.permute_grad_tiling import Problem, max_chunk, moe_token_permute_grad_tiling
from op_check import FLOOR, assert_bit_equal, check_op
from trace_check import check_trace

RTOL = {"float32": 1e-4, "float16": 1e-3, "bfloat16": 4e-3}
DTYPES = {"bfloat16": bfloat16, "float16": np.float16, "float32": np.float32}
A2 = "atlas-a2"


def routed(tokens, topk, hidden, dtype, *, drop=0.0, seed=0):
    """(permutedOutputGrad, sortedIndices) as MoeTokenPermute's forward would leave them."""
    rng = np.random.default_rng(seed)
    indices, rows = moe_routing(rng, tokens, topk, drop)
    grad = rng.standard_normal((rows, hidden), dtype=np.float32).astype(dtype)
    return grad, indices


def torch_autograd(grad, indices, *, num_topk, padded_mode=False):
    """The forward as MindSpeed writes it (index_select by argsort // topK) and its autograd:
    sortedIndices is the rank of each slot, so argsort(sortedIndices) is the forward's order."""
    tokens, hidden = indices.numel() // num_topk, grad.shape[1]
    first = torch.argsort(indices.long(), stable=True)
    x = torch.zeros(tokens, hidden, dtype=torch.float64, requires_grad=True)
    permuted = x.index_select(0, first[:grad.shape[0]] // num_topk)
    (dx,) = torch.autograd.grad(permuted, x, grad)
    return {"out": dx}


def torch_index_add(grad, indices, *, num_topk, padded_mode=False):
    """Any indices: out.index_add_ of every kept row, gathered by its index."""
    index = indices.long()
    keep = index < grad.shape[0]
    token = torch.arange(index.numel()) // num_topk
    out = torch.zeros(index.numel() // num_topk, grad.shape[1], dtype=torch.float64)
    return {"out": out.index_add_(0, token[keep], grad.index_select(0, index[keep]))}


def check(grad, indices, topk, reference=torch_index_add, chip=A2, **options):
    name = np.dtype(grad.dtype).name
    rtol = RTOL[name]
    ref_max = float(np.abs(golden.moe_token_permute_grad(grad, indices, num_topk=topk)
                           .astype(np.float64)).max(initial=0))
    fp32_sum = topk * 2.0 ** -23 * float(np.abs(grad.astype(np.float64)).max(initial=0))
    return check_op(ops.moe_token_permute_grad, golden.moe_token_permute_grad, reference,
                    (grad, indices), chip=chip, params={"num_topk": topk}, rtol=rtol,
                    atol=rtol * FLOOR * ref_max + fp32_sum, **options)


# --- results -------------------------------------------------------------------------------

def test_seed_example():
    """The seed's call: bf16 [[1, 2], [3, 4]], sortedIndices {0, 1}, topK 2 -> [[4, 6]]."""
    grad = np.array([[1, 2], [3, 4]], bfloat16)
    r = check(grad, np.array([0, 1], np.int32), 2)
    assert r.outputs["out"].tolist() == [[4, 6]] and r.outputs["out"].dtype == bfloat16
    assert r.cycles > 0


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_matches_autograd_of_the_forward(dtype, mode):
    grad, indices = routed(50, 6, 333, DTYPES[dtype], seed=1)
    check(grad, indices, 6, reference=torch_autograd, mode=mode)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_dropped_copies_are_skipped(dtype):
    """Half the copies dropped: tokens with none left get zeros, the first copy dropped and a
    later one kept starts from Duplicate(0)."""
    grad, indices = routed(60, 3, 100, DTYPES[dtype], drop=0.5, seed=2)
    r = check(grad, indices, 3, reference=torch_autograd)
    alive = (indices.reshape(-1, 3) < grad.shape[0])
    assert (~alive.any(axis=1)).any() and (~alive[:, 0] & alive[:, 1:].any(axis=1)).any()
    assert not r.outputs["out"][~alive.any(axis=1)].any()
    assert r.stats["instruction_counts"]["duplicate"] == int((~alive[:, 0]).sum())


def test_every_copy_dropped_gives_zeros():
    indices = np.arange(12, dtype=np.int32)
    r = check(np.zeros((0, 40), np.float16), indices, 4)
    assert r.outputs["out"].shape == (3, 40) and not r.outputs["out"].any()


def test_indices_need_not_be_a_permutation():
    """Repeated rows and indices past the rows: the kernel sums what the indices name."""
    rng = np.random.default_rng(3)
    grad = rng.standard_normal((7, 65)).astype(np.float32)
    indices = rng.integers(0, 10, 5 * 4).astype(np.int32)
    check(grad, indices, 4)


@settings(max_examples=15, deadline=None)
@given(tokens=st.integers(1, 40), topk=st.integers(1, 16), hidden=st.integers(1, 300),
       drop=st.sampled_from([0.0, 0.0, 0.2, 0.6]), dtype=st.sampled_from(list(DTYPES)),
       seed=st.integers(0, 2**31))
def test_any_routing(tokens, topk, hidden, drop, dtype, seed):
    hidden += hidden % 16 == 0                       # hidden sizes that are not multiples of 16
    grad, indices = routed(tokens, topk, hidden, DTYPES[dtype], drop=drop, seed=seed)
    r = check(grad, indices, topk, reference=torch_autograd)
    assert r.outputs["out"].shape == (tokens, hidden)


@pytest.mark.parametrize("dtype,hidden", [("bfloat16", 30001), ("float32", 16001)])
def test_rows_longer_than_ub_are_chunked(dtype, hidden):
    grad, indices = routed(3, 2, hidden, DTYPES[dtype], seed=4)
    r = check(grad, indices, 2)
    t = r.tiling
    assert t.hidden_splited_length == max_chunk(r.chip, grad.itemsize, 2)
    assert t.hidden_splited_num == hidden // t.hidden_splited_length
    assert t.hidden_splited_remain == hidden % t.hidden_splited_length > 0
    assert t.buffer_num == 2


def test_indices_batched_when_a_core_has_too_many():
    """topK 512 beside a 13312-element chunk: 4 tokens of indices a batch; 6 tokens on a core."""
    rng = np.random.default_rng(5)
    grad = rng.standard_normal((8, 13312)).astype(bfloat16)
    indices = rng.permutation(6 * 512).astype(np.int32)        # all but 8 copies dropped
    r = check(grad, indices, 512, tiling={"block_dim": 1})
    t = r.tiling
    assert (t.tokens_splited_length, t.tokens_splited_num, t.tokens_splited_remain) == (4, 1, 2)
    assert r.stats["instruction_counts"]["get_value"] == 6 * 512


def test_non_contiguous_inputs_are_copied_by_a_kernel():
    grad, indices = routed(20, 4, 64, np.float16, seed=6)
    wide = np.zeros((grad.shape[0], 2 * 64), np.float16)
    wide[:, ::2] = grad
    r = check(wide[:, ::2], indices, 4)
    names = [k["name"] for k in r.stats["kernels"]]
    assert names[-1] == "MoeTokenPermuteGrad" and names[0].startswith("Contiguous")


@pytest.mark.parametrize("shape", [(0, 8), (12, 0)])
def test_empty_tensors(shape):
    indices = np.arange(shape[0] and 12, dtype=np.int32) % max(shape[0], 1)
    r = ops.moe_token_permute_grad(np.zeros(shape, np.float32), indices, num_topk=4)
    assert r.outputs["out"].shape == (indices.size // 4, shape[1]) and r.cycles == 0


def test_every_a2_model_and_no_other(any_chip):
    grad, indices = routed(100, 4, 70, np.float16, drop=0.1, seed=11)
    if any_chip.product != A2:
        with pytest.raises(ParamError, match="supported products: atlas-a2") as info:
            ops.moe_token_permute_grad(grad, indices, num_topk=4, chip=any_chip)
        assert info.value.code == 161002
        return
    r = check(grad, indices, 4, chip=any_chip)
    assert r.tiling.block_dim == min(any_chip.vector_core_count, 100)


# --- argument rules (Python API) -----------------------------------------------------------

def good(**change):
    args = dict(permuted_output_grad=np.ones((8, 16), np.float16),
                sorted_indices=np.arange(8, dtype=np.int32), num_topk=2)
    args.update(change)
    return args


BAD_ARGS = {
    "grad None": (good(permuted_output_grad=None), 161001, "permutedOutputGrad is None"),
    "indices None": (good(sorted_indices=None), 161001, "sortedIndices is None"),
    "atlas-training": (good(chip="atlas-training"), 161002,
                       "not supported on atlas-training .*supported products: atlas-a2 "
                       r"\(Atlas A2"),
    "grad float64": (good(permuted_output_grad=np.ones((8, 16))), 161002,
                     "permutedOutputGrad dtype float64 is not supported.*allowed: bfloat16"),
    "grad int32": (good(permuted_output_grad=np.ones((8, 16), np.int32)), 161002,
                   "dtype int32 is not supported"),
    "indices int64": (good(sorted_indices=np.arange(8)), 161002,
                      "sortedIndices dtype int64 is not supported.*allowed: int32"),
    "indices float32": (good(sorted_indices=np.arange(8, dtype=np.float32)), 161002,
                        "sortedIndices dtype float32"),
    "grad 1-D": (good(permuted_output_grad=np.ones(16, np.float16)), 161002,
                 "has 1 dimensions .* must be 2-D"),
    "grad 3-D": (good(permuted_output_grad=np.ones((2, 4, 16), np.float16)), 161002,
                 "has 3 dimensions"),
    "indices 2-D": (good(sorted_indices=np.arange(8, dtype=np.int32).reshape(4, 2)), 161002,
                    "sortedIndices has 2 dimensions"),
    "topk 0": (good(num_topk=0), 161002, "numTopk = 0: allowed 1 to 512"),
    "topk negative": (good(num_topk=-3), 161002, "numTopk = -3: allowed 1 to 512"),
    "topk 513": (good(num_topk=513), 161002, "numTopk = 513: allowed 1 to 512"),
    "topk float": (good(num_topk=2.0), 161002, "numTopk = 2.0: an integer is required"),
    "topk bool": (good(num_topk=True), 161002, "numTopk = True: an integer"),
    "topk None": (good(num_topk=None), 161002, "numTopk = None: an integer"),
    "length not a multiple": (good(num_topk=3), 161002, "8 elements, not a multiple of "
                              "numTopk = 3"),
    "padded mode": (good(padded_mode=True), 161002, "paddedMode = True: only False"),
    "padded mode not bool": (good(padded_mode="no"), 161002, "paddedMode = 'no'"),
    "negative index": (good(sorted_indices=np.array([0, 1, 2, -4, 4, 5, -1, 7], np.int32)),
                       161002, r"sortedIndices\[3\] = -4: indices must be >= 0.*2 are negative"),
    "grad not an array": (good(permuted_output_grad=object()), 161002, "not an array|does not"),
    "grad strings": (good(permuted_output_grad=np.array([["a"]])), 161002, "does not know"),
}


@pytest.mark.parametrize("case", list(BAD_ARGS))
def test_bad_argument_is_a_clear_param_error(case):
    args, code, match = BAD_ARGS[case]
    with pytest.raises(ParamError, match=match) as info:
        ops.moe_token_permute_grad(**args)
    assert info.value.code == code


@pytest.mark.parametrize("option,match", [
    ({"numerics": False}, "numerics=False is not possible: the scalar reads each sortedIndices"),
    ({"mode": "fast"}, "mode 'fast': allowed timed, functional"),
    ({"chip": "ascend-999"}, "atlas-a2.*atlas-training"),
])
def test_bad_run_option_is_a_clear_error(option, match):
    with pytest.raises(NpusimError, match=match):
        ops.moe_token_permute_grad(**good(**option))


# --- tiling --------------------------------------------------------------------------------

def tiling_for(tokens=4096, topk=8, hidden=4096, item=2, rows=None, overrides=None):
    chip = npusim.load_chip(A2)
    p = Problem(tokens=tokens, top_k=topk, num_out_tokens=rows or tokens * topk,
                hidden=hidden, item=item)
    return moe_token_permute_grad_tiling(chip, p, overrides)


def test_largest_chunks_follow_the_host_code():
    """kernels.md §5(b) at UB 192 KB: bf16/fp16 13312 / 11776 / 10240 for 2 / 3 / 4 buffers,
    fp32 15872 / 11776 / 9216."""
    chip = npusim.load_chip(A2)
    assert [max_chunk(chip, 2, b) for b in (2, 3, 4)] == [13312, 11776, 10240]
    assert [max_chunk(chip, 4, b) for b in (2, 3, 4)] == [15872, 11776, 9216]


@pytest.mark.parametrize("hidden,item,depth", [(4096, 2, 4), (10240, 2, 4), (10241, 2, 3),
                                               (11776, 2, 3), (13000, 2, 2), (7168, 4, 4),
                                               (9300, 4, 3), (15000, 4, 2)])
def test_queue_depth_is_the_deepest_that_fits(hidden, item, depth):
    t = tiling_for(hidden=hidden, item=item)
    assert (t.buffer_num, t.hidden_splited_length, t.hidden_splited_num) == (depth, hidden, 1)


def test_tokens_split_over_the_cores_as_the_host_code():
    t = tiling_for(tokens=8192)
    assert (t.block_dim, t.tokens_core_length, t.tokens_core_remain) == (48, 170, 32)
    assert (t.tokens_splited_length, t.tokens_splited_num, t.tokens_splited_remain) == \
        (170, 1, 0)
    few = tiling_for(tokens=5)
    assert (few.block_dim, few.tokens_core_length, few.tokens_core_remain) == (5, 1, 0)


def test_overriding_one_field_derives_the_others():
    deep = tiling_for(hidden=12000, overrides={"buffer_num": 4})     # chunk re-derived
    assert (deep.hidden_splited_length, deep.hidden_splited_num,
            deep.hidden_splited_remain) == (10240, 1, 1760)
    short = tiling_for(hidden=12000, overrides={"hidden_splited_length": 5000})
    assert short.buffer_num == 4 and (short.hidden_splited_num,
                                      short.hidden_splited_remain) == (2, 2000)
    cores = tiling_for(tokens=100, overrides={"block_dim": 7})
    assert (cores.tokens_core_length, cores.tokens_core_remain) == (14, 2)


@pytest.mark.parametrize("override", [
    {"block_dim": 3}, {"buffer_num": 1}, {"buffer_num": 2, "hidden_splited_length": 40},
    {"hidden_splited_length": 33}, {"block_dim": 5, "tokens_splited_length": 2},
    {"block_dim": 2, "tokens_splited_length": 6},
])
def test_overrides_change_the_schedule_not_the_answer(override):
    grad, indices = routed(23, 4, 150, bfloat16, drop=0.1, seed=7)
    r = check(grad, indices, 4, tiling=override)
    for key, value in override.items():
        assert getattr(r.tiling, key) == value


@pytest.mark.parametrize("override,match", [
    ({"hidden_split": 8}, "unknown tiling field 'hidden_split'; fields: hidden_size"),
    ({"hidden_splited_num": 2}, "hidden_splited_num follows from the shape"),
    ({"block_dim": 0}, "block_dim = 0: .* allowed 1 to 48"),
    ({"block_dim": 49}, "allowed 1 to 48"),
    ({"buffer_num": 5}, "buffer_num = 5: allowed 1 to 4"),
    ({"buffer_num": 0}, "buffer_num = 0"),
    ({"hidden_splited_length": 0}, "hidden_splited_length = 0: allowed 1 to the hidden size"),
    ({"hidden_splited_length": 12000, "buffer_num": 4},
     "hidden_splited_length = 12000 with buffer_num = 4 needs .* at most 10240 elements fit"),
    ({"hidden_splited_length": 14000}, "with buffer_num = 2 .* at most 13312"),
    ({"tokens_splited_length": 0}, "tokens_splited_length = 0: a core has at most 86"),
    ({"tokens_splited_length": 87}, "allowed 1 to 86"),
    ({"buffer_num": 2.5}, "an integer is required"),
])
def test_bad_overrides_say_why(override, match):
    with pytest.raises(TilingError, match=match):
        tiling_for(hidden=14000, overrides=override)


def test_indices_batch_too_big_for_ub_says_what_fits():
    with pytest.raises(TilingError, match="tokens_splited_length = 9 needs 18432 bytes .* "
                                          "at most 4 tokens fit"):
        tiling_for(tokens=10, topk=512, hidden=13312, overrides={"tokens_splited_length": 9,
                                                                 "block_dim": 1})


# --- modes, jitter, trace, aclnn -----------------------------------------------------------

def test_modes_and_jitter_give_identical_bytes(tmp_path):
    grad, indices = routed(30, 5, 200, bfloat16, drop=0.3, seed=8)
    timed = ops.moe_token_permute_grad(grad, indices, num_topk=5)
    functional = ops.moe_token_permute_grad(grad, indices, num_topk=5, mode="functional")
    jittered = ops.moe_token_permute_grad(grad, indices, num_topk=5, jitter=(3, 40.0))
    assert_bit_equal(functional.outputs["out"], timed.outputs["out"])
    assert_bit_equal(jittered.outputs["out"], timed.outputs["out"])
    assert jittered.cycles > timed.cycles
    check_trace(timed, tmp_path / "moe.json")


def create_tensor(host, dtype):
    host = np.asarray(host, dtype=bfloat16 if dtype == acl.ACL_BF16 else dtype)
    ret, addr = acl.aclrtMalloc(host.nbytes)
    assert ret == acl.ACL_SUCCESS
    assert acl.aclrtMemcpy(addr, host.nbytes, host, host.nbytes,
                           acl.ACL_MEMCPY_HOST_TO_DEVICE) == acl.ACL_SUCCESS
    shape = list(host.shape)
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    return addr, acl.aclCreateTensor(shape, dtype, strides, 0, acl.ACL_FORMAT_ND, shape, addr)


def test_aclnn_seed_example():
    """The seed's C example, step by step: bf16 grad, int32 indices, topK 2, paddedMode false."""
    assert acl.aclrtSetDevice(0) == acl.ACL_SUCCESS
    ret, stream = acl.aclrtCreateStream()
    _, grad = create_tensor([[1, 2], [3, 4]], acl.ACL_BF16)
    _, indices = create_tensor([0, 1], acl.ACL_INT32)
    out_addr, out = create_tensor([[0, 0]], acl.ACL_BF16)
    ret, workspace_size, executor = acl.aclnnMoeTokenPermuteGradGetWorkspaceSize(
        grad, indices, 2, False, out)
    assert ret == acl.ACL_SUCCESS and workspace_size == 0
    assert acl.aclnnMoeTokenPermuteGrad(None, workspace_size, executor, stream) == acl.ACL_SUCCESS
    assert acl.aclrtSynchronizeStream(stream) == acl.ACL_SUCCESS
    result = np.zeros(2, bfloat16)
    assert acl.aclrtMemcpy(result, 4, out_addr, 4, acl.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert result.tolist() == [4, 6] and stream.results[-1].cycles > 0


@pytest.mark.parametrize("change,code,match", [
    ({"out": None}, 161001, "out is None"),
    ({"out": (np.zeros((2, 2), bfloat16),)}, 161002, r"out is bfloat16 \(2, 2\); it must be "
                                                      r"bfloat16 \(1, 2\)"),
    ({"out": (np.zeros((1, 2), np.float32),)}, 161002, "out is float32"),
    ({"numTopk": 600}, 161002, "numTopk = 600"),
    ({"paddedModeOptional": True}, 161002, "paddedMode = True"),
    ({"chip": "atlas-training"}, 161002, "not supported on atlas-training"),
])
def test_aclnn_statuses(change, code, match):
    chip = change.pop("chip", A2)
    assert acl.aclrtSetDevice(0, chip=chip) == acl.ACL_SUCCESS
    try:
        args = dict(permutedOutputGrad=acl.Tensor(np.array([[1, 2], [3, 4]], bfloat16)),
                    sortedIndices=acl.Tensor(np.array([0, 1], np.int32)), numTopk=2,
                    paddedModeOptional=False, out=acl.Tensor(np.zeros((1, 2), bfloat16)))
        if "out" in change:
            out = change.pop("out")
            args["out"] = None if out is None else acl.Tensor(out[0])
        args.update(change)
        ret, _, executor = acl.aclnnMoeTokenPermuteGradGetWorkspaceSize(**args)
        assert ret == code and executor is None
        assert re.search(match, acl.aclGetRecentErrMsg())
    finally:
        acl.aclrtSetDevice(0)


# --- the command ---------------------------------------------------------------------------

def npusim_cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "npusim", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def test_run_command_checks_and_reports(tmp_path):
    out = npusim_cli("run", "moe_token_permute_grad", "--shape", "96x1000", "--param", "topk=4",
                     "--param", "drop=0.25", "--tiling", "buffer_num=3",
                     "--out", str(tmp_path / "moe"))
    assert out.returncode == 0, out.stderr
    for text in ("aclnnMoeTokenPermuteGrad", "out: bit-identical to the golden", "roofline",
                 "buffer_num=3", "num_out_tokens=288"):
        assert text in out.stdout


CLI_BAD = {
    "training product": (["--chip", "atlas-training"], "not supported on atlas-training"),
    "topk 0": (["--param", "topk=0"], "numTopk = 0: allowed 1 to 512"),
    "topk 1000": (["--param", "topk=1000"], "numTopk = 1000: allowed 1 to 512"),
    "topk not an int": (["--param", "topk=x"], "parameter topk='x'"),
    "drop above 1": (["--param", "drop=1.5"], "a fraction from 0 to 1"),
    "shape 3-D": (["--shape", "4x4x4"], "TOKENS x HIDDEN, got 3 dimensions"),
    "too large": (["--shape", "65536x8192", "--param", "topk=512"], "more than"),
    "dtype int8": (["--dtype", "int8"], "does not take dtype"),
    "derived tiling": (["--tiling", "top_k=2"], "top_k follows from the shape"),
    "buffer_num 9": (["--tiling", "buffer_num=9"], "buffer_num = 9: allowed 1 to 4"),
    "chunk of 0": (["--tiling", "hidden_splited_length=0"],
                            "hidden_splited_length = 0"),
}


@pytest.mark.parametrize("case", list(CLI_BAD))
def test_command_bad_input_is_one_line_and_no_files(case, tmp_path):
    args, message = CLI_BAD[case]
    out = npusim_cli("run", "moe_token_permute_grad", "--shape", "64x256", *args,
                     "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert out.returncode != 0 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert list(tmp_path.iterdir()) == []


# --- timing --------------------------------------------------------------------------------

def hbm_bound_us(grad, indices, tokens) -> float:
    chip = npusim.load_chip(A2)
    nbytes = grad.nbytes + indices.nbytes + tokens * grad.shape[1] * grad.itemsize
    return nbytes / chip.hbm_bytes_per_s * 1e6


def test_8192_tokens_top8_4096_bf16_within_one_and_a_half_rooflines():
    indices, rows = moe_routing(np.random.default_rng(9), 8192, 8, 0.0)
    grad = np.zeros((rows, 4096), bfloat16)        # the values do not change the schedule
    r = ops.moe_token_permute_grad(grad, indices, num_topk=8, trace=False, sanitize=False)
    bound = hbm_bound_us(grad, indices, 8192)
    assert bound <= r.time_us <= 1.5 * bound, (r.time_us, bound)
    assert r.tiling.buffer_num == 4 and r.tiling.block_dim == 48


@pytest.mark.parametrize("chip,cycles", [("atlas-a2", 23258), ("atlas-a2-910b4", 26160)])
def test_pinned_cycles(chip, cycles):
    """One exact cycle count per A2 model for 256 tokens x top-8 x 1024 bf16; update
    deliberately when the model changes."""
    grad, indices = routed(256, 8, 1024, bfloat16, seed=11)
    r = ops.moe_token_permute_grad(grad, indices, num_topk=8, chip=chip, trace=False,
                                   sanitize=False)
    assert r.cycles == cycles


def test_time_is_linear_once_every_core_is_busy():
    times = []   # the kernels' own cycles: the per-kernel fixed costs do not scale
    for tokens in (480, 960):
        grad, indices = routed(tokens, 4, 1024, bfloat16, seed=12)
        r = ops.moe_token_permute_grad(grad, indices, num_topk=4, trace=False, sanitize=False)
        times.append(r.cycles - sum(k["launch_cycles"] + k["wait_cycles"]
                                    for k in r.stats["kernels"]))
    assert times[1] / times[0] == pytest.approx(2.0, rel=0.08)


def test_deeper_row_queue_is_faster():
    grad, indices = routed(480, 8, 2048, bfloat16, seed=10)
    times = [ops.moe_token_permute_grad(grad, indices, num_topk=8, trace=False, sanitize=False,
                                        tiling={"buffer_num": b}).time_us for b in (1, 2, 4)]
    assert times[0] > times[1] > times[2], times
