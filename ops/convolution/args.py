"""aclnnConvolutionBackward's argument rules, per product, from its seed document.

A missing tensor or array (a null pointer) is ParamError 161001; every other violation is
161002: dtypes (bf16 on Atlas A2 only), ranks (3D on Atlas A2 only; the Atlas training and
inference series take 1D and 2D), the array lengths and
signs of stride / padding / dilation / outputPadding, groups, biasSizes, the shape relations
between gradOutput, input and weight, empty tensors other than N or C of input being 0, the
Atlas A2 ranges of the non-transposed case, and cubeMathType per product.
"""

from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import as_array, check_dtype, product_name, require
from npusim.ops.convolution.geometry import Axis, conv_out, transposed_out

OP = "aclnnConvolutionBackward"
DTYPES = {"atlas-training": ("float16", "float32"),
          "atlas-a2": ("bfloat16", "float16", "float32"),
          "atlas-inference": ("float16", "float32")}   # the seed: as Atlas training
MAX_DIM = 2147483646
A2_KERNEL_MAX, A2_PAD_MAX, A2_DILATION_MAX, A2_STRIDE3D_MAX, A2_GROUPS_MAX = 255, 255, 255, 63, \
    65535


@dataclass(frozen=True)
class ConvSpec:
    """The checked arguments, normalised to 3D (D, H, W)."""

    grad_output: np.ndarray
    input: np.ndarray
    weight: np.ndarray
    n: int
    cin: int                # input channels
    cout: int               # gradOutput channels
    axes: tuple             # Axis for D, H, W
    groups: int
    transposed: bool
    mask: tuple
    compute_dtype: str
    hf32: bool
    dx_dtype: str
    dw_dtype: str

    @property
    def empty(self) -> bool:
        return self.input.size == 0

    def _five(self, shape) -> tuple:
        lead, sp = tuple(shape[:2]), tuple(shape[2:])
        return lead + (1,) * (3 - len(sp)) + sp

    @property
    def dy5_shape(self):
        return self._five(self.grad_output.shape)

    @property
    def x5_shape(self):
        return self._five(self.input.shape)

    @property
    def w5_shape(self):
        return self._five(self.weight.shape)


def invalid(message: str, op: str = OP) -> ParamError:
    return ParamError(f"{op}: {message}", code=ACLNN_ERR_PARAM_INVALID)


def promote(*names: str) -> str:
    """The promoted float dtype: one dtype stays; any mix goes to float32."""
    return names[0] if len(set(names)) == 1 else "float32"


def compute_dtype(chip, dtype: str, cmt, op: str = OP) -> tuple[str, bool]:
    """(cube dtype, HF32 mode) for the promoted ``dtype`` and cubeMathType ``cmt``."""
    if isinstance(cmt, bool) or not isinstance(cmt, int | np.integer) or not 0 <= cmt <= 3:
        raise invalid(f"cubeMathType = {cmt!r}; allowed 0 (KEEP_DTYPE), 1 "
                      "(ALLOW_FP32_DOWN_PRECISION), 2 (USE_FP16), 3 (USE_HF32)", op)
    a2 = chip.product == "atlas-a2"
    if dtype == "float32":
        if a2:
            return ("float16", False) if cmt == 2 else ("float32", cmt in (1, 3))
        if cmt in (0, 3):
            raise invalid(f"cubeMathType = {cmt} with FLOAT inputs: the cube of {chip.name} "
                          f"({product_name(chip)}) has no fp32/HF32; allowed 1 or 2 (fp16)", op)
        return "float16", False
    if dtype == "bfloat16" and cmt == 2:
        raise invalid("cubeMathType = 2 (USE_FP16) is not allowed with BFLOAT16 inputs", op)
    return dtype, False


def int_list(name: str, value, lengths: tuple, lo: int, op: str = OP) -> tuple:
    """An aclIntArray: a sequence of ints of an allowed length, each >= ``lo``."""
    try:
        vals = tuple(int(v) for v in value)
        if any(not isinstance(v, int | np.integer) or isinstance(v, bool) for v in value):
            raise TypeError
    except TypeError:
        raise invalid(f"{name} = {value!r}: a sequence of integers is required", op) from None
    if len(vals) not in lengths:
        raise invalid(f"{name} has {len(vals)} values {list(vals)}; allowed lengths "
                      f"{' or '.join(map(str, lengths))}", op)
    if any(v < lo for v in vals):
        raise invalid(f"{name} = {list(vals)}: every value must be >= {lo}", op)
    return vals


