"""Tests of the vector instructions (isa/vector*.py) executed directly on UB buffers.

Goldens are written independently of the implementation: float64 arithmetic rounded once
(exact for add/sub/mul/div/sqrt of fp16/fp32), explicit Python loops for repeat-form offsets
and bit layouts, enumeration of every 16-bit float value for cast rounding, torch for the
halving-tree sums and round-to-nearest-even casts.
"""

import json
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import npusim
from npusim.dsl import vector as dsl
from npusim.dsl.context import CoreContext, recording
from npusim.dtypes import bfloat16
from npusim.engine.memory import Buffer, LocalTensor
from npusim.errors import MemoryAccessError, NpusimError
from npusim.isa.vector import (
    Abs,
    Add,
    Adds,
    Div,
    Duplicate,
    Exp,
    Ln,
    Max,
    Maxs,
    Min,
    Mins,
    Mul,
    Muls,
    Reciprocal,
    Relu,
    RepeatParams,
    Sqrt,
    Sub,
    repeat_offsets,
)
from npusim.isa.vector_cast import Cast, allowed_modes
from npusim.isa.vector_index import Compare, Gather, Select, Sort
from npusim.isa.vector_reduce import (
    BlockReduceMax,
    BlockReduceSum,
    ReduceMax,
    ReduceSum,
    WholeReduceSum,
)

CHIPS = ["atlas-a2", "atlas-training"]
F16, F32, I16, I32 = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.int16),
                      np.dtype(np.int32))
UB_BYTES = 196608


