"""The case of ``catlass_matmul``, a GEMM kernel shaped like CATLASS's: not an aclnn operator.

It is what the validation table's CATLASS rows run (``ops/catlass/matmul.py``), and ``npusim
run catlass_matmul`` runs it like an operator: ``--shape MxNxK``, ``--param layout_b=column|zn``.
"""

from npusim.cases.common import OpCase, Param, gemm_largest, random_array
from npusim.errors import NpusimError
from npusim.ops.catlass.tiling import LAYOUTS_B


def _layout(text: str) -> str:
    if text not in LAYOUTS_B:
        raise ValueError(f"allowed: {', '.join(LAYOUTS_B)}")
    return text


def _shape(shape) -> tuple:
    if len(shape) != 3:
        raise NpusimError(f"catlass_matmul: shape {'x'.join(map(str, shape))}: MxNxK, three "
                          f"sizes; got {len(shape)}")
    return shape


def _make(shape, dtype, params, rng):
    m, n, k = _shape(shape)
    return (random_array(rng, (m, k), dtype), random_array(rng, (k, n), dtype)), \
        {"layout_b": params["layout_b"]}


def _flops(args, kwargs):
    (m, k), n = args[0].shape, args[1].shape[1]
    return 2 * m * n * k


def _golden_options(result, args, kwargs) -> dict:
    return {"tiling": result.tiling}


CATLASS_MATMUL = OpCase(
    largest_tensor=gemm_largest,
    name="catlass_matmul", aclnn="catlass_matmul (CATLASS's matmul, not an aclnn operator)",
    summary="C = A.B, fp16 in and out, scheduled like CATLASS's optimized / preload matmul",
    shape_help="MxNxK: A is M x K (RowMajor), B is K x N (ColumnMajor or zN), C is M x N",
    default_shape=(1024, 576, 6144), demo_shape=(256, 256, 512), quick_shape=(64, 64, 128),
    dtypes=("float16",), unit="cube", make=_make, flops=_flops,
    params=(Param(name="layout_b", parse=_layout, default="column",
                  help="B's layout in GM: column (ColumnMajor) or zn"),),
    golden_options=_golden_options,
    tiling_help="l1_m, l1_n, l1_k (the L1 tile), l0_k (the L0 k step), swizzle_offset, "
                "swizzle_direction (GemmIdentityBlockSwizzle<offset, direction>), shuffle_k "
                "(true/false), block_dim (cube cores)",
    sweep_example="--tiling l1_m=128,256 --tiling l1_n=128,256",
    notes="Runs on Atlas A2 only (FixPipe and the ND -> NZ copy). Not an aclnn operator: the "
          "kernel the validation table's CATLASS rows are compared with.")