def check_convolution_backward(chip, grad_output, input, weight, *, bias_sizes,  # noqa: A002
                               stride, padding, dilation, transposed, output_padding, groups,
                               output_mask, cube_math_type) -> ConvSpec:
    """The seed's argument rules; returns the normalised ConvSpec."""
    require(OP, gradOutput=grad_output, input=input, weight=weight, biasSizes=bias_sizes,
            stride=stride, padding=padding, dilation=dilation, outputPadding=output_padding,
            outputMask=output_mask)
    arrays = {"gradOutput": as_array(OP, "gradOutput", grad_output),
              "input": as_array(OP, "input", input), "weight": as_array(OP, "weight", weight)}
    for name, arr in arrays.items():
        check_dtype(OP, name, arr, DTYPES, chip)
    dy, x, w = arrays.values()
    nsp = _check_ranks(chip, dy, x, w)
    mask = _check_mask(output_mask)
    if not isinstance(transposed, bool | np.bool_):
        raise invalid(f"transposed = {transposed!r}: True or False")
    if isinstance(groups, bool) or not isinstance(groups, int | np.integer) or groups < 1:
        raise invalid(f"groups = {groups!r}: a positive integer is required")
    s = int_list("stride", stride, (nsp,), 1)
    p = int_list("padding", padding, (nsp, 4) if nsp == 2 else (nsp,), 0)
    d = int_list("dilation", dilation, (nsp,), 1)
    op = int_list("outputPadding", output_padding, (nsp,), 0)
    lo, hi = (p[0::2], p[1::2]) if len(p) == 4 else (p, p)
    cin, cout = _check_channels(x, w, dy, int(groups), bool(transposed), bias_sizes)
    axes = _check_spatial(dy, x, w, s, lo, hi, d, op, bool(transposed))
    if chip.product == "atlas-a2" and not transposed:
        _check_a2_ranges(nsp, (dy, x, w), s, p, d, int(groups))
    names = [name_of(a.dtype) for a in (dy, x, w)]
    cd, hf32 = compute_dtype(chip, promote(*names), cube_math_type)
    pad3 = (1,) * (3 - nsp)
    axes3 = tuple(Axis(1, 1, 1, 1, 1, 0, 0) for _ in pad3) + axes
    return ConvSpec(dy, x, w, n=int(x.shape[0]), cin=cin, cout=cout, axes=axes3,
                    groups=int(groups), transposed=bool(transposed), mask=mask,
                    compute_dtype=cd, hf32=hf32, dx_dtype=promote(names[1], names[0]),
                    dw_dtype=promote(names[2], names[0]))


def _check_ranks(chip, dy, x, w) -> int:
    ranks = {dy.ndim, x.ndim, w.ndim}
    if len(ranks) != 1 or dy.ndim not in (3, 4, 5):
        raise invalid(f"gradOutput, input and weight must all be 3D (NCL), 4D (NCHW) or 5D "
                      f"(NCDHW); given ranks {dy.ndim}, {x.ndim}, {w.ndim}")
    if dy.ndim == 5 and chip.product != "atlas-a2":
        raise invalid(f"3D convolution backward is not supported on {chip.name} "
                      f"({product_name(chip)}); only 1D and 2D")
    return dy.ndim - 2


def _check_mask(output_mask) -> tuple:
    try:
        mask = tuple(output_mask)
    except TypeError:
        raise invalid(f"outputMask = {output_mask!r}: three booleans") from None
    if len(mask) != 3 or not all(isinstance(m, bool | np.bool_) for m in mask):
        raise invalid(f"outputMask = {output_mask!r}: three booleans")
    return tuple(bool(m) for m in mask)


