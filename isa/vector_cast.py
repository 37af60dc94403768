"""Cast: precision conversion on the vector unit, with Ascend C's rounding modes.

Round modes, as Ascend C's RoundMode (CAST_NONE/RINT/FLOOR/CEIL/ROUND/TRUNC/ODD, see
https://www.hiascend.com/document/detail/en/CANNCommunityEdition/900/API/ascendcopapi/atlasascendc_api_07_00241.html
and the Cast page's rounding rules, atlasascendc_api_07_0073.html of the same edition):

* ``rint``: to nearest, ties to even; ``round``: to nearest, ties away from zero;
* ``floor``: toward -inf; ``ceil``: toward +inf; ``trunc``: toward zero;
* ``odd``: Von Neumann rounding (truncate, then set the last mantissa bit when inexact);
  fp32 -> fp16 only;
* ``none``: the default conversion of the pair: ``rint`` where the conversion loses precision,
  no rounding where it is exact (CAST_NONE).

Which modes a pair accepts: exact conversions (fp16 -> fp32, int8 -> fp16, int32 -> int64, ...)
only ``none``; float -> narrower float, float -> int and int -> float that can lose precision
(int32 -> fp32, int16 -> fp16, int64 -> fp32) ``none`` and the five directed/nearest modes;
a float to the same float type rounds to an integral value (Ascend C's float -> float row) with
those five, ``none`` copies; int -> narrower int only ``none``, saturating.

Exactness: every source value is taken exactly into float64 (int64 beyond 2**53 is rounded to
odd at 53 bits first, which preserves every later rounding since 53 >= 24 + 2), scaled by the
target's ulp to an exact float64 multiple, rounded to an integer by the mode and scaled back. The
result is therefore exact for every mode, subnormals included, for fp16, bf16 and fp32 targets.
Float overflow follows IEEE 754 for the mode: nearest modes give +-inf; directed modes give inf
only in their direction and the largest finite value otherwise; trunc and odd never give inf.
The saturation mode of the chip's float overflow control (Atlas training's only mode, where
finite overflow saturates) is not modelled. Float -> int saturates to the int range; NaN -> 0
(assumed; not documented).

Cost: the ``cast`` entry of ``[vector.cost]``. The wider of src and dst sets the repeats (a
repeat holds 256 bytes of the wider operand; the narrower one uses fewer blocks) and the cost
class; when both are equally wide, the source's class (so s32 -> f32 is "int", 9/1 cycles as
PTO-VEC's vconv_s322f32; f32 -> s32 is "f32", 6/1 as vconv_f322s32r).
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.dtypes import is_float, name_of
from npusim.errors import NpusimError

from .vector import VectorInstr

ROUND_MODES = ("none", "rint", "floor", "ceil", "round", "trunc", "odd")
ROUNDING = ("none", "rint", "floor", "ceil", "round", "trunc")

# precision in bits (with the implicit one), smallest and largest normal exponent
FLOAT_FORMATS = {"float16": (11, -14, 15), "bfloat16": (8, -126, 127), "float32": (24, -126, 127)}


def _int_bits(dt: np.dtype) -> int:
    """Bits of magnitude an integer type needs: every value fits in 2**bits."""
    info = np.iinfo(dt)
    return max(abs(int(info.min)), int(info.max)).bit_length()


def _exact(src: np.dtype, dst: np.dtype) -> bool:
    """Whether dst represents every value of src."""
    if is_float(dst):
        p, emin, emax = FLOAT_FORMATS[name_of(dst)]
        if not is_float(src):
            return _int_bits(src) <= p
        ps, smin, smax = FLOAT_FORMATS[name_of(src)]
        return ps <= p and smin - ps >= emin - p and smax <= emax
    if is_float(src):
        return False
    si, di = np.iinfo(src), np.iinfo(dst)
    return di.min <= si.min and si.max <= di.max


def allowed_modes(src, dst) -> tuple[str, ...]:
    """Round modes Cast accepts from ``src`` to ``dst``."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return ROUNDING if is_float(src) else ("none",)
    if _exact(src, dst) or not (is_float(src) or is_float(dst)):
        return ("none",)
    if name_of(src) == "float32" and name_of(dst) == "float16":
        return ROUND_MODES
    return ROUNDING


def round_integral(q: np.ndarray, mode: str) -> np.ndarray:
    """Round float64 values to integral float64 values by ``mode`` (signs and -0 kept)."""
    if mode in ("rint", "none"):
        return np.rint(q)
    if mode == "floor":
        return np.floor(q)
    if mode == "ceil":
        return np.ceil(q)
    t = np.trunc(q)
    if mode == "trunc":
        return t
    frac = q - t
    if mode == "round":
        return np.where(np.abs(frac) >= 0.5, t + np.sign(q), t)
    if mode == "odd":
        return np.where((frac != 0) & (np.fmod(t, 2) == 0), t + np.sign(q), t)
    raise NpusimError(f"cast: unknown round mode {mode!r}; allowed: {', '.join(ROUND_MODES)}")


def round_to_float(x: np.ndarray, fmt: tuple[int, int, int], mode: str) -> np.ndarray:
    """Round exact float64 values to the format ``fmt`` by ``mode``; returns float64."""
    p, emin, emax = fmt
    _, e = np.frexp(x)
    scale = np.maximum(e - 1, emin) - (p - 1)        # log2 of the target ulp at x
    y = np.ldexp(round_integral(np.ldexp(x, -scale), mode), scale)
    top = np.ldexp(2.0 - 2.0 ** (1 - p), emax)        # largest finite value
    over = np.isfinite(x) & (np.abs(y) > top)
    if over.any():
        if mode in ("none", "rint", "round"):
            to_inf = over
        elif mode in ("floor", "ceil"):
            to_inf = over & ((y > 0) if mode == "ceil" else (y < 0))
        else:
            to_inf = np.zeros_like(over)
        y = np.where(over, np.copysign(np.where(to_inf, np.inf, top), y), y)
    return y


