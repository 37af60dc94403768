"""The case of aclnnMatmul (2-D): the CATLASS-shaped kernel on Atlas A2, TransData + MatMulV2 on
the Atlas training series; inputs, flops and help.

``--shape MxNxK`` (as ``catlass_matmul``): self is M x K, mat2 K x N. ``--param
mat2=row|plain|transposed`` lays mat2 out as a C-contiguous K x N matrix (row, or plain) or as
the transpose of a C-contiguous N x K one (the FC layer's ``x @ W.T``)."""

from npusim.cases.common import OpCase, Param, gemm_largest, random_array
from npusim.errors import NpusimError

MAT2_LAYOUTS = ("row", "plain", "transposed")   # plain: row's other name (the step workload's)


def _layout(text: str) -> str:
    if text not in MAT2_LAYOUTS:
        raise ValueError(f"allowed: {', '.join(MAT2_LAYOUTS)}")
    return text


def _cube_math_type(text: str) -> int:
    return int(text)


def _make(shape, dtype, params, rng):
    if len(shape) != 3:
        raise NpusimError(f"matmul: shape {'x'.join(map(str, shape))}: MxNxK, three sizes; "
                          f"got {len(shape)}")
    m, n, k = shape
    a = random_array(rng, (m, k), dtype)
    if params["mat2"] == "transposed":
        b = random_array(rng, (n, k), dtype).T
    else:
        b = random_array(rng, (k, n), dtype)
    return (a, b), {"cube_math_type": params["cube_math_type"]}


def _flops(args, kwargs):
    (m, k), n = args[0].shape, args[1].shape[1]
    return 2 * m * n * k


def _golden_options(result, args, kwargs) -> dict:
    return {"tiling": result.tiling}


MATMUL = OpCase(
    largest_tensor=gemm_largest,
    name="matmul", aclnn="aclnnMatmul",
    summary="out = self @ mat2 (2-D), on the CATLASS-shaped kernel (A2) or MatMulV2 (training)",
    shape_help="MxNxK: self is M x K, mat2 K x N, out M x N (ResNet-50's FC forward at batch 32: "
               "32x1000x2048 with --param mat2=transposed)",
    default_shape=(32, 1000, 2048), demo_shape=(256, 256, 512), quick_shape=(64, 64, 128),
    dtypes=("float16", "float32", "bfloat16"), unit="cube", make=_make, flops=_flops,
    params=(Param(name="mat2", parse=_layout, default="transposed",
                  help="mat2 in memory: row or plain (C-contiguous K x N) or transposed (the "
                       "transpose of a C-contiguous N x K, as W.T)"),
            Param(name="cube_math_type", parse=_cube_math_type, default="2",
                  help="0 KEEP_DTYPE, 1 ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3 USE_HF32 "
                       "(float32 is modelled with 2 on A2, 1 or 2 on the training series)")),
    golden_options=_golden_options,
    tiling_help="A2: l1_m, l1_n, l1_k (the L1 tile), l0_k (the L0 k step), swizzle_offset, "
                "swizzle_direction, shuffle_k (true/false), block_dim (cube cores); Atlas "
                "training: block_m, block_n (cores along M and N), base_m, base_n (the L0C "
                "block), base_k (the L0 k step), l1_k (the L1 k tile)",
    sweep_example="--tiling l1_m=64,128 --tiling l1_n=128,256",
    notes="Atlas A2: the CATLASS-shaped kernel (FixPipe out); float32 runs as Cast, the fp16 "
          "GEMM, Cast (cube_math_type 2). Atlas training: CANN's route, TransData ND -> "
          "FRACTAL_NZ, MatMulV2 (L0C -> UB -> Cast -> GM), TransData back (ND in and out "
          "when fp16 M, K, N are multiples of 16); float32 is cast to fp16 and MatMulV2 writes "
          "fp32; K >= 8 max(M, N) takes the split-K route (fp32 out, K across cores, atomic adds, "
          "then Cast).")
