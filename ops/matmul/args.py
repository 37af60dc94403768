"""The argument rules of aclnnMatmul (2-D), from its document (hiascend aclnnMatmul / aclnnMm).

Documented: self and mat2 FLOAT or FLOAT16 on the Atlas training and inference series, also
BFLOAT16 on A2; the dtypes equal here (aclnn promotes mixed ones); mat2's reduce dimension equal
to self's; cubeMathType 0 KEEP_DTYPE (FLOAT on the training and inference series: an error),
1 ALLOW_FP32_DOWN_PRECISION (FLOAT: FLOAT16 on the training series, HFLOAT32 on A2), 2 USE_FP16,
3 USE_HF32 (FLOAT: not on the training series). A missing tensor is 161001, every other
violation 161002.

What npusim models (the rest is refused with a ParamError that says it is not modelled, code
161002): 2-D operands (aclnnMatmul's 1-D and batched forms are not modelled);
- Atlas A2: the CATLASS-shaped kernel (ops/catlass), FLOAT16 and BFLOAT16, and FLOAT with
  cubeMathType 2 (cast to FLOAT16 around the fp16 GEMM);
- Atlas training series: CANN's TransData + MatMulV2 route (training.py), its split-K route
  included, FLOAT16, and FLOAT with cubeMathType 1 or 2 (both cast to FLOAT16 there).
"""

import numbers

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import PRODUCT_NAMES, as_array, product_name, require

OP = "aclnnMatmul"
DOCUMENTED = {"atlas-training": ("float16", "float32"), "atlas-inference": ("float16", "float32"),
              "atlas-a2": ("bfloat16", "float16", "float32")}
MODELLED_PRODUCTS = ("atlas-a2", "atlas-training")
CUBE_MATH_TYPES = {0: "KEEP_DTYPE", 1: "ALLOW_FP32_DOWN_PRECISION", 2: "USE_FP16",
                   3: "USE_HF32"}
USE_FP16 = 2


def _bad(text: str) -> ParamError:
    return ParamError(f"{OP}: {text}", code=ACLNN_ERR_PARAM_INVALID)


def check_cube_math_type(chip, value, dtype: str) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) \
            or int(value) not in CUBE_MATH_TYPES:
        allowed = ", ".join(f"{k} ({v})" for k, v in CUBE_MATH_TYPES.items())
        raise _bad(f"cube_math_type = {value!r}; allowed: {allowed}")
    value = int(value)
    if dtype == "float32" and chip.product != "atlas-a2" and value in (0, 3):
        raise _bad(f"cube_math_type = {value} ({CUBE_MATH_TYPES[value]}) with float32 inputs "
                   f"is not supported on {chip.name} ({product_name(chip)}): its cube has no "
                   "float32 or HFLOAT32 mode; use 1 or 2")
    return value


def check_matmul(chip, self_, mat2, cube_math_type):
    """The arrays and the cube math type, or the first rule they break."""
    require(OP, self=self_, mat2=mat2)
    if chip.product not in DOCUMENTED:
        raise _bad(f"not supported on {chip.name} ({product_name(chip)})")
    arrays = {"self": as_array(OP, "self", self_), "mat2": as_array(OP, "mat2", mat2)}
    for name, arr in arrays.items():
        got, allowed = name_of(arr.dtype), DOCUMENTED[chip.product]
        if got not in allowed:
            raise _bad(f"{name} dtype {got} is not supported on {chip.name} "
                       f"({product_name(chip)}); allowed: {', '.join(allowed)}")
    a, b = arrays["self"], arrays["mat2"]
    if a.dtype != b.dtype:
        raise _bad(f"the dtypes must be equal in npusim; given self {name_of(a.dtype)}, mat2 "
                   f"{name_of(b.dtype)} (aclnn promotes mixed dtypes with Cast kernels, which "
                   "npusim does not model)")
    dtype = name_of(a.dtype)
    cmt = check_cube_math_type(chip, cube_math_type, dtype)
    if a.ndim != 2 or b.ndim != 2:
        raise _bad(f"self {tuple(a.shape)} and mat2 {tuple(b.shape)}: npusim models 2-D "
                   "operands only (aclnnMatmul's 1-D and batched forms are not modelled)")
    if a.shape[1] != b.shape[0]:
        raise _bad(f"self {tuple(a.shape)} and mat2 {tuple(b.shape)}: mat2's reduce dimension "
                   f"({b.shape[0]}) must equal self's ({a.shape[1]})")
    _check_modelled(chip, dtype, cmt)
    return a, b, cmt


def _check_modelled(chip, dtype: str, cmt: int) -> None:
    if chip.product not in MODELLED_PRODUCTS:
        supported = ", ".join(f"{p} ({PRODUCT_NAMES[p]})" for p in MODELLED_PRODUCTS)
        raise _bad(f"not modelled on {chip.name} ({product_name(chip)}): npusim runs matmul "
                   "on the CATLASS-shaped kernel (FixPipe, Atlas A2) and on the training "
                   f"series' MatMulV2; modelled products: {supported}")
    if chip.product == "atlas-training" and dtype in ("float16", "float32"):
        return                    # float32: cube_math_type 1 or 2 (0 and 3 refused above)
    if dtype in ("float16", "bfloat16") or (dtype == "float32" and cmt == USE_FP16):
        return
    raise _bad(f"{dtype} with cube_math_type = {cmt} ({CUBE_MATH_TYPES[cmt]}) is not modelled "
               "on the CATLASS-shaped kernel; modelled: float16, bfloat16, or float32 with "
               "cube_math_type = 2 (USE_FP16)")


SPLIT_K = 8            # matmul_util.cpp SPLIT_K_MULTI: the training series' split-K route
MKN_MAX = 8000000000   # matmul_util.cpp MKN_MAX
MN_MULTI = 50          # matmul_util.cpp MN_MULTI