def int64_to_f64_odd(v: np.ndarray) -> np.ndarray:
    """int64 values to float64, rounded to odd (sticky) where not exact."""
    hi = v.astype(np.float64)
    big = np.abs(hi) >= 2.0 ** 53
    if not big.any():
        return hi
    half = np.where(big, hi / 2, 0).astype(np.int64)   # exact: hi is even there
    resid = np.where(big, (v - half) - half, 0)
    even = (hi.view(np.uint64) & 1) == 0
    step = (resid != 0) & even
    return np.where(step, np.nextafter(hi, np.where(resid > 0, np.inf, -np.inf)), hi)


def _saturate_int(r: np.ndarray, dt: np.dtype) -> np.ndarray:
    info = np.iinfo(dt)
    clipped = np.clip(np.nan_to_num(r, nan=0.0), float(info.min), float(info.max))
    if dt.itemsize < 8:
        return clipped.astype(dt)
    top = clipped >= 2.0 ** 63
    out = np.where(top, 0.0, clipped).astype(dt)
    out[top] = info.max
    return out


def convert(values: np.ndarray, dst_dtype, mode: str) -> np.ndarray:
    """``values`` converted to ``dst_dtype`` with round mode ``mode`` (see the module doc)."""
    src, dst = values.dtype, np.dtype(dst_dtype)
    if src == dst:
        if mode == "none" or not is_float(src):
            return values.copy()
        with np.errstate(all="ignore"):
            return round_integral(values.astype(np.float64), mode).astype(dst)
    if _exact(src, dst):
        return values.astype(dst)
    if not is_float(src) and not is_float(dst):
        return np.clip(values.astype(np.int64), np.iinfo(dst).min,
                       np.iinfo(dst).max).astype(dst)
    if mode in ("rint", "none") and src == np.float32 and dst == np.float16:
        return _f32_to_f16_rint(values)
    x = int64_to_f64_odd(values) if src == np.int64 else values.astype(np.float64)
    with np.errstate(all="ignore"):
        if not is_float(dst):
            return _saturate_int(round_integral(x, mode), dst)
        return round_to_float(x, FLOAT_FORMATS[name_of(dst)], mode).astype(dst)


def _f32_to_f16_rint(values: np.ndarray) -> np.ndarray:
    """fp32 -> fp16 to nearest even: numpy's conversion gives the same bits as the exact path
    of ``convert`` for every non-NaN fp32 (checked exhaustively over the exponents that reach
    fp16's range, 2**-32 .. 2**17, and on 5e7 random bit patterns); NaNs take the exact path,
    whose payload numpy's conversion does not keep."""
    with np.errstate(all="ignore"):
        out = values.astype(np.float16)
        nan = np.isnan(values)     # where out is NaN (fp32 overflow gives inf, never NaN);
        if nan.any():              # numpy's fp32 isnan is vectorised, its fp16 one is not
            out[nan] = round_to_float(values[nan].astype(np.float64), FLOAT_FORMATS["float16"],
                                      "rint").astype(np.float16)
    return out


@dataclass(frozen=True, kw_only=True, slots=True)
class Cast(VectorInstr):
    """Cast(dst, src, round_mode, count): dst = src converted with ``round_mode``.

    Repeat form: dst uses the ``dst_*`` strides, src the ``src0_*`` strides; a repeat holds
    256 bytes of the wider of the two.
    """

    name: ClassVar[str] = "cast"
    op: ClassVar[str] = "cast"
    dst: object
    src: object
    round_mode: str = "none"

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True), (self.src, "src0", False))

    def check_operands(self) -> None:
        for t in (self.src, self.dst):
            if name_of(t.dtype) not in (*FLOAT_FORMATS, "int8", "uint8", "int16", "int32",
                                        "int64"):
                raise NpusimError(f"cast: dtype {name_of(t.dtype)} cannot be converted; allowed: "
                                  "float16, bfloat16, float32, int8, uint8, int16, int32, int64")
        allowed = allowed_modes(self.src.dtype, self.dst.dtype)
        if self.round_mode not in allowed:
            raise NpusimError(
                f"cast: round mode {self.round_mode!r} is not allowed from "
                f"{name_of(self.src.dtype)} to {name_of(self.dst.dtype)}; allowed: "
                f"{', '.join(allowed)}")

    def lane_dtype(self) -> np.dtype:
        s, d = self.src.dtype, self.dst.dtype
        return d if d.itemsize > s.itemsize else s

    def cost_dtype(self) -> np.dtype:
        return self.lane_dtype()

    def allowed_dtypes(self, chip) -> tuple:
        return tuple(chip.cast_dtypes)

    def execute(self) -> None:
        if self.repeat is None:
            dst, src = self.counter_views()
            (w_store, w_lo, w_hi), (r_store, r_lo, r_hi) = self.spans[2][0], self.spans[1][0]
            apart = w_store is not r_store or w_hi <= r_lo or r_hi <= w_lo
            if apart and src.dtype != dst.dtype and _exact(src.dtype, dst.dtype):
                dst[...] = src      # a widening conversion: numpy's cast, as convert's astype
            else:
                dst[...] = convert(src, dst.dtype, self.round_mode)
            return
        values = self.load(self.src, "src0")
        self.store(self.dst, "dst", convert(np.asarray(values), self.dst.dtype, self.round_mode))

    def extra_operands(self) -> dict:
        return {"src_dtype": name_of(self.src.dtype), "dst_dtype": name_of(self.dst.dtype),
                "round_mode": self.round_mode}
