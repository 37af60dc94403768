"""Every kernel the project has: its trace passes the schema check, and a rerun with seeded
random extra latency on every pipe (jitter) gives bit-identical outputs."""

import numpy as np
import pytest

import npusim
from kernels import run_copy
from npusim import ops
from npusim.cases.run import SIZE_KEYS
from npusim.dtypes import bfloat16
from npusim.micro.matmul import run_matmul
from npusim.micro.stream import run_stream
from npusim.micro.vector import run_vector
from op_check import assert_bit_equal
from trace_check import check_trace


def silu_strided(chip, **options):
    rng = np.random.default_rng(11)
    dy = rng.uniform(-3, 3, (33, 70)).astype(np.float16).T
    x = rng.uniform(-9, 9, (70, 33)).astype(np.float16)[:, ::-1]
    return ops.silu_backward(dy, x, chip=chip, tiling={"tile_length": 256}, **options)


def conv(chip, *, deterministic=False, transposed=False, **options):
    """TransData, Conv2DBackpropInput, Conv2DBackpropFilter (atomic or deterministic partial
    sums), the dw reduction and ReduceSum for gradBias, in one run."""
    rng = np.random.default_rng(12)
    x = rng.uniform(-1, 1, (2, 5, 9, 8)).astype(np.float16)
    w = rng.uniform(-1, 1, (5, 4, 3, 3) if transposed else (4, 5, 3, 3)).astype(np.float16)
    dy_shape = (2, 4, 17, 15) if transposed else (2, 4, 5, 4)
    dy = rng.uniform(-1, 1, dy_shape).astype(np.float16)
    return ops.convolution_backward(
        dy, x, w, bias_sizes=[4], stride=[2, 2], padding=[1, 1], dilation=[1, 1],
        transposed=transposed, chip=chip,
        tiling={"dw_k_parts": 2, "deterministic": deterministic}, **options)


def conv_kernel_rows(chip, **options):
    """A 9 x 9 kernel cut by kernel rows: TransData pieces of a few taps, dx chunks of 3 kernel
    rows, dw N blocks of 2 kernel rows in one channel block."""
    rng = np.random.default_rng(16)
    x = rng.uniform(-1, 1, (1, 3, 12, 11)).astype(np.float16)
    w = rng.uniform(-1, 1, (5, 3, 9, 9)).astype(np.float16)
    dy = rng.uniform(-1, 1, (1, 5, 6, 5)).astype(np.float16)
    return ops.convolution_backward(
        dy, x, w, bias_sizes=[5], stride=[1, 1], padding=[1, 1], dilation=[1, 1], chip=chip,
        tiling={"dx_step_kh": 3, "dw_step_kh": 2, "dw_k_parts": 1}, **options)


def conv_narrow_padded(chip, **options):
    """1-D, k = 49 dilated 7: narrow chunks (the map columns each block reaches) and window
    padding beyond LoadData3D's 255 held as zeros in L1."""
    rng = np.random.default_rng(17)
    x = rng.uniform(-1, 1, (1, 3, 400)).astype(np.float16)
    w = rng.uniform(-1, 1, (5, 3, 49)).astype(np.float16)
    dy = rng.uniform(-1, 1, (1, 5, 72)).astype(np.float16)
    return ops.convolution_backward(
        dy, x, w, bias_sizes=[5], stride=[2], padding=[40], dilation=[7], output_padding=[0],
        chip=chip, tiling={"narrow": True, "base_m": 64, "dw_k_parts": 1}, **options)