def _check_channels(x, w, dy, groups, transposed, bias_sizes) -> tuple[int, int]:
    cin = int(x.shape[1])
    if transposed:
        cout, w_in = int(w.shape[1]) * groups, int(w.shape[0])
        if w_in != cin or cin % groups:
            raise invalid(f"transposed: weight.shape[0] = {w_in} must equal input channels "
                          f"{cin}, divisible by groups = {groups}")
    else:
        cout = int(w.shape[0])
        if int(w.shape[1]) * groups != cin or cout % groups:
            raise invalid(f"groups x weight C = {groups} x {w.shape[1]} must equal input C = "
                          f"{cin}, and weight N = {cout} be divisible by groups")
    if int(dy.shape[1]) != cout or int(dy.shape[0]) != int(x.shape[0]):
        raise invalid(f"gradOutput shape {tuple(dy.shape)}: N must equal input's "
                      f"{x.shape[0]} and C must be {cout}")
    sizes = int_list("biasSizes", bias_sizes, (1,), 0)
    if sizes[0] != cout:
        raise invalid(f"biasSizes = {list(sizes)}; must be [{cout}] ("
                      f"{'weight.shape[1] x groups' if transposed else 'weight.shape[0]'})")
    return cin, cout


def _check_spatial(dy, x, w, s, lo, hi, d, op, transposed) -> tuple:
    if x.size == 0 and any(n == 0 for n in x.shape[2:]):
        raise invalid(f"input shape {tuple(x.shape)}: only N or C may be 0")
    for name, arr in (("gradOutput", dy), ("weight", w)):
        if arr.size == 0 and x.size:
            raise invalid(f"{name} shape {tuple(arr.shape)}: empty tensors are not supported")
    axes = []
    for i in range(len(s)):
        k, length = int(w.shape[2 + i]), int(x.shape[2 + i])
        if transposed:
            if op[i] >= max(s[i], d[i]):
                raise invalid(f"outputPadding = {list(op)} must be smaller than stride or "
                              f"dilation ({list(s)}, {list(d)})")
            want = transposed_out(length, k, s[i], d[i], lo[i], hi[i], op[i])
        else:
            want = conv_out(length, k, s[i], d[i], lo[i], hi[i])
        if want < 1 or int(dy.shape[2 + i]) != want:
            raise invalid(f"gradOutput spatial shape {tuple(dy.shape[2:])} does not follow from "
                          f"input {tuple(x.shape[2:])}, weight {tuple(w.shape[2:])}, stride "
                          f"{list(s)}, padding, dilation {list(d)} (dim {i}: expected {want})")
        axes.append(Axis(length, want, k, s[i], d[i], lo[i], hi[i], op[i]))
    return tuple(axes)


def _check_a2_ranges(nsp, tensors, s, p, d, groups) -> None:
    """Atlas A2, transposed = False: the seed's ranges."""
    for name, arr in zip(("gradOutput", "input", "weight"), tensors, strict=True):
        if any(n > MAX_DIM for n in arr.shape):
            raise invalid(f"{name} shape {tuple(arr.shape)}: sizes must be <= {MAX_DIM}")
    kernel = tensors[2].shape[2:] if nsp < 3 else tensors[2].shape[3:]
    if any(k > A2_KERNEL_MAX for k in kernel):
        raise invalid(f"weight spatial sizes {tuple(tensors[2].shape[2:])}: H, W (L in 1D) must "
                      f"be in [1, {A2_KERNEL_MAX}] on Atlas A2")
    hw_pads = p if nsp < 3 else p[1:]
    if any(v > A2_PAD_MAX for v in hw_pads):
        raise invalid(f"padding = {list(p)}: H/W (all in 1D/2D) values must be in "
                      f"[0, {A2_PAD_MAX}] on Atlas A2")
    if any(v > A2_DILATION_MAX for v in d):
        raise invalid(f"dilation = {list(d)}: values must be in [1, {A2_DILATION_MAX}] on "
                      "Atlas A2")
    if nsp == 3 and any(v > A2_STRIDE3D_MAX for v in s[1:]):
        raise invalid(f"stride = {list(s)}: 3D strideH/W must be in [1, {A2_STRIDE3D_MAX}] on "
                      "Atlas A2")
    if any(v > MAX_DIM for v in (*s, *p)):
        raise invalid(f"stride {list(s)} / padding {list(p)}: values must be <= {MAX_DIM}")
    if groups > A2_GROUPS_MAX:
        raise invalid(f"groups = {groups}: must be in [1, {A2_GROUPS_MAX}] on Atlas A2")
