"""aclnnConvolution's argument rules (the forward), from ops-nn's ``aclnnConvolution.md`` and
``aclnn_convolution.cpp``, and what npusim does not model of it.

A missing input, weight, stride, padding or dilation (a null pointer) is ParamError 161001;
every other violation is 161002: dtypes (bf16 on Atlas A2 only), ranks (1-D or 2-D: NCL or
NCHW, the same for input and weight), the array lengths and signs of stride / padding /
dilation (2-D padding: 2 values, or 4 as top, bottom, left, right; 1-D: 1, or 2 as left,
right), groups in [1, 65535] with groups x weight C = input C, the output size (the padded
input at least the dilated kernel), empty tensors other than N of input being 0, padding in
[0, 255] and sizes up to 1000000 (Atlas A2 and inference series; the inference series also
input H, W <= 4096 and kernel H, W <= 255), and cubeMathType per product: on Atlas A2 FLOAT
runs in HF32 (1 or 3) or fp16 (2), KEEP_DTYPE (0) is not supported for FLOAT; on the Atlas
training and inference series FLOAT runs in fp16 (1 or 2; 0 and 3 are errors); BFLOAT16 with
USE_FP16 (2) is an error.

Not modelled (ParamError 161002 saying so): a bias (CANN's Conv2D adds it from the bias table
in L0C; npusim's cube has no bias table), ``transposed=True`` (Conv2DTranspose), groups > 1
(CANN's grouped FRACTAL_Z), 3-D (Conv3DV2).

Atlas training: the aclnnConvolution document lists the Atlas training series as not
supported; torch_npu runs the same TBE Conv2D there between the same TransData kernels, and
ops-nn's op_api keeps an ASCEND910 branch (fp16 only), which npusim follows.
"""

from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.ops.common import as_array, check_dtype, product_name, require
from npusim.ops.convolution.args import compute_dtype, int_list, invalid, promote
from npusim.ops.convolution.geometry import Axis, conv_out

OP = "aclnnConvolution"
DTYPES = {"atlas-training": ("float16", "float32"),
          "atlas-a2": ("bfloat16", "float16", "float32"),
          "atlas-inference": ("float16", "float32")}
MAX_SIZE = 1000000         # every size of input and weight (the document's 其他约束)
PAD_MAX, GROUPS_MAX = 255, 65535
INFERENCE_HW_MAX, INFERENCE_KERNEL_MAX = 4096, 255


@dataclass(frozen=True)
class ForwardSpec:
    """The checked arguments, normalised to 3D (D, H, W)."""

    input: np.ndarray
    weight: np.ndarray
    n: int
    cin: int
    cout: int
    axes: tuple          # Axis for D, H, W (inp: the input's length, out: the output's)
    compute_dtype: str   # the cube's operands
    hf32: bool
    kernel_dtype: str    # what Conv2D writes (CANN's opInfo.outputDtype)
    out_dtype: str       # the output's (the promoted input dtype; a Cast when it differs)

    @property
    def out_shape(self) -> tuple:
        sp = tuple(a.out for a in self.axes[3 - (self.input.ndim - 2):])
        return (self.n, self.cout, *sp)

    @property
    def x5_shape(self) -> tuple:
        return _five(self.input.shape)

    @property
    def w5_shape(self) -> tuple:
        return _five(self.weight.shape)

    @property
    def empty(self) -> bool:
        return self.input.size == 0


def _five(shape) -> tuple:
    lead, sp = tuple(shape[:2]), tuple(shape[2:])
    return lead + (1,) * (3 - len(sp)) + sp


def bad(message: str):
    return invalid(message, OP)