def conv_3d(chip, **options):
    """3-D, K split over cores: Conv3DBackpropFilterV2 zeroes its output, SyncAll, then adds
    atomically (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("3-D convolution backward runs on Atlas A2 only")
    rng = np.random.default_rng(18)
    x = rng.uniform(-1, 1, (2, 3, 4, 5, 5)).astype(np.float16)
    w = rng.uniform(-1, 1, (4, 3, 3, 3, 3)).astype(np.float16)
    dy = rng.uniform(-1, 1, (2, 4, 4, 5, 5)).astype(np.float16)
    return ops.convolution_backward(
        dy, x, w, bias_sizes=[4], stride=[1, 1, 1], padding=[1, 1, 1], dilation=[1, 1, 1],
        output_padding=[0, 0, 0], chip=chip, tiling={"dw_k_parts": 2}, **options)


def conv_forward(chip, **options):
    """The forward: TransData (input, weight), Conv2D with a 7 x 7 stride-2 window on odd
    channels and sizes, TransData (output) with the cast back to FLOAT (Conv2D writes fp16)."""
    rng = np.random.default_rng(19)
    x = rng.uniform(-1, 1, (2, 3, 13, 11)).astype(np.float32)
    w = rng.uniform(-1, 1, (5, 3, 7, 7)).astype(np.float32)
    return ops.convolution(x, w, stride=[2, 2], padding=[3, 3], dilation=[1, 1],
                           cube_math_type=2, chip=chip, **options)


def moe(chip, **options):
    """MoeTokenPermuteGrad with dropped copies, a chunked row and batched indices (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnMoeTokenPermuteGrad runs on Atlas A2 only")
    rng = np.random.default_rng(13)
    grad = rng.uniform(-1, 1, (40, 90)).astype(np.float16)
    indices = rng.permutation(64).astype(np.int32)
    return ops.moe_token_permute_grad(grad, indices, num_topk=4, chip=chip, tiling={
        "block_dim": 3, "hidden_splited_length": 40, "tokens_splited_length": 2}, **options)


def moe_permute(chip, split_d=False, **options):
    """MoeTokenPermute: Cast of int64 indices, two Sorts in chunks and merges, the index copy
    with dropped copies (or a row moved in pieces) (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnMoeTokenPermute runs on Atlas A2 only")
    rng = np.random.default_rng(23)
    tokens, hidden = (3, 50001) if split_d else (70, 90)
    x = rng.uniform(-1, 1, (tokens, hidden)).astype(np.float16)
    indices = rng.integers(0, 6, (tokens, 4))
    return ops.moe_token_permute(x, indices, num_out_tokens=-5, chip=chip, tiling={
        "sort_chunk": 64, "merge_window": 16, "block_dim": 5}, **options)


def moe_unpermute(chip, grad=False, probs=True, **options):
    """MoeTokenUnpermute with bf16 probs (cast, skipped zero probs) or MoeTokenUnpermuteGrad
    (the probs kernel's ping-pong buffers and reductions, or the scatter) (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnMoeTokenUnpermute(Grad) runs on Atlas A2 only")
    rng = np.random.default_rng(24)
    k = 4 if probs else 1
    x = rng.uniform(-1, 1, (50 * k - 7, 600)).astype(bfloat16)
    indices = rng.permutation(50 * k).astype(np.int32)
    p = rng.uniform(0, 1, (50, k)).astype(bfloat16) if probs else None
    if p is not None:
        p[3, 1] = 0
    if not grad:
        return ops.moe_token_unpermute(x, indices, p, chip=chip, tiling={"block_dim": 4},
                                       **options)
    dy = rng.uniform(-1, 1, (50, 600)).astype(bfloat16)
    return ops.moe_token_unpermute_grad(x, dy, indices, p, chip=chip, **options)


def cross_entropy(chip, **options):
    """CrossEntropyLossGrad, mean with a weight: Contiguous(logProb), row batches, chunks and a
    tail, an ignored row, the workspace and SyncAll (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnCrossEntropyLossGrad runs on Atlas A2 only")
    rng = np.random.default_rng(14)
    log_prob = -rng.uniform(0, 8, (600, 20)).astype(np.float16).T
    target = rng.integers(0, 600, 20)
    target[3] = -100
    return ops.cross_entropy_loss_grad(
        np.array(0.5, np.float16), log_prob, target, rng.uniform(0.5, 2, 600).astype(np.float32),
        chip=chip, tiling={"block_dim": 4, "row_batch": 2, "col_chunk": 256}, **options)




def cross_entropy_forward(chip, **options):
    """CrossEntropyLoss, mean with a weight: Contiguous(input), chunked rows (three passes),
    row batches, the pick Gathers, the workspace and SyncAll (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnCrossEntropyLoss runs on Atlas A2 only")
    rng = np.random.default_rng(23)
    x = rng.uniform(-4, 4, (300, 20)).astype(np.float16).T
    target = rng.integers(0, 300, 20)
    target[3] = -100
    return ops.cross_entropy_loss(x, target, rng.uniform(0.5, 2, 300).astype(np.float32),
                                  chip=chip, tiling={"block_dim": 4, "row_batch": 2,
                                                     "col_chunk": 256}, **options)


def foreach_add(chip, **options):
    """ForeachAddList on bf16 (A2 only): small tiles crossing tensor ends, casts through fp32."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnForeachAddListV2 runs on Atlas A2 only")
    rng = np.random.default_rng(24)
    a = [rng.uniform(-2, 2, n).astype(bfloat16) for n in (700, 33, 1500)]
    b = [rng.uniform(-2, 2, n).astype(bfloat16) for n in (700, 33, 1500)]
    return ops.foreach_add_list_v2(a, b, -0.1, chip=chip,
                                   tiling={"block_dim": 3, "tile_length": 512}, **options)

EMB_VARIANTS = {"atlas-a2": {"sorted": "sorted", "default": None, "deterministic":
                             "deterministic"},
                "atlas-training": {"sorted": "v1", "default": "v1", "deterministic": "v1"}}


def embedding(chip, kind, **options):
    """EmbeddingDenseBackward: Zipf-skewed int64 indices (Cast), padding, runs across cores and
    flushes; ``default`` is fp16 grads (Cast in and out) with scale (small-dim and the scale
    pass on A2). Integer grads make the atomic sums exact in any order, except for the
    single-writer ``deterministic`` kind (v1 with scale on training), which uses any values."""
    product = npusim.load_chip(chip).product
    rng = np.random.default_rng(15)
    idx = (rng.zipf(1.3, (3, 50)) - 1) % 11
    det = kind == "deterministic"
    shape = (3, 50, 96 if kind == "default" else 600)
    grad = rng.standard_normal(shape) if det else rng.integers(-4, 5, shape)
    dtype = np.float16 if kind == "default" else np.float32
    tiling = {"block_dim": 5} | ({"dim_chunk": 256} if kind == "sorted" else {})
    return ops.embedding_dense_backward(
        grad.astype(dtype), idx, num_weights=11, padding_idx=2, chip=chip,
        scale_grad_by_freq=kind != "sorted" and (product == "atlas-a2" or det),
        variant=EMB_VARIANTS[product][kind],
        tiling=tiling, **options)

def rms_norm(chip, grad=False, **options):
    """RmsNorm (Contiguous(x), rstd batches of 8 rows over 3 cores) or RmsNormGrad (dgamma
    through the workspace after SyncAll) (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnRmsNorm and aclnnRmsNormGrad run on Atlas A2 only")
    rng = np.random.default_rng(19)
    x = rng.standard_normal((100, 30)).astype(np.float16).T
    gamma = rng.standard_normal(100).astype(np.float16)
    tiling = {"block_dim": 3, "row_factor": 8}
    if not grad:
        return ops.rms_norm(x, gamma, chip=chip, tiling=tiling, **options)
    dy = rng.standard_normal((30, 100)).astype(np.float16)
    rstd = rng.uniform(0.5, 2, 30).astype(np.float32)
    return ops.rms_norm_grad(dy, x, rstd, gamma, chip=chip, tiling=tiling, **options)


def swi_glu(chip, grad=False, **options):
    """SwiGlu / SwiGluGrad: several rows a tile (strided halves) and chunked rows (A2 only)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnSwiGlu and aclnnSwiGluGrad run on Atlas A2 only")
    rng = np.random.default_rng(20)
    x = rng.standard_normal((40, 2, 150)).astype(bfloat16)
    tiling = {"block_dim": 4, "tile_length": 512}
    if not grad:
        return ops.swi_glu(x, dim=1, chip=chip, tiling=tiling, **options)
    y = rng.standard_normal((40, 1, 150)).astype(bfloat16)
    return ops.swi_glu_grad(y, x, dim=1, chip=chip, tiling=tiling, **options)


def elementwise(chip, **options):
    """The elementwise template: ThresholdGradV2D on a transposed gradOutput (Contiguous), many
    double-buffered tiles over 5 cores and a byte-exact tail."""
    rng = np.random.default_rng(19)
    dy = rng.uniform(-3, 3, (37, 70)).astype(np.float16).T
    x = rng.uniform(-3, 3, (70, 37)).astype(np.float16)
    return ops.threshold_backward(dy, x, 0.5, chip=chip, tiling={
        "tile_length": 256, "buffer_num": 2, "block_dim": 5}, **options)


def add_two_kernels(chip, **options):
    """aclnnAdd with alpha on bf16: Mul, then Add (A2 only: bf16)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("bfloat16 runs on Atlas A2 only")
    rng = np.random.default_rng(20)
    a, b = (rng.uniform(-2, 2, 3001).astype(npusim.dtypes.bfloat16) for _ in range(2))
    return ops.add(a, b, 0.75, chip=chip, tiling={"tile_length": 512}, **options)


def matmul_row_b(chip, **options):
    """aclnnMatmul, fp32 with USE_FP16: Casts around the CATLASS-shaped GEMM, RowMajor B, a k
    that is not a whole fractal (A2); Casts, TransData to and from FRACTAL_NZ around MatMulV2,
    fp16 in and fp32 out (Atlas training)."""
    rng = np.random.default_rng(21)
    a = rng.uniform(-1, 1, (40, 300)).astype(np.float32)
    b = rng.uniform(-1, 1, (300, 70)).astype(np.float32)
    tiling = {"l1_k": 128, "block_dim": 2}
    if npusim.load_chip(chip).product != "atlas-a2":
        tiling = {"l1_k": 128, "base_k": 64, "block_m": 1, "block_n": 2}
    return ops.matmul(a, b, cube_math_type=2, chip=chip, tiling=tiling, **options)


def matmul_nd_transposed(chip, **options):
    """aclnnMatmul on the Atlas training series, fp16 aligned: MatMulV2 reads ND in place (a
    transposed self), the L0C -> UB -> Cast -> MTE3 way out in ND rows."""
    if npusim.load_chip(chip).product != "atlas-training":
        pytest.skip("MatMulV2 runs on the Atlas training series")
    rng = np.random.default_rng(23)
    a = rng.uniform(-1, 1, (64, 48)).astype(np.float16).T
    b = rng.uniform(-1, 1, (64, 80)).astype(np.float16)
    return ops.matmul(a, b, chip=chip, tiling={"base_k": 32, "l1_k": 32}, **options)


def matmul_split_k(chip, **options):
    """aclnnMatmul's split-K route on the Atlas training series: MemSet, MatMulV2 with two K
    parts adding fp32 atomically (two partials onto zeros: any order, the same bits), TransData
    in fp32, Cast."""
    if npusim.load_chip(chip).product != "atlas-training":
        pytest.skip("MatMulV2 runs on the Atlas training series")
    rng = np.random.default_rng(24)
    a = rng.uniform(-1, 1, (20, 600)).astype(np.float16)
    b = rng.uniform(-1, 1, (600, 30)).astype(np.float16)
    return ops.matmul(a, b, chip=chip, tiling={"k_parts": 2, "block_m": 1, "block_n": 1},
                      **options)


def grouped(chip, weight_grad=False, **options):
    """GroupedMatmul (A2 only): bf16 experts of 0, odd and several blocks' rows over 5 cores,
    the weight transposed (dX); or the weight gradient (groupType 2: ColumnMajor x, odd k)."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("grouped_matmul runs on Atlas A2 only")
    rng = np.random.default_rng(23)
    ends = np.array([40, 40, 203, 300], np.int64)
    tiling = {"l1_m": 64, "l1_n": 64, "l1_k": 64, "block_dim": 5}
    if weight_grad:
        x = rng.uniform(-1, 1, (300, 48)).astype(bfloat16).T
        dy = rng.uniform(-1, 1, (300, 70)).astype(bfloat16)
        return ops.grouped_matmul(x, dy, ends, group_type=2, chip=chip, tiling=tiling,
                                  **options)
    x = rng.uniform(-1, 1, (300, 96)).astype(bfloat16)
    w = rng.uniform(-1, 1, (4, 80, 96)).astype(bfloat16).transpose(0, 2, 1)
    return ops.grouped_matmul(x, w, ends, chip=chip, tiling=tiling, **options)


def gating(chip, **options):
    """MoeGatingTopKSoftmax (A2 only): bf16 router logits, k not a whole block (padded slots,
    DataCopyPad out), rows over 5 cores in batches of 3."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnMoeGatingTopKSoftmax runs on Atlas A2 only")
    x = np.random.default_rng(24).standard_normal((37, 70)).astype(bfloat16)
    return ops.moe_gating_top_k_softmax(x, k=5, chip=chip, tiling={"block_dim": 5,
                                                                  "row_factor": 3}, **options)


def pool(chip, backward=False, **options):
    """The (1, 1) adaptive average pool: ReduceMean with WholeReduceSum rows over 3 cores in
    tiles of 16 rows; backward: Fill (the elementwise template), then Brcb and Mul."""
    rng = np.random.default_rng(22)
    x = rng.uniform(-2, 2, (5, 20, 7, 7)).astype(np.float16)
    tiling = {"tile_rows": 16, "block_dim": 3}
    if backward:
        dy = rng.uniform(-2, 2, (5, 20, 1, 1)).astype(np.float16)
        return ops.adaptive_avg_pool2d_backward(dy, x, chip=chip, tiling=tiling, **options)
    return ops.adaptive_avg_pool2d(x, (1, 1), chip=chip, tiling=tiling, **options)


def batch_norm(chip, backward=False, channels=20, **options):
    """BatchNorm: TransData, BNTrainingReduce, BNTrainingUpdate, TransData (or A2's BatchNormV3
    for 64 channels); backward: BNTrainingUpdateGrad and BNTrainingReduceGrad, parts of N."""
    rng = np.random.default_rng(23)
    x = rng.uniform(-2, 2, (3, channels, 5, 6)).astype(np.float16)
    w, b = (rng.uniform(-1, 1, channels).astype(np.float32) for _ in range(2))
    if not backward:
        return ops.batch_norm(x, w, b, None, None, chip=chip, tiling={"tile": 64}, **options)
    mean = x.astype(np.float32).mean(axis=(0, 2, 3))
    inv = rng.uniform(0.5, 2, channels).astype(np.float32)
    return ops.batch_norm_backward(x, x, w, None, None, mean, inv, chip=chip,
                                   tiling={"parts": 2, "tile": 64}, **options)


def max_pool(chip, backward=False, **options):
    """MaxPool3DWithArgmaxV2 / MaxPool3DGradWithArgmax (A2 only): slabs of 2 rows."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnMaxPool2dWithIndices and its backward run on Atlas A2 only")
    rng = np.random.default_rng(24)
    x = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
    window = dict(kernel_size=[3], stride=[2], padding=[1], tiling={"rows": 2})
    if not backward:
        return ops.max_pool2d_with_indices(x, chip=chip, **window, **options)
    idx = ops.max_pool2d_with_indices(x, chip=chip, **window).outputs["indices"]
    dy = rng.standard_normal(idx.shape).astype(np.float32)
    return ops.max_pool2d_with_indices_backward(dy, x, idx, chip=chip, **window, **options)


def max_pool_mask(chip, backward=False, **options):
    """Cast, TransData, MaxPoolWithArgmaxV1 / MaxPoolGradWithArgmaxV1 (the training series):
    FLOAT in, slabs of 2 rows."""
    if npusim.load_chip(chip).product != "atlas-training":
        pytest.skip("npusim models aclnnMaxPool2dWithMask on the training series only")
    rng = np.random.default_rng(25)
    x = rng.standard_normal((2, 18, 9, 11)).astype(np.float32)
    window = dict(kernel_size=[3], stride=[2], padding=[1], tiling={"rows": 2})
    if not backward:
        return ops.max_pool2d_with_mask(x, chip=chip, **window, **options)
    fwd = ops.max_pool2d_with_mask(x, chip=chip, **window)
    dy = rng.standard_normal(fwd.outputs["out"].shape).astype(np.float32)
    return ops.max_pool2d_with_mask_backward(dy, x, fwd.outputs["indices"], chip=chip,
                                             **window, **options)


def loss_910(chip, which="log_softmax", **options):
    """LogSoftmaxV2, NLLLoss (mean: SyncAll, the workspace), NLLLossGrad, LogSoftmaxGrad (the
    training series)."""
    if npusim.load_chip(chip).product != "atlas-training":
        pytest.skip("npusim models the training series' loss there only")
    rng = np.random.default_rng(26)
    x = rng.standard_normal((40, 300)).astype(np.float32)
    t = rng.integers(0, 300, 40).astype(np.int64)
    w = rng.uniform(0.5, 2, 300).astype(np.float32)
    one = np.ones(1, np.float32)
    calls = {"log_softmax": lambda: ops.log_softmax(x, 1, chip=chip, **options),
             "nll_loss": lambda: ops.nll_loss(x, t, w, 1, chip=chip, **options),
             "nll_loss_backward": lambda: ops.nll_loss_backward(one, x, t, w, 1, -100, one,
                                                                chip=chip, **options),
             "log_softmax_backward": lambda: ops.log_softmax_backward(x, x, 1, chip=chip,
                                                                      **options)}
    return calls[which]()


def attention(chip, grad=False, **options):
    """FlashAttentionScore (A2 only): a mix kernel, causal (rightDownCausal) with a one-column
    last key block over 3 cube cores; or its grad: MemSet, the mix kernel with atomic adds (one
    query block a head, so that every sum has one order), the post Muls + Cast."""
    if npusim.load_chip(chip).product != "atlas-a2":
        pytest.skip("aclnnFlashAttentionScore runs on Atlas A2 only")
    rng = np.random.default_rng(25)
    q, k, v, dy = (rng.standard_normal((1, s, 2, 64)).astype(bfloat16)
                   for s in (100, 257, 257, 100))
    mask = np.triu(np.ones((2048, 2048), np.uint8), 1)
    kw = dict(head_num=2, scale_value=0.125, sparse_mode=3, chip=chip, tiling={"block_dim": 3})
    fwd = ops.flash_attention_score(q, k, v, mask, **kw, **({} if grad else options))
    if not grad:
        return fwd
    o = fwd.outputs
    return ops.flash_attention_score_grad(q, k, v, dy, o["softmaxMax"], o["softmaxSum"],
                                          o["attentionOut"], atten_mask=mask, **kw, **options)


KERNELS = {
    "copy": lambda chip, **o: run_copy(chip, block_dim=2, tiles=4, **o)[0],
    "vector add": lambda chip, **o: run_vector("add", chip=chip, tiles=4, block_dim=2, **o),
    "vector exp_mul fp32": lambda chip, **o: run_vector("exp_mul", chip=chip, dtype="float32",
                                                        tiles=4, block_dim=2, **o),
    "matmul": lambda chip, **o: run_matmul(chip=chip, m=64, n=64, k=128, base_k=64, **o),
    "stream": lambda chip, **o: run_stream(chip=chip, block_dim=4, per_core_bytes=64 << 10, **o),
    "silu_backward + contiguous": silu_strided,
    "convolution_backward atomic dw": conv,
    "convolution_backward deterministic dw": lambda chip, **o: conv(chip, deterministic=True,
                                                                    **o),
    "convolution_backward transposed": lambda chip, **o: conv(chip, transposed=True, **o),
    "convolution_backward kernel rows": conv_kernel_rows,
    "convolution_backward narrow, padded": conv_narrow_padded,
    "convolution_backward 3-D, zeroed atomic dw": conv_3d,
    "convolution: TransData, Conv2D, TransData + Cast": conv_forward,
    "moe_token_permute_grad": moe,
    "moe_token_permute: cast, sorts, index copy": moe_permute,
    "moe_token_permute split-D": lambda chip, **o: moe_permute(chip, split_d=True, **o),
    "moe_token_unpermute with probs": moe_unpermute,
    "moe_token_unpermute_grad with probs": lambda chip, **o: moe_unpermute(chip, grad=True, **o),
    "moe_token_unpermute_grad scatter": lambda chip, **o: moe_unpermute(chip, grad=True,
                                                                        probs=False, **o),
    "rms_norm + contiguous": rms_norm,
    "rms_norm_grad": lambda chip, **o: rms_norm(chip, grad=True, **o),
    "swi_glu": swi_glu,
    "swi_glu_grad": lambda chip, **o: swi_glu(chip, grad=True, **o),
    "cross_entropy_loss_grad + contiguous": cross_entropy,
    "embedding_dense_backward sorted (sort, casts, D chunks)":
        lambda chip, **o: embedding(chip, "sorted", **o),
    "embedding_dense_backward default fp16 + scale": lambda chip, **o: embedding(chip,
                                                                                 "default", **o),
    "embedding_dense_backward deterministic": lambda chip, **o: embedding(chip,
                                                                          "deterministic", **o),
    "threshold_backward (elementwise template) + contiguous": elementwise,
    "add bf16 alpha: Mul then Add": add_two_kernels,
    "cross_entropy_loss (forward) chunked + contiguous": cross_entropy_forward,
    "foreach_add_list_v2 bf16": foreach_add,
    "matmul fp32 USE_FP16: casts, RowMajor B, partial k": matmul_row_b,
    "matmul MatMulV2 on ND, transposed self": matmul_nd_transposed,
    "matmul split-K: MemSet, atomic K parts, Cast": matmul_split_k,
    "grouped_matmul transposed weight": grouped,
    "grouped_matmul weight gradient (groupType 2)": lambda chip, **o: grouped(chip, True, **o),
    "moe_gating_top_k_softmax: SoftMax, Sort, padded slots": gating,
    "adaptive_avg_pool2d (1, 1): ReduceMean": pool,
    "adaptive_avg_pool2d_backward: Fill, Brcb + Mul": lambda chip, **o: pool(chip, True, **o),
    "batch_norm: TransData, BNTrainingReduce, BNTrainingUpdate": batch_norm,
    "batch_norm 64 channels (A2: BatchNormV3)": lambda chip, **o: batch_norm(chip, channels=64,
                                                                             **o),
    "batch_norm_backward: BNTrainingUpdateGrad, BNTrainingReduceGrad":
        lambda chip, **o: batch_norm(chip, True, **o),
    "max_pool2d_with_indices: MaxPool3DWithArgmaxV2": max_pool,
    "max_pool2d_with_indices_backward: MaxPool3DGradWithArgmax":
        lambda chip, **o: max_pool(chip, True, **o),
    "max_pool2d_with_mask: Cast, TransData, MaxPoolWithArgmaxV1": max_pool_mask,
    "max_pool2d_with_mask_backward: MaxPoolGradWithArgmaxV1":
        lambda chip, **o: max_pool_mask(chip, True, **o),
    "log_softmax: LogSoftmaxV2": loss_910,
    "nll_loss mean: NLLLoss": lambda chip, **o: loss_910(chip, "nll_loss", **o),
    "nll_loss_backward: NLLLossGrad": lambda chip, **o: loss_910(chip, "nll_loss_backward", **o),
    "log_softmax_backward: LogSoftmaxGrad":
        lambda chip, **o: loss_910(chip, "log_softmax_backward", **o),
    "flash_attention_score: mix kernel, causal mask": attention,
    "softmax_backward: SoftmaxGrad, a 64-lane tail": lambda chip, **o: ops.softmax_backward(
        *(np.random.default_rng(26).standard_normal((2, 3, 70)).astype(np.float16)
          for _ in range(2)), chip=chip, tiling={"block_dim": 2, "row_factor": 2}, **o),
    "flash_attention_score_grad: MemSet, mix kernel, post":
        lambda chip, **o: attention(chip, True, **o),
}


@pytest.mark.parametrize("name", list(KERNELS))
def test_trace_schema_and_jitter(name, chip_name, tmp_path):
    run = KERNELS[name]
    plain = run(chip_name)
    check_trace(plain, tmp_path / "trace.json")
    reserved = plain.stats["peak_bytes"]   # what init_buffer set aside, the most of any kernel
    for buf, live in plain.stats["peak_live_bytes"].items():
        assert 0 < live <= reserved[buf] <= getattr(plain.chip, SIZE_KEYS[buf]), \
            f"{name}: {buf} live {live}, reserved {reserved[buf]}"
    kernels = plain.stats.get("kernels", [])
    if kernels:    # a sequence: each kernel starts from empty buffers
        own = [k["peak_live_bytes"] for k in kernels]
        assert plain.stats["peak_live_bytes"] == {
            b: max(p.get(b, 0) for p in own) for b in plain.stats["peak_live_bytes"]}
    for seed in (1, 2):
        jittered = run(chip_name, jitter=(seed, 50.0))
        assert jittered.cycles != plain.cycles
        for out, value in plain.outputs.items():
            if value is not None:
                assert_bit_equal(jittered.outputs[out], value, f"{name}: {out}")


@pytest.mark.parametrize("name", [n for n in KERNELS if n.startswith("convolution")])
def test_trace_schema_and_jitter_atlas_inference(name, tmp_path):
    """The Atlas inference series runs the convolution only (the other operators refuse it)."""
    test_trace_schema_and_jitter(name, "atlas-inference", tmp_path)