class UB:
    """A fresh UB with a bump allocator handing out 32-byte aligned tensors."""

    def __init__(self, kind: str = "UB"):
        self.buf = Buffer(kind, "aiv0", UB_BYTES)
        self.top = 0

    def tensor(self, dtype, n: int, data=None, fill=None) -> LocalTensor:
        dt = np.dtype(dtype)
        addr = self.top
        self.top += -(-n * dt.itemsize // 32) * 32
        t = LocalTensor(self.buf, addr, dt, n, addr + n * dt.itemsize, "t")
        if data is not None:
            t.array()[...] = np.asarray(data).astype(dt)
        elif fill is not None:
            t.array()[...] = fill
        return t


def bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view(f"u{a.dtype.itemsize}")


def same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and np.array_equal(bits(a), bits(b))


def same_values(a, b) -> bool:
    """Equal as values, NaN equal to NaN (payloads aside), and zeros of the same sign."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    nan = np.isnan(a)
    return (np.array_equal(a, b, equal_nan=True)
            and np.array_equal(np.signbit(a[~nan]), np.signbit(b[~nan])))


def random_data(dtype, n: int, rng, low=-4.0, high=4.0) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "i":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, n, endpoint=True).astype(dt)
    return rng.uniform(low, high, n).astype(dt)


def golden_offsets(itemsize, per_repeat, mask, repeat_times, blk, rep) -> np.ndarray:
    """Element offsets of the masked-in elements, by explicit loops over repeats and lanes."""
    if isinstance(mask, int):
        lanes = list(range(mask))
    else:
        high, low = mask
        lanes = [e for e in range(per_repeat)
                 if (low >> e) & 1 or (e >= 64 and (high >> (e - 64)) & 1)]
    per_block = 32 // itemsize
    out = []
    for r in range(repeat_times):
        for e in lanes:
            byte = r * rep * 32 + (e // per_block) * blk * 32 + (e % per_block) * itemsize
            out.append(byte // itemsize)
    return np.array(out, dtype=np.int64)


def round_f64(x: np.ndarray, dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float64).astype(dtype)


# ---------------------------------------------------------------- element-wise, counter mode

BINARY = {  # class -> float64 golden (rounded once to the dtype); ints wrap
    Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b,
    Div: lambda a, b: a / b, Max: lambda a, b: np.where(a >= b, a, b),
    Min: lambda a, b: np.where(a <= b, a, b),
}


BINARY_CASES = [(cls, dt) for cls in BINARY for dt in (F16, F32, I16, I32)
                if not (cls is Div and dt.kind == "i")]  # div is float-only (validate test)


@pytest.mark.parametrize("cls,dtype", BINARY_CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_binary_counter_mode_bit_exact(cls, dtype):
    rng = np.random.default_rng(1)
    n = 1000
    ub = UB()
    a, b = random_data(dtype, n, rng), random_data(dtype, n, rng)
    if cls is Div:
        b[np.abs(b.astype(np.float64)) < 0.05] = 0.5
    ta, tb, tc = ub.tensor(dtype, n, a), ub.tensor(dtype, n, b), ub.tensor(dtype, n, fill=0)
    cls(dst=tc, src0=ta, src1=tb, count=n).execute()
    if dtype.kind == "f":
        want = round_f64(BINARY[cls](a.astype(np.float64), b.astype(np.float64)), dtype)
    else:
        want = BINARY[cls](a.astype(np.int64), b.astype(np.int64)).astype(dtype)  # wraps
    assert same_bits(tc.array(), want)


SCALAR = {Adds: lambda a, s: a + s, Muls: lambda a, s: a * s,
          Maxs: lambda a, s: np.where(a >= s, a, s), Mins: lambda a, s: np.where(a <= s, a, s)}


@pytest.mark.parametrize("cls", list(SCALAR), ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [F16, F32, I32], ids=str)
def test_tensor_scalar_converts_scalar_first(cls, dtype):
    rng = np.random.default_rng(2)
    n = 300
    scalar = 0.1 if dtype.kind == "f" else -7
    ub = UB()
    a = random_data(dtype, n, rng) if dtype.kind == "f" else rng.integers(-1000, 1000, n)
    ta, tc = ub.tensor(dtype, n, a), ub.tensor(dtype, n, fill=0)
    cls(dst=tc, src=ta, scalar=scalar, count=n).execute()
    s = float(np.asarray(scalar).astype(dtype))  # the chip holds the scalar in the dtype
    if dtype.kind == "f":
        want = round_f64(SCALAR[cls](ta.array().astype(np.float64), s), dtype)
    else:
        want = SCALAR[cls](ta.array().astype(np.int64), int(s)).astype(dtype)
    assert same_bits(tc.array(), want)
    if dtype == F16 and cls is Adds:  # fp16(0.1) differs from 0.1: the conversion matters
        assert not same_bits(tc.array(), round_f64(ta.array().astype(np.float64) + 0.1, F16))


def test_int_scalar_out_of_range_is_refused():
    ub = UB()
    t = ub.tensor(I16, 16, fill=0)
    with pytest.raises(NpusimError, match="int16"):
        Adds(dst=t, src=t, scalar=70000, count=16)
    with pytest.raises(NpusimError, match="scalar 2.5"):
        Muls(dst=t, src=t, scalar=2.5, count=16)


UNARY_EXACT = {  # correctly rounded ops: float64 golden rounded once
    Abs: np.abs, Reciprocal: lambda x: 1.0 / x, Sqrt: np.sqrt,
    Relu: lambda x: np.where(x > 0, x, 0.0),
}


@pytest.mark.parametrize("cls", list(UNARY_EXACT), ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_unary_correctly_rounded(cls, dtype):
    rng = np.random.default_rng(3)
    n = 777
    x = random_data(dtype, n, rng, 0.01, 50.0) if cls in (Sqrt, Reciprocal) \
        else random_data(dtype, n, rng)
    ub = UB()
    ts, td = ub.tensor(dtype, n, x), ub.tensor(dtype, n, fill=0)
    cls(dst=td, src=ts, count=n).execute()
    with np.errstate(all="ignore"):
        want = round_f64(UNARY_EXACT[cls](x.astype(np.float64)), dtype)
    assert same_bits(td.array(), want)


def test_relu_int32_and_negative_zero():
    ub = UB()
    ti = ub.tensor(I32, 4, [-5, 0, 7, -2**31])
    Relu(dst=ti, src=ti, count=4).execute()
    assert ti.array().tolist() == [0, 0, 7, 0]
    tf = ub.tensor(F32, 3, [-0.0, -1.0, 2.0])
    Relu(dst=tf, src=tf, count=3).execute()
    assert same_bits(tf.array(), np.array([0.0, 0.0, 2.0], F32))  # -0 -> +0


@pytest.mark.parametrize("cls,fn64", [(Exp, np.exp), (Ln, np.log)], ids=["exp", "ln"])
@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_transcendental_within_half_ulp_of_float64(cls, fn64, dtype):
    rng = np.random.default_rng(4)
    n = 2048
    x = random_data(dtype, n, rng, 0.01, 8.0)
    ub = UB()
    ts, td = ub.tensor(dtype, n, x), ub.tensor(dtype, n, fill=0)
    cls(dst=td, src=ts, count=n).execute()
    got = td.array().astype(np.float64)
    exact = fn64(x.astype(np.float64))
    ulp = np.spacing(np.abs(got).astype(dtype)).astype(np.float64)
    assert np.all(np.abs(got - exact) <= 0.5 * ulp * (1 + 1e-9))  # nearest, as documented
    # the values do not depend on the CPU's SIMD fp32 exp/log: float64 rounded once
    assert same_bits(td.array(), round_f64(exact, dtype))


def test_ln_special_values():
    ub = UB()
    t = ub.tensor(F32, 3, [0.0, -1.0, 1.0])
    Ln(dst=t, src=t, count=3).execute()
    got = t.array()
    assert got[0] == -np.inf and np.isnan(got[1]) and got[2] == 0.0


# ---------------------------------------------------------------- the repeat form

REPEAT_CASES = [  # (mask, repeat_times, dst blk/rep, src0 blk/rep, src1 blk/rep)
    (100, 3, (1, 8), (1, 8), (1, 8)),
    ((0x8000_0000_0000_0001, 0xF0F0_0000_FFFF_000F), 4, (2, 20), (1, 9), (3, 25)),
    (37, 2, (1, 16), (2, 17), (1, 0)),
]


@pytest.mark.parametrize("cls", [Add, Mul], ids=lambda c: c.name)
@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
@pytest.mark.parametrize("case", range(len(REPEAT_CASES)))
def test_binary_repeat_form_mask_and_strides(cls, dtype, case):
    mask, reps, (db, dr), (ab, ar), (bb, br) = REPEAT_CASES[case]
    per = 256 // dtype.itemsize
    if dtype == F32:  # 64 elements per repeat: the high half of the mask is unused
        mask = (0, mask[1]) if isinstance(mask, tuple) else min(mask, 64)
    rp = RepeatParams(mask=mask, repeat_times=reps, dst_blk_stride=db, dst_rep_stride=dr,
                      src0_blk_stride=ab, src0_rep_stride=ar, src1_blk_stride=bb,
                      src1_rep_stride=br)
    rng = np.random.default_rng(5)
    n = 8192 // dtype.itemsize
    ub = UB()
    a, b = random_data(dtype, n, rng), random_data(dtype, n, rng)
    ta, tb, tc = ub.tensor(dtype, n, a), ub.tensor(dtype, n, b), ub.tensor(dtype, n, fill=9)
    cls(dst=tc, src0=ta, src1=tb, repeat=rp).execute()
    d = golden_offsets(dtype.itemsize, per, mask, reps, db, dr)
    s0 = golden_offsets(dtype.itemsize, per, mask, reps, ab, ar)
    s1 = golden_offsets(dtype.itemsize, per, mask, reps, bb, br)
    want = np.full(n, 9, dtype)
    want[d] = round_f64(BINARY[cls](a[s0].astype(np.float64), b[s1].astype(np.float64)), dtype)
    assert same_bits(tc.array(), want)  # masked-out elements of dst keep their 9


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_exp_repeat_form(dtype):
    per = 256 // dtype.itemsize
    mask = (0, 0x00FF_00FF_00FF_00FF)
    rp = RepeatParams(mask=mask, repeat_times=5, dst_blk_stride=2, dst_rep_stride=16,
                      src0_blk_stride=1, src0_rep_stride=10)
    rng = np.random.default_rng(6)
    n = 4096 // dtype.itemsize
    ub = UB()
    x = random_data(dtype, n, rng, -3, 3)
    ts, td = ub.tensor(dtype, n, x), ub.tensor(dtype, n, fill=-1)
    Exp(dst=td, src=ts, repeat=rp).execute()
    want = np.full(n, -1, dtype)
    src = golden_offsets(dtype.itemsize, per, mask, 5, 1, 10)
    want[golden_offsets(dtype.itemsize, per, mask, 5, 2, 16)] = round_f64(
        np.exp(x[src].astype(np.float64)), dtype)
    assert same_bits(td.array(), want)


def test_repeat_offsets_match_loops_and_are_cached():
    rp = RepeatParams(mask=(1 << 63, 0b1011), repeat_times=3, src1_blk_stride=4,
                      src1_rep_stride=33)
    got = repeat_offsets(F16, rp, "src1", 128)
    assert np.array_equal(got, golden_offsets(2, 128, rp.mask, 3, 4, 33))
    assert repeat_offsets(F16, rp, "src1", 128) is got
    assert not got.flags.writeable


def test_repeat_form_reads_and_writes_span():
    ub = UB()
    a, c = ub.tensor(F32, 2048), ub.tensor(F32, 2048)
    rp = RepeatParams(mask=64, repeat_times=2, dst_rep_stride=16, src0_blk_stride=2,
                      src0_rep_stride=20)
    inst = Exp(dst=c, src=a, repeat=rp)
    # src: last element at repeat 1, block 7 -> (20 + 7 * 2) blocks + 7 elements
    assert inst.reads() == ((ub.buf, a.addr, a.addr + (34 * 32 + 8 * 4)),)
    assert inst.writes() == ((ub.buf, c.addr, c.addr + (16 + 8) * 32),)
    assert json.loads(json.dumps(inst.operands()))["repeat_times"] == 2


@pytest.mark.parametrize("mask", [0, 129, (1, 0)], ids=["zero", "too-many", "high-bits"])
def test_bad_masks_are_refused(mask):
    ub = UB()
    t = ub.tensor(F32, 256)  # fp32: 64 elements per repeat, so the high half must be 0
    with pytest.raises(NpusimError, match="mask"):
        Add(dst=t, src0=t, src1=t, repeat=RepeatParams(mask=mask, repeat_times=1))


def test_form_must_be_exactly_one():
    ub = UB()
    t = ub.tensor(F16, 128)
    with pytest.raises(NpusimError, match="neither"):
        Add(dst=t, src0=t, src1=t)
    with pytest.raises(NpusimError, match="both"):
        Add(dst=t, src0=t, src1=t, count=128, repeat=RepeatParams(mask=128))
    with pytest.raises(NpusimError, match="non-negative"):
        RepeatParams(mask=128, dst_rep_stride=-1)


@pytest.mark.parametrize("dtype", [F16, F32, I32], ids=str)
def test_duplicate_counter_and_repeat(dtype):
    ub = UB()
    t = ub.tensor(dtype, 512, fill=3)
    Duplicate(dst=t, scalar=1.5 if dtype.kind == "f" else -9, count=300).execute()
    want = np.full(512, 3, dtype)
    want[:300] = 1.5 if dtype.kind == "f" else -9
    assert same_bits(t.array(), want)
    per = 256 // dtype.itemsize
    mask = (0, 0b1010_0101)
    Duplicate(dst=t, scalar=2, repeat=RepeatParams(mask=mask, repeat_times=2,
                                                   dst_blk_stride=3, dst_rep_stride=5)).execute()
    want[golden_offsets(dtype.itemsize, per, mask, 2, 3, 5)] = 2
    assert same_bits(t.array(), want)


# ---------------------------------------------------------------- cast

def enumerate_format(dtype):
    """Every finite value of a 16-bit float format: (values as float64, bit patterns)."""
    pats = np.arange(1 << 16, dtype=np.uint16)
    with np.errstate(invalid="ignore"):
        vals = pats.view(dtype).astype(np.float64)
    keep = np.isfinite(vals) & ~((vals == 0) & (pats >> 15 == 1))  # drop -0 (sign kept apart)
    order = np.argsort(vals[keep], kind="stable")
    return vals[keep][order], pats[keep][order]


FORMATS = {F16: enumerate_format(F16), bfloat16: enumerate_format(bfloat16)}


def reference_round(x: float, dtype, mode: str) -> float:
    """Round an exact float64 to a 16-bit format by choosing between its two neighbours."""
    if math.isnan(x) or x == 0 or math.isinf(x):
        return x
    vals, pats = FORMATS[np.dtype(dtype)]
    beyond = vals[-1] + (vals[-1] - vals[-2])  # the next value with exponent unbounded
    if abs(x) >= beyond:  # IEEE 754 7.4: overflow goes to inf only in the rounding direction
        to_inf = mode in ("rint", "round") or mode == ("ceil" if x > 0 else "floor")
        return math.copysign(math.inf if to_inf else vals[-1], x)
    v = np.concatenate([[-beyond], vals, [beyond]])
    p = np.concatenate([[0], pats, [0]])  # beyond counts as even (a power of two)
    i = int(np.searchsorted(v, x, side="right")) - 1
    if v[i] == x:
        return x
    lo, hi, lo_odd = v[i], v[i + 1], bool(p[i] & 1)
    near = lo if x - lo < hi - x else hi if x - lo > hi - x else None
    choice = {
        "floor": lo, "ceil": hi, "trunc": lo if x > 0 else hi,
        "rint": near if near is not None else (hi if lo_odd else lo),
        "round": near if near is not None else (hi if x > 0 else lo),
        "odd": lo if lo_odd else hi,
    }[mode]
    if abs(choice) == beyond:
        return math.copysign(math.inf, choice)
    return math.copysign(choice, x) if choice == 0 else choice


def run_cast(src_dtype, dst_dtype, values, mode, n=None):
    values = np.asarray(values)
    n = len(values) if n is None else n
    ub = UB()
    ts = ub.tensor(src_dtype, n)
    ts.array()[...] = values
    td = ub.tensor(dst_dtype, n, fill=0)
    Cast(dst=td, src=ts, round_mode=mode, count=n).execute()
    return td.array().copy()


def test_cast_rounding_modes_doc_example():
    # Ascend C Cast docs: fp32 0.5 + 2**-12 to half in each mode
    x = np.float32(0.5 + 2.0 ** -12)
    up = 0.5 + 2.0 ** -11
    want = {"rint": 0.5, "floor": 0.5, "ceil": up, "round": up, "trunc": 0.5, "odd": up,
            "none": 0.5}
    for mode, value in want.items():
        assert run_cast(F32, F16, [x], mode)[0] == np.float16(value), mode


TIES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1e-9, -1e-9, 2.0 ** 30 + 0.5, -(2.0 ** 30) - 0.5]


@pytest.mark.parametrize("mode", ["rint", "floor", "ceil", "round", "trunc", "none"])
def test_cast_fp32_to_int32_modes_on_ties(mode):
    x = np.array(TIES + [3e9, -3e9, np.inf, -np.inf, np.nan], np.float32)
    got = run_cast(F32, I32, x, mode)

    def ref(v):
        if math.isnan(v):
            return 0
        if math.isinf(v):
            return 2**31 - 1 if v > 0 else -(2**31)
        f = Fraction(float(v))
        r = {"floor": math.floor(f), "ceil": math.ceil(f), "trunc": math.trunc(f),
             "rint": round(f), "none": round(f),
             "round": int(math.copysign(math.floor(abs(f) + Fraction(1, 2)), v))}[mode]
        return min(max(r, -(2**31)), 2**31 - 1)

    assert got.tolist() == [ref(v) for v in x.tolist()]


NARROW_CASES = [(dst, mode) for dst in (F16, bfloat16)
                for mode in ("rint", "floor", "ceil", "round", "trunc", "odd")
                if not (mode == "odd" and dst is bfloat16)]  # odd: fp32 -> fp16 only


@pytest.mark.parametrize("dst,mode", NARROW_CASES, ids=str)
def test_cast_fp32_to_16bit_against_enumeration(dst, mode):
    rng = np.random.default_rng(7)
    pats = rng.integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    x = pats.view(np.float32)
    ties = np.array([0.5 + 2**-12, 1 + 2**-11, 1 + 3 * 2**-11, 65520, -65520, 65519.99,
                     2**-25, 3 * 2**-25, -(2**-25), 1e-40, 3.4e38, -3.4e38, 1 + 2**-8,
                     1 + 3 * 2**-8], np.float32)
    x = np.concatenate([x, ties])
    got = run_cast(F32, dst, x, mode)
    want = np.array([reference_round(float(v), dst, mode) for v in x.tolist()])
    assert same_values(got, want)


CAST_TYPES = [F16, np.dtype(bfloat16), F32, np.dtype(np.int8), np.dtype(np.uint8), I16, I32,
              np.dtype(np.int64)]
SPECIALS = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, 255.5, -128.5, 2048.5, 65520.0,
            -65520.0, 2.0 ** 24 + 1, 3e9, -3e9, 1e-6, -1e-6, np.inf, -np.inf, np.nan]


def sample(dtype, rng, n: int = 500) -> np.ndarray:
    """Random values of a dtype: bit patterns for floats, the range for ints, plus specials."""
    if dtype.kind == "i" or dtype.kind == "u":
        info = np.iinfo(dtype)
        lo, hi = max(int(info.min), -(2**53)), min(int(info.max), 2**53)  # exact in float64
        v = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64)
        return np.concatenate([v, [lo, hi, 0, 1, -1 if lo < 0 else 2]]).astype(dtype)
    width = f"u{dtype.itemsize}"
    pats = rng.integers(0, 1 << (8 * dtype.itemsize), n, dtype=np.uint64).astype(width)
    with np.errstate(all="ignore"):
        return np.concatenate([pats.view(dtype), np.array(SPECIALS).astype(dtype)])


def round_fraction(f: Fraction, mode: str) -> int:
    if mode == "round":
        return int(math.copysign(math.floor(abs(f) + Fraction(1, 2)), f))
    return {"floor": math.floor, "ceil": math.ceil, "trunc": math.trunc, "rint": round}[mode](f)


def reference_f32(f: Fraction, mode: str) -> float:
    """Round an exact value (no overflow possible here) to fp32 from its two neighbours."""
    c = np.float32(float(f))
    if Fraction(float(c)) == f:
        return float(c)
    other = np.nextafter(c, np.float32(np.inf if Fraction(float(c)) < f else -np.inf))
    lo, hi = sorted([c, other], key=float)
    dlo, dhi = f - Fraction(float(lo)), Fraction(float(hi)) - f
    lo_even = (np.array(lo, np.float32).view(np.uint32) & 1) == 0
    tie = (lo if lo_even else hi) if mode == "rint" else (hi if f > 0 else lo)
    near = lo if dlo < dhi else hi if dlo > dhi else tie
    return float({"floor": lo, "ceil": hi, "trunc": lo if f > 0 else hi, "rint": near,
                  "round": near}[mode])


def reference_convert(v, src, dst, mode: str):
    """One value converted by the definitions (Fractions and neighbour choice)."""
    if src == dst and mode == "none":
        return v.item() if dst.kind in "iu" else float(v)  # a copy
    mode = "rint" if mode == "none" else mode  # exact pairs never round, lossy ones use rint
    x = float(v) if src.kind == "f" or src == bfloat16 else None
    if dst.kind in "iu":
        info = np.iinfo(dst)
        if x is not None and math.isnan(x):
            return 0
        if x is not None and math.isinf(x):
            return int(info.max) if x > 0 else int(info.min)
        r = round_fraction(Fraction(x) if x is not None else Fraction(int(v)), mode)
        return min(max(r, int(info.min)), int(info.max))
    if x is not None and (math.isnan(x) or math.isinf(x) or x == 0):
        return x
    f = Fraction(x) if x is not None else Fraction(int(v))
    if src == dst:
        return math.copysign(float(round_fraction(f, mode)), x)
    if dst == F32:
        return reference_f32(f, mode)
    return reference_round(float(f), dst, mode)


CAST_PAIRS = [(s, d, m) for s in CAST_TYPES for d in CAST_TYPES for m in allowed_modes(s, d)]


@pytest.mark.parametrize("src,dst,mode", CAST_PAIRS, ids=lambda v: str(v))
def test_cast_every_pair_and_mode_against_definition(src, dst, mode):
    rng = np.random.default_rng(abs(hash((str(src), str(dst), mode))) % 2**32)
    x = sample(src, rng)
    got = run_cast(src, dst, x, mode)
    want = [reference_convert(v, src, dst, mode) for v in x]
    if dst.kind in "iu":
        assert got.tolist() == want
    else:
        assert same_values(got, np.array(want, np.float64))


@pytest.mark.parametrize("dst,tdt", [(F16, torch.float16), (bfloat16, torch.bfloat16)],
                         ids=["fp16", "bf16"])
def test_cast_nearest_even_matches_torch(dst, tdt):
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.standard_normal(3000) * 10.0 ** rng.integers(-10, 10, 3000),
                        [65519.0, 65520.0, 1e-8, -3e38]]).astype(np.float32)
    got = run_cast(F32, dst, x, "rint")
    want = torch.from_numpy(x).to(tdt).to(torch.float32).numpy()
    assert same_bits(got.astype(np.float32), want)
    assert same_bits(run_cast(F32, dst, x, "none"), got)


def test_cast_fp32_to_fp16_shortcut_keeps_the_exact_path_bits():
    """fp32 -> fp16 to nearest even takes numpy's conversion; its bits equal the exact path's,
    NaN payloads included (random patterns, about 1 in 256 of them NaN, and the edges)."""
    from npusim.isa.vector_cast import FLOAT_FORMATS, _f32_to_f16_rint, round_to_float

    rng = np.random.default_rng(11)
    x = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    edges = np.array([65504, 65519.99, 65520, -65520, 2**-24, 2**-25, 3 * 2**-25, 2**-26,
                      6.1e-5, np.inf, -np.inf, np.nan, -0.0, 0.0], np.float32)
    x = np.concatenate([x, edges, np.array([0x7FC00001, 0xFFBFFFFF, 0x7F800001],
                                           np.uint32).view(np.float32)])
    with np.errstate(all="ignore"):
        want = round_to_float(x.astype(np.float64), FLOAT_FORMATS["float16"], "rint")
    assert np.isnan(x).sum() > 500
    assert same_bits(_f32_to_f16_rint(x), want.astype(np.float16))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=40),
       st.sampled_from(["rint", "floor", "ceil", "round", "trunc", "odd"]))
def test_cast_fp32_to_fp16_property(patterns, mode):
    x = np.array(patterns, np.uint32).view(np.float32)
    got = run_cast(F32, F16, x, mode)
    want = np.array([reference_round(float(v), F16, mode) for v in x.tolist()])
    assert same_values(got, want)


def neighbours_f32(v: int) -> tuple[int, int]:
    """The fp32 values around integer v, as exact Python ints."""
    c = np.float32(v)
    if int(c) > v:
        return int(np.nextafter(c, np.float32(-np.inf))), int(c)
    if int(c) < v:
        return int(c), int(np.nextafter(c, np.float32(np.inf)))
    return int(c), int(c)


def reference_int_to_f32(v: int, mode: str) -> float:
    lo, hi = neighbours_f32(v)
    if lo == hi:
        return float(lo)
    near = lo if v - lo < hi - v else hi if v - lo > hi - v else None
    lo_even = (np.float32(lo).view(np.uint32) & 1) == 0
    tie = {"rint": lo if lo_even else hi, "round": hi if v > 0 else lo}
    return float({"floor": lo, "ceil": hi, "trunc": lo if v > 0 else hi,
                  "rint": near if near is not None else tie["rint"],
                  "round": near if near is not None else tie["round"]}[mode])


@pytest.mark.parametrize("src", [I32, np.dtype(np.int64)], ids=["int32", "int64"])
@pytest.mark.parametrize("mode", ["rint", "floor", "ceil", "round", "trunc"])
def test_cast_int_to_fp32_modes(src, mode):
    rng = np.random.default_rng(9)
    top = 2**31 - 1 if src == I32 else 2**63 - 1
    v = [int(x) for x in rng.integers(-top, top, 500, dtype=np.int64)]
    v += [2**24 + 1, 2**24 + 3, -(2**24) - 1, 2**25 + 2, 2**25 + 6]  # ties
    if src != I32:
        v += [2**53 + 1, 2**62 + 2**38 + 1, 2**62 + 2**38, 2**62 + 2**38 - 1, top, -top - 1]
    got = run_cast(src, F32, np.array(v, src), mode)
    assert got.tolist() == [reference_int_to_f32(x, mode) for x in v]


def test_cast_against_torch_for_int_and_widening_pairs():
    rng = np.random.default_rng(10)
    x = (rng.standard_normal(500) * 1000).astype(np.float32)
    assert run_cast(F32, I32, x, "trunc").tolist() == \
        torch.from_numpy(x).to(torch.int32).tolist()
    i = rng.integers(-(2**31), 2**31 - 1, 500).astype(np.int32)
    assert same_bits(run_cast(I32, F32, i, "rint"), torch.from_numpy(i).to(torch.float32).numpy())
    h = x.astype(np.float16)
    assert same_bits(run_cast(F16, F32, h, "none"), h.astype(np.float32))
    b = x.astype(bfloat16)
    assert same_bits(run_cast(bfloat16, F32, b, "none"), b.astype(np.float32))


def test_cast_saturates_narrowing_ints_and_float_to_small_ints():
    got = run_cast(I32, I16, np.array([70000, -70000, 5], np.int32), "none")
    assert got.tolist() == [32767, -32768, 5]
    got = run_cast(F16, np.uint8, np.array([-3.0, 300.0, 2.5, np.nan], np.float16), "rint")
    assert got.tolist() == [0, 255, 2, 0]
    got = run_cast(np.int64, I32, np.array([2**40, -(2**40), 9], np.int64), "none")
    assert got.tolist() == [2**31 - 1, -(2**31), 9]


@pytest.mark.parametrize("mode,want", [("rint", [2, -2, 4]), ("floor", [2, -3, 3]),
                                       ("ceil", [3, -2, 4]), ("round", [3, -3, 4]),
                                       ("trunc", [2, -2, 3])])
def test_cast_float_to_same_float_rounds_to_integral(mode, want):
    got = run_cast(F32, F32, np.array([2.5, -2.5, 3.5], np.float32), mode)
    assert got.tolist() == want


def test_cast_modes_refused_where_ascend_refuses():
    ub = UB()
    f32, f16, b16 = ub.tensor(F32, 64), ub.tensor(F16, 64), ub.tensor(bfloat16, 64)
    with pytest.raises(NpusimError, match="'odd' is not allowed from float32 to bfloat16"):
        Cast(dst=b16, src=f32, round_mode="odd", count=64)
    with pytest.raises(NpusimError, match="allowed: none"):
        Cast(dst=f32, src=f16, round_mode="rint", count=64)
    with pytest.raises(NpusimError, match="'nearest'"):
        Cast(dst=f16, src=f32, round_mode="nearest", count=64)


def test_cast_repeat_form_fp16_to_fp32():
    # 64 lanes per repeat (the fp32 side fills 256 bytes); the fp16 side uses 4 blocks
    mask = (0, 0xFFFF_0000_0000_FFFF)
    rp = RepeatParams(mask=mask, repeat_times=3, dst_blk_stride=1, dst_rep_stride=10,
                      src0_blk_stride=2, src0_rep_stride=9)
    rng = np.random.default_rng(11)
    ub = UB()
    x = random_data(F16, 2048, rng)
    ts, td = ub.tensor(F16, 2048, x), ub.tensor(F32, 1024, fill=-5)
    Cast(dst=td, src=ts, repeat=rp).execute()
    want = np.full(1024, -5, F32)
    want[golden_offsets(4, 64, mask, 3, 1, 10)] = x[golden_offsets(2, 64, mask, 3, 2, 9)]
    assert same_bits(td.array(), want)


# ---------------------------------------------------------------- reductions

def torch_tree_sum(values: np.ndarray):
    """The halving tree, written with torch: pad to a power of two, add halves per level."""
    t = torch.from_numpy(np.ascontiguousarray(values))
    size = 1
    while size < t.numel():
        size *= 2
    t = torch.cat([t, torch.zeros(size - t.numel(), dtype=t.dtype)])
    while t.numel() > 1:
        half = t.numel() // 2
        t = t[:half] + t[half:]
    return t.numpy()[0]


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
@pytest.mark.parametrize("n", [1, 7, 100, 2048, 3000])
def test_reduce_sum_halving_tree(dtype, n):
    rng = np.random.default_rng(12)
    x = random_data(dtype, n, rng, -1, 1)
    ub = UB()
    ts, td = ub.tensor(dtype, n, x), ub.tensor(dtype, 16, fill=7)
    ReduceSum(dst=td, src=ts, count=n).execute()
    assert same_bits(td.array()[0], torch_tree_sum(x))
    assert np.all(td.array()[1:] == 7)
    exact = x.astype(np.float64).sum()
    tol = (1e-2 if dtype == F16 else 1e-5) * max(1.0, np.abs(x.astype(np.float64)).sum())
    assert abs(float(td.array()[0]) - exact) <= tol


def test_reduce_sum_order_differs_from_sequential():
    # fp16 (spacing 2 at 2048): sequential 2048 + 1 + 1 ... loses every 1. The tree:
    # [2048+1 -> 2048, 1+1 = 2 x7] -> [2048+2, 2+2 x3] -> [2050+4, 4+4] -> 2054 + 8 = 2062
    x = np.array([2048.0] + [1.0] * 15, np.float16)
    ub = UB()
    ts, td = ub.tensor(F16, 16, x), ub.tensor(F16, 16)
    ReduceSum(dst=td, src=ts, count=16).execute()
    sequential = np.float16(0)
    for v in x:
        sequential = np.float16(sequential + v)
    assert float(sequential) == 2048.0 and float(td.array()[0]) == 2062.0


def test_reduce_sum_repeat_form_masked_lanes_are_zero():
    rng = np.random.default_rng(13)
    mask = (0, 0xFF00_FF00_FF00_FF00)
    rp = RepeatParams(mask=mask, repeat_times=3, src0_blk_stride=1, src0_rep_stride=12)
    ub = UB()
    x = random_data(F32, 1024, rng)
    ts, td = ub.tensor(F32, 1024, x), ub.tensor(F32, 8)
    ReduceSum(dst=td, src=ts, repeat=rp).execute()
    dense = np.zeros(3 * 64, F32)
    lanes = [r * 64 + e for r in range(3) for e in range(64) if (mask[1] >> e) & 1]
    dense[lanes] = x[golden_offsets(4, 64, mask, 3, 1, 12)]
    assert same_bits(td.array()[0], torch_tree_sum(dense))


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_reduce_max_value_and_first_index(dtype):
    rng = np.random.default_rng(14)
    x = random_data(dtype, 1000, rng)
    x[[123, 800]] = 9.0  # two maxima: the first index is reported
    ub = UB()
    ts, td = ub.tensor(dtype, 1000, x), ub.tensor(dtype, 16, fill=0)
    ReduceMax(dst=td, src=ts, count=1000, cal_index=True).execute()
    assert td.array()[0] == 9.0
    assert td.array().view(f"u{dtype.itemsize}")[1] == 123
    ReduceMax(dst=td, src=ts, count=100).execute()  # no index: dst[1] untouched
    assert td.array()[0] == x[:100].max() and td.array().view(f"u{dtype.itemsize}")[1] == 123


def test_reduce_max_repeat_form_index_is_lane_number():
    ub = UB()
    x = np.zeros(512, F16)
    x[256 + 3] = 5.0  # repeat 1 (rep stride 16 blocks = 256 elements), lane 3
    x[5] = 8.0        # masked out: lane 5 of repeat 0
    ts, td = ub.tensor(F16, 512, x), ub.tensor(F16, 16)
    rp = RepeatParams(mask=(0, 0b1111), repeat_times=2, src0_rep_stride=16)
    ReduceMax(dst=td, src=ts, repeat=rp, cal_index=True).execute()
    assert td.array()[0] == 5.0 and td.array().view(np.uint16)[1] == 128 + 3


def test_reduce_max_half_index_limit():
    ub = UB()
    t, d = ub.tensor(F16, 70000), ub.tensor(F16, 16)
    with pytest.raises(NpusimError, match="16-bit index"):
        ReduceMax(dst=d, src=t, count=70000, cal_index=True)


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_block_reduce_counter_mode(dtype):
    rng = np.random.default_rng(15)
    per_block = 32 // dtype.itemsize
    n = 10 * per_block + 3  # a partial last block
    x = random_data(dtype, n, rng)
    ub = UB()
    ts, ds, dm = ub.tensor(dtype, n, x), ub.tensor(dtype, 16, fill=7), ub.tensor(dtype, 16)
    BlockReduceSum(dst=ds, src=ts, count=n).execute()
    BlockReduceMax(dst=dm, src=ts, count=n).execute()
    blocks = [x[i:i + per_block] for i in range(0, n, per_block)]
    assert same_bits(ds.array()[:11], np.array([torch_tree_sum(b) for b in blocks], dtype))
    assert np.all(ds.array()[11:] == 7)
    assert same_bits(dm.array()[:11], np.array([b.max() for b in blocks], dtype))


def test_block_reduce_repeat_form_strides_and_empty_blocks():
    rng = np.random.default_rng(16)
    mask = (0, 0x0000_00FF_0000_000F)  # fp32: blocks 0 (4 lanes) and 4 (all 8)
    rp = RepeatParams(mask=mask, repeat_times=3, dst_rep_stride=2, src0_blk_stride=1,
                      src0_rep_stride=8)
    ub = UB()
    x = random_data(F32, 192, rng)
    ts, td = ub.tensor(F32, 192, x), ub.tensor(F32, 64, fill=-7)
    BlockReduceSum(dst=td, src=ts, repeat=rp).execute()
    want = np.full(64, -7, F32)
    for r in range(3):
        want[r * 16 + 0] = torch_tree_sum(np.concatenate([x[r * 64:r * 64 + 4], np.zeros(4, F32)]))
        want[r * 16 + 4] = torch_tree_sum(x[r * 64 + 32:r * 64 + 40])
    assert same_bits(td.array(), want)


def test_whole_reduce_sum_counter_and_repeat():
    rng = np.random.default_rng(17)
    x = random_data(F16, 300, rng, -1, 1)
    ub = UB()
    ts, td = ub.tensor(F16, 300, x), ub.tensor(F16, 16, fill=7)
    WholeReduceSum(dst=td, src=ts, count=300).execute()
    chunks = [x[0:128], x[128:256], x[256:300]]
    assert same_bits(td.array()[:3], np.array([torch_tree_sum(c) for c in chunks], F16))
    rp = RepeatParams(mask=64, repeat_times=2, dst_rep_stride=3, src0_rep_stride=8)
    WholeReduceSum(dst=td, src=ts, repeat=rp).execute()
    assert same_bits(td.array()[[0, 3]], np.array([torch_tree_sum(x[:64]),
                                                   torch_tree_sum(x[128:192])], F16))


# ---------------------------------------------------------------- compare, select, gather, sort

@pytest.mark.parametrize("mode,fn", [("lt", np.less), ("gt", np.greater),
                                     ("le", np.less_equal), ("ge", np.greater_equal),
                                     ("eq", np.equal), ("ne", np.not_equal)])
@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_compare_bit_layout(mode, fn, dtype):
    rng = np.random.default_rng(18)
    n = 99  # not a multiple of 8: the last byte is padded with zeros
    a = rng.integers(-3, 3, n).astype(dtype)
    b = rng.integers(-3, 3, n).astype(dtype)
    ub = UB()
    ta, tb, tm = ub.tensor(dtype, n, a), ub.tensor(dtype, n, b), ub.tensor(np.uint8, 32, fill=255)
    Compare(dst=tm, src0=ta, src1=tb, mode=mode, count=n).execute()
    want = np.full(32, 255, np.uint8)
    want[:13] = 0
    for i in range(n):
        if fn(a[i], b[i]):
            want[i // 8] |= 1 << (i % 8)
    assert np.array_equal(tm.array(), want)


def test_compare_repeat_form_packs_lanes_per_repeat():
    ub = UB()
    a = np.arange(256, dtype=F32)
    ta, tb, tm = ub.tensor(F32, 256, a), ub.tensor(F32, 64, fill=10.0), ub.tensor(np.uint8, 32)
    rp = RepeatParams(mask=(0, 0xFFFF), repeat_times=2, src0_rep_stride=16, src1_rep_stride=0)
    Compare(dst=tm, src0=ta, src1=tb, mode="lt", count=None, repeat=rp).execute()
    # repeat 0: a[0:16] < 10 -> bits 0..9; repeat 1 reads a[128:144] -> none; other lanes 0
    assert tm.array()[:16].tolist() == [0xFF, 0x03] + [0] * 14


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_select_tensor_and_scalar_modes(dtype):
    rng = np.random.default_rng(19)
    n = 200
    pick = rng.integers(0, 2, n).astype(bool)
    mask = np.packbits(pick, bitorder="little")
    a, b = random_data(dtype, n, rng), random_data(dtype, n, rng)
    ub = UB()
    tmask = ub.tensor(np.uint8, mask.size, mask)
    ta, tb, td = ub.tensor(dtype, n, a), ub.tensor(dtype, n, b), ub.tensor(dtype, n)
    Select(dst=td, sel_mask=tmask, src0=ta, src1=tb, count=n).execute()
    assert same_bits(td.array(), np.array([a[i] if pick[i] else b[i] for i in range(n)], dtype))
    Select(dst=td, sel_mask=tmask, src0=ta, src1=0.1, count=n).execute()
    want = np.array([a[i] if pick[i] else dtype.type(0.1) for i in range(n)], dtype)
    assert same_bits(td.array(), want)


def test_compare_then_select_roundtrip_is_where():
    rng = np.random.default_rng(20)
    n = 256
    a, b = random_data(F32, n, rng), random_data(F32, n, rng)
    ub = UB()
    ta, tb, tm, td = (ub.tensor(F32, n, a), ub.tensor(F32, n, b), ub.tensor(np.uint8, 32),
                      ub.tensor(F32, n))
    Compare(dst=tm, src0=ta, src1=tb, mode="gt", count=n).execute()
    Select(dst=td, sel_mask=tm, src0=ta, src1=tb, count=n).execute()
    assert same_bits(td.array(), np.maximum(a, b))


def test_gather_byte_offsets_and_bounds():
    rng = np.random.default_rng(21)
    ub = UB()
    src = ub.tensor(F32, 256, rng.standard_normal(256))
    perm = rng.permutation(200)
    offsets = ub.tensor(np.uint32, 200, (perm * 4).astype(np.uint32))
    dst = ub.tensor(F32, 200)
    Gather(dst=dst, src=src, offsets=offsets, base=16, count=200).execute()
    assert same_bits(dst.array(), src.array()[perm + 4])
    offsets.array()[7] = 4 * 253  # + base 16 -> element 257 of 256
    with pytest.raises(MemoryAccessError, match="element 7"):
        Gather(dst=dst, src=src, offsets=offsets, base=16, count=200).execute()
    offsets.array()[7] = 6  # not a multiple of 4
    with pytest.raises(MemoryAccessError, match="multiples of 4"):
        Gather(dst=dst, src=src, offsets=offsets, base=0, count=200).execute()


@pytest.mark.parametrize("dtype", [F16, F32], ids=str)
def test_sort_stable_with_indices(dtype):
    rng = np.random.default_rng(22)
    n = 333
    x = rng.integers(-20, 20, n).astype(dtype)  # many ties
    ub = UB()
    ts, tv, ti = ub.tensor(dtype, n, x), ub.tensor(dtype, n), ub.tensor(np.uint32, n)
    Sort(dst_values=tv, dst_indices=ti, src=ts, count=n).execute()
    order = sorted(range(n), key=lambda i: -float(x[i]))
    assert ti.array().tolist() == order
    assert same_bits(tv.array(), x[order])
    neg = ub.tensor(dtype, n, -x)       # ascending, as the kernels get it: negate, sort, negate
    Sort(dst_values=tv, dst_indices=ti, src=neg, count=n).execute()
    assert np.array_equal(ti.array(), np.argsort(x, kind="stable"))


def test_sort_is_descending_only_as_sort32_and_mrgsort():
    """Ascend C's Sort32 and MrgSort sort descending only; an ascending sort is the kernel's
    own negation (Muls by -1) before and after, which it pays for."""
    ub = UB()
    ts, tv, ti = ub.tensor(F32, 64), ub.tensor(F32, 64), ub.tensor(np.uint32, 64)
    with pytest.raises(NpusimError, match="descending only"):
        Sort(dst_values=tv, dst_indices=ti, src=ts, count=64, descending=False)


def test_sort_cost_model():
    chip = npusim.load_chip("atlas-a2")
    ub = UB()
    n = 1000  # 32 groups -> ceil(log4 32) = 3 merge passes over 8-byte pairs
    ts, tv, ti = ub.tensor(F32, n), ub.tensor(F32, n), ub.tensor(np.uint32, n)
    inst = Sort(dst_values=tv, dst_indices=ti, src=ts, count=n)
    assert inst.merge_passes() == 3
    (s_start, s_per), (m_start, m_per) = (chip.vector_cost("sort32", "f32"),
                                          chip.vector_cost("merge_sort", "f32"))
    assert inst.head(chip) == s_start
    assert inst.body(chip) == pytest.approx(s_per * 32 + 3 * (m_start + m_per * 32))


# ---------------------------------------------------------------- validate, cost, bounds

@pytest.mark.parametrize("chip_name", CHIPS)
@pytest.mark.parametrize("cls", [Add, Mul, Max], ids=lambda c: c.name)
def test_validate_refuses_bf16_arithmetic(chip_name, cls):
    chip = npusim.load_chip(chip_name)
    ub = UB()
    t = ub.tensor(bfloat16, 128)
    with pytest.raises(NpusimError, match=rf"{cls.name}: dtype bfloat16 .*allowed: float16"):
        cls(dst=t, src0=t, src1=t, count=128).validate(chip)


@pytest.mark.parametrize("chip_name", CHIPS)
def test_validate_accepts_what_the_chip_runs(chip_name):
    chip = npusim.load_chip(chip_name)
    ub = UB()
    h, f, i = ub.tensor(F16, 128), ub.tensor(F32, 128), ub.tensor(I32, 128)
    accepted = []
    for inst in (Add(dst=h, src0=h, src1=h, count=128), Exp(dst=f, src=f, count=128),
                 Cast(dst=f, src=h, count=128), Cast(dst=i, src=f, round_mode="floor", count=128),
                 Relu(dst=i, src=i, count=128)):
        inst.validate(chip)         # raises NpusimError for what the chip does not run
        accepted.append(type(inst).__name__)
    assert accepted == ["Add", "Exp", "Cast", "Cast", "Relu"]


def test_validate_refuses_int_div_and_int_exp():
    chip = npusim.load_chip("atlas-a2")
    ub = UB()
    t = ub.tensor(I32, 64)
    with pytest.raises(NpusimError, match="div: dtype int32"):
        Div(dst=t, src0=t, src1=t, count=64).validate(chip)
    with pytest.raises(NpusimError, match="exp: dtype int32"):
        Exp(dst=t, src=t, count=64).validate(chip)


def test_validate_cast_dtypes_per_chip():
    ub = UB()
    f, b, q = ub.tensor(F32, 64), ub.tensor(bfloat16, 64), ub.tensor(np.int64, 64)
    a2, training = npusim.load_chip("atlas-a2"), npusim.load_chip("atlas-training")
    Cast(dst=b, src=f, count=64).validate(a2)
    Cast(dst=f, src=q, count=64).validate(a2)
    with pytest.raises(NpusimError, match="cast: dtype bfloat16 .*atlas-training"):
        Cast(dst=b, src=f, count=64).validate(training)
    with pytest.raises(NpusimError, match="cast: dtype int64"):
        Cast(dst=f, src=q, count=64).validate(training)
    Duplicate(dst=b, scalar=1.0, count=64).validate(a2)  # a fill: bf16 storage is fine
    with pytest.raises(NpusimError, match="duplicate: dtype bfloat16"):
        Duplicate(dst=b, scalar=1.0, count=64).validate(training)


def test_validate_repeat_times_placement_and_alignment():
    chip = npusim.load_chip("atlas-a2")
    ub = UB()
    t = ub.tensor(F16, 256 * 128)
    with pytest.raises(NpusimError, match="repeat_times = 256; allowed: 0..255"):
        Add(dst=t, src0=t, src1=t, repeat=RepeatParams(mask=128, repeat_times=256)) \
            .validate(chip)
    with pytest.raises(NpusimError, match="not 32-byte aligned"):
        Add(dst=t[8], src0=t, src1=t, count=128).validate(chip)
    l1 = UB("L1").tensor(F16, 128)
    with pytest.raises(NpusimError, match="vector instructions work on UB"):
        Add(dst=l1, src0=l1, src1=l1, count=128).validate(chip)


@pytest.mark.parametrize("chip_name", CHIPS)
def test_add_cost_head_plus_body(chip_name):
    chip = npusim.load_chip(chip_name)
    ub = UB()
    h, f = ub.tensor(F16, 2048), ub.tensor(F32, 2048)
    (s16, r16), (_, r32) = chip.vector_cost("add", "f16"), chip.vector_cost("add", "f32")
    add = Add(dst=h, src0=h, src1=h, count=2048)
    assert add.head(chip) + add.body(chip) == pytest.approx(s16 + r16 * 16)
    assert Add(dst=f, src0=f, src1=f, count=2048).body(chip) == pytest.approx(r32 * 32)
    assert Add(dst=h, src0=h, src1=h, count=129).repeats() == 2
    rep = Add(dst=h, src0=h, src1=h, repeat=RepeatParams(mask=1, repeat_times=7))
    assert rep.body(chip) == pytest.approx(r16 * 7)


def test_cost_classes():
    chip = npusim.load_chip("atlas-a2")
    ub = UB()
    h, f, i = ub.tensor(F16, 2048), ub.tensor(F32, 2048), ub.tensor(I32, 2048)
    cost = chip.vector_cost
    assert Add(dst=i, src0=i, src1=i, count=64).head(chip) == cost("add", "int")[0]   # int
    assert Add(dst=i, src0=i, src1=i, count=64).head(chip) != cost("add", "f32")[0]
    assert Relu(dst=i, src=i, count=2048).head(chip) == cost("relu", "int")[0]
    cast = Cast(dst=f, src=h, count=2048)                                     # wider: f32
    assert (cast.head(chip), cast.body(chip)) == (cost("cast", "f32")[0],
                                                  cost("cast", "f32")[1] * 32)
    s2f = Cast(dst=f, src=i, count=2048)                                      # tie: src int
    assert (s2f.head(chip), s2f.body(chip)) == (cost("cast", "int")[0],
                                                cost("cast", "int")[1] * 32)
    exp = Exp(dst=h, src=h, count=2048)
    assert exp.body(chip) == pytest.approx(cost("exp", "f16")[1] * 16)
    rs = ReduceSum(dst=h, src=h, count=2048)  # 16 repeats, then 1: two vcadd passes
    start, per = cost("reduce_sum", "f16")
    assert rs.body(chip) == pytest.approx(per * 17 + start)


@pytest.mark.parametrize("inst", [
    lambda t, u: Add(dst=u, src0=t, src1=t, count=65),
    lambda t, u: Exp(dst=u, src=t, repeat=RepeatParams(mask=64, repeat_times=2,
                                                       src0_rep_stride=8)),
    lambda t, u: Cast(dst=u, src=t, count=65),
], ids=["count", "repeat-stride", "cast"])
def test_overrun_is_a_memory_access_error(inst):
    ub = UB()
    t, u = ub.tensor(F32, 64), ub.tensor(F32, 128)
    with pytest.raises(MemoryAccessError, match="runs past the end"):
        inst(t, u)


def test_dsl_issues_validates_and_executes():
    chip = npusim.load_chip("atlas-a2")
    ub = UB()
    a, b, c = ub.tensor(F16, 256, 1.5), ub.tensor(F16, 256, 2.0), ub.tensor(F16, 256, fill=0)
    ctx = CoreContext(chip, "aiv0", "aiv", 0, 1, {"UB": ub.buf}, pipes=("S", "V", "MTE2", "MTE3"),
                      eager=True)
    with recording(ctx):
        dsl.add(c, a, b, 256)
        dsl.muls(c, c, 2.0, repeat=RepeatParams(mask=64, repeat_times=1))
        bad = ub.tensor(bfloat16, 128)
        with pytest.raises(NpusimError, match="bfloat16"):
            dsl.exp(bad, bad, 128)
    assert [type(i).__name__ for i in ctx.stream] == ["Add", "Muls"]
    assert c.array()[:64].tolist() == [7.0] * 64 and c.array()[64:].tolist() == [3.5] * 192