def check_convolution(chip, input, weight, bias, *, stride, padding,  # noqa: A002
                      dilation, transposed, output_padding, groups,
                      cube_math_type) -> ForwardSpec:
    """The rules of the module docstring; returns the normalised ForwardSpec."""
    require(OP, input=input, weight=weight, stride=stride, padding=padding, dilation=dilation)
    x, w = as_array(OP, "input", input), as_array(OP, "weight", weight)
    for name, arr in (("input", x), ("weight", w)):
        check_dtype(OP, name, arr, DTYPES, chip)
    if x.ndim != w.ndim or x.ndim not in (3, 4, 5):
        raise bad(f"input and weight must both be 3D (NCL) or 4D (NCHW); given ranks {x.ndim}, "
                  f"{w.ndim}")
    _check_unmodelled(chip, x, bias, transposed, groups)
    nsp = x.ndim - 2
    s = int_list("stride", stride, (nsp,), 1, OP)
    p = int_list("padding", padding, (nsp, 2 * nsp), 0, OP)
    d = int_list("dilation", dilation, (nsp,), 1, OP)
    lo, hi = (p[0::2], p[1::2]) if len(p) == 2 * nsp else (p, p)
    if int(w.shape[1]) != int(x.shape[1]):
        raise bad(f"groups x weight C = 1 x {w.shape[1]} must equal input C = {x.shape[1]}")
    if x.size == 0 and any(v == 0 for v in x.shape[1:]) or w.size == 0 and x.size:
        raise bad(f"input {tuple(x.shape)}, weight {tuple(w.shape)}: only N of input may be 0")
    _check_ranges(chip, x, w, p)
    axes = []
    for i in range(nsp):
        k, length = int(w.shape[2 + i]), int(x.shape[2 + i])
        out = conv_out(length, k, s[i], d[i], lo[i], hi[i])
        if out < 1:
            raise bad(f"input spatial shape {tuple(x.shape[2:])} padded by {list(p)} is smaller "
                      f"than the kernel {tuple(w.shape[2:])} dilated by {list(d)} (dim {i})")
        axes.append(Axis(length, out, k, s[i], d[i], lo[i], hi[i]))
    dtype = promote(name_of(x.dtype), name_of(w.dtype))
    cd, hf32 = cube_dtype(chip, dtype, cube_math_type)
    axes3 = tuple(Axis(1, 1, 1, 1, 1, 0, 0) for _ in range(3 - nsp)) + tuple(axes)
    return ForwardSpec(x, w, n=int(x.shape[0]), cin=int(x.shape[1]), cout=int(w.shape[0]),
                       axes=axes3, compute_dtype=cd, hf32=hf32, kernel_dtype=cd,
                       out_dtype=dtype)


def _check_unmodelled(chip, x, bias, transposed, groups) -> None:
    if not isinstance(transposed, bool | np.bool_):
        raise bad(f"transposed = {transposed!r}: True or False")
    if isinstance(groups, bool) or not isinstance(groups, int | np.integer) or \
            not 1 <= groups <= GROUPS_MAX:
        raise bad(f"groups = {groups!r}: an integer in [1, {GROUPS_MAX}]")
    if x.ndim == 5:
        raise bad("3-D convolution (Conv3DV2) is not modelled by npusim; 1-D and 2-D are")
    if transposed:
        raise bad("transposed = True (a transposed convolution) is not modelled by npusim; "
                  "the forward convolution (transposed = False) is")
    if groups != 1:
        raise bad(f"groups = {groups}: grouped convolution is not modelled by npusim (CANN's "
                  "grouped FRACTAL_Z weight); groups = 1 is")
    if bias is not None:
        raise bad("a bias is not modelled by npusim (CANN's Conv2D adds it from the cube's "
                  "bias table, which npusim's cube does not have); pass bias=None and add it "
                  "with npusim.ops.add")


def _check_ranges(chip, x, w, p) -> None:
    if chip.product == "atlas-training":
        return
    for name, arr in (("input", x), ("weight", w)):
        if any(v > MAX_SIZE for v in arr.shape):
            raise bad(f"{name} shape {tuple(arr.shape)}: sizes must be <= {MAX_SIZE}")
    if any(v > PAD_MAX for v in p):
        raise bad(f"padding = {list(p)}: values must be in [0, {PAD_MAX}] on {chip.name} "
                  f"({product_name(chip)})")
    if chip.product == "atlas-inference":
        if any(v > INFERENCE_HW_MAX for v in x.shape[2:]):
            raise bad(f"input spatial sizes {tuple(x.shape[2:])}: at most {INFERENCE_HW_MAX} on "
                      f"{chip.name} ({product_name(chip)})")
        if any(v > INFERENCE_KERNEL_MAX for v in w.shape[2:]):
            raise bad(f"weight spatial sizes {tuple(w.shape[2:])}: at most "
                      f"{INFERENCE_KERNEL_MAX} on {chip.name} ({product_name(chip)})")


def cube_dtype(chip, dtype: str, cmt) -> tuple[str, bool]:
    """The backward's cubeMathType rules, but KEEP_DTYPE with FLOAT on Atlas A2 (the document:
    not supported yet)."""
    if chip.product == "atlas-a2" and dtype == "float32" and cmt == 0 and \
            not isinstance(cmt, bool):
        raise bad(f"cubeMathType = 0 (KEEP_DTYPE) with FLOAT inputs is not supported on "
                  f"{chip.name} ({product_name(chip)}); allowed 1 or 3 (HF32), 2 (fp16)")
    return compute_dtype(chip, dtype, cmt, OP)
