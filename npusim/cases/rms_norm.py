"""The cases of aclnnRmsNorm and aclnnRmsNormGrad: inputs (rstd from x as the forward gives it),
flops and help for the command."""

import numpy as np

from npusim.cases.common import OpCase, Param, random_array
from npusim.errors import NpusimError

RMS_FWD_OPS = 4    # x^2, the sum, x * rstd, * gamma per element
RMS_GRAD_OPS = 9   # x*rstd, dy*xr, dgamma add, dy*gamma, gy*xr, the sum, xr*mean, sub, *rstd


def parse_gamma(text: str) -> str:
    if text not in ("same", "float32"):
        raise ValueError("same (gamma in x's dtype) or float32")
    return text


RMS_PARAMS = (
    Param(name="gamma", parse=parse_gamma, default="same",
          help="gamma's dtype: same (as x) or float32 (the mixed pairs for fp16/bf16 x)"),
    Param(name="epsilon", parse=float, default="1e-6", help="added to mean(x^2)"),
)


def _split(shape, what: str) -> tuple:
    if len(shape) < 2:
        raise NpusimError(f"{what}: --shape is ROWS x ... x COLS (at least 2 dims); gamma is the "
                          "last dim")
    return shape


def _gamma(rng, shape, dtype, params):
    return random_array(rng, (shape[-1],), "float32" if params["gamma"] == "float32" else dtype)


def _fwd_make(shape, dtype, params, rng):
    shape = _split(shape, "rms_norm")
    return (random_array(rng, shape, dtype), _gamma(rng, shape, dtype, params)), \
        {"epsilon": params["epsilon"]}


def _grad_make(shape, dtype, params, rng):
    shape = _split(shape, "rms_norm_grad")
    x = random_array(rng, shape, dtype)
    xf = x.astype(np.float64)
    rstd = (1.0 / np.sqrt((xf * xf).mean(axis=-1) + params["epsilon"])).astype(np.float32)
    return (random_array(rng, shape, dtype), x, rstd, _gamma(rng, shape, dtype, params)), {}


def _grad_golden_options(result, args, kwargs) -> dict:
    """The cores the run used: they fix the order of dgamma's sum."""
    return {"block_dim": result.tiling.block_dim}


TILING_HELP = ("block_dim (vector cores used; rows split ceil(rows / block_dim) a core), "
               "row_factor (rows per rstd batch, a multiple of 8), buffer_num (1 as CANN; 2 "
               "double-buffers the forward)")

RMS_NORM = OpCase(
    name="rms_norm", aclnn="aclnnRmsNorm",
    summary="yOut = x / sqrt(mean(x^2) + eps) * gamma over the last dim; rstdOut per row (fp32)",
    shape_help="ROWS x ... x COLS: x's shape; gamma is the last dim",
    default_shape=(4096, 4096), demo_shape=(2048, 4096), quick_shape=(64, 1024),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_fwd_make, flops=lambda a, k: RMS_FWD_OPS * a[0].size, params=RMS_PARAMS,
    tiling_help=TILING_HELP, sweep_example="--tiling block_dim=8:48:8 --tiling buffer_num=1,2",
    notes="Reads x once and writes y once: the roofline is those bytes over the HBM bandwidth. "
          "Atlas A2 only (CANN does not run it on the training series).")

RMS_NORM_GRAD = OpCase(
    name="rms_norm_grad", aclnn="aclnnRmsNormGrad",
    summary="dxOut = (dy*gamma - x*rstd*mean(dy*gamma*x*rstd)) * rstd; dgammaOut = "
            "sum over rows of dy*x*rstd (fp32)",
    shape_help="ROWS x ... x COLS: dy's and x's shape; gamma is the last dim",
    default_shape=(4096, 4096), demo_shape=(2048, 4096), quick_shape=(64, 1024),
    dtypes=("bfloat16", "float16", "float32"), unit="vector",
    make=_grad_make, flops=lambda a, k: RMS_GRAD_OPS * a[0].size, params=RMS_PARAMS,
    golden_options=_grad_golden_options, tiling_help=TILING_HELP,
    sweep_example="--tiling block_dim=8:48:8",
    notes="Reads dy and x once and writes dx once; dgamma's per-core partials meet in a "
          "workspace after SyncAll and core 0 adds them in core order (CANN's deterministic "
          "path). Atlas A2 only.")


