"""Vector-unit instructions (PIPE_V): the shared operand machinery and the element-wise ops.

Operand forms, as Ascend C has them:

* counter mode, ``count=N``: the first N elements of every operand, contiguous;
* the repeat form, ``repeat=RepeatParams(...)``: ``repeat_times`` iterations of 256 bytes, i.e.
  8 data blocks of 32 bytes per operand, ``*_blk_stride`` blocks apart inside an iteration and
  ``*_rep_stride`` blocks apart between iterations, as Ascend C's BinaryRepeatParams and
  UnaryRepeatParams (a one-source instruction's source uses the ``src0_*`` strides). ``mask``
  picks the elements of every iteration: an int k takes the first k, a pair
  ``(mask_high, mask_low)`` of 64-bit ints is a bit mask (bit i of mask_low is element i, bit i
  of mask_high is element 64 + i). Only masked-in elements of dst are written (hardware.md §2.3,
  HIDIM and MASK).

Both forms become element offsets through one helper, :func:`repeat_offsets`, cached per
(itemsize, elements per repeat, RepeatParams, operand), so every instruction supports both
without code of its own. An iteration holds 256 bytes of the instruction's widest operand
(``lane_dtype``); a narrower operand (a cast's fp16 side) uses fewer blocks per iteration.

Cost: ``head`` is the start-up and ``body`` the slope x repeats of the chip's ``[vector.cost]``
entry named by the class attribute ``op`` (PTO-VEC profile, hardware.md §2.3). Repeats are
``repeat_times`` in the repeat form and ceil(count x itemsize / 256) in counter mode, with the
itemsize of ``lane_dtype``. Cost class of a dtype: "f16" for 2-byte floats (fp16 and bf16),
"f32" for 4-byte floats, "int" for integers (the chip falls back to f32 where a class is
missing).

Numerics: every instruction computes in its own dtype with numpy and rounds when it stores.
numpy's fp16 and fp32 add, sub, mul, div, reciprocal and sqrt are correctly rounded per
operation (fp16 is computed through fp32, whose 24 bits make the double rounding innocuous).
Transcendental results (exp, ln) are numpy's correctly-rounded-ish values in the dtype: numpy's
float64 function rounded once to the dtype (numpy's own fp32 exp/log are SIMD approximations
that differ between CPUs by an ulp or more), not the chip's own ULP behaviour. Scalars of
adds/muls/maxs/mins/duplicate are first converted to the tensor dtype, as the chip does.
Floating-point exceptions (overflow, invalid) are values: ``launch()`` ignores numpy's
warnings for the whole run, and counter-mode instructions compute straight into views of
their operands made once per instruction (``counter_views``).
Assumed, not documented: integer add, sub and mul wrap (two's complement); max and min
propagate NaN; relu(x) = x where x > 0, else +0 (so relu(NaN) = 0).

Checked: operand bounds at construction (MemoryAccessError); at issue, dtypes against the chip
(arithmetic in ``compute_dtypes``, so A2's bf16 is refused: its vector unit only converts bf16),
operands in UB and 32-byte aligned, repeat_times <= ``max_repeat_times``.
Not modelled: UB bank conflicts (hardware.md §2.2), the mask register as state (each instruction
carries its own mask), Ascend C's rules on partially overlapping dst and src, the float overflow
mode register (saturation vs INF/NaN: IEEE INF/NaN behaviour throughout).
"""

import math
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import ClassVar

import numpy as np

from npusim.dtypes import is_float, name_of
from npusim.errors import NpusimError

from .base import Instr, Pipe

REPEAT_BYTES = 256  # bytes of one operand in one repeat (HIDIM; PLAT-PY VECTOR_INST_BLOCK_WIDTH)
BLOCK_BYTES = 32    # one data block (HIDIM)
MASK_BITS = 128     # width of the mask register (hardware.md §2.3, MASK)

FLOATS = ("float16", "float32")
ARITH = ("float16", "float32", "int16", "int32")  # Ascend C Add/Sub/Mul/Max/Min/Adds/... on A2
OPERANDS = ("dst", "src0", "src1")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


@dataclass(frozen=True, kw_only=True, slots=True)
class RepeatParams:
    """Mask, repeat count and strides of the repeat form (BinaryRepeatParams, in 32-byte blocks).

    Reductions read ``dst_rep_stride`` in Ascend C's unit for them: one repeat's result (one
    element for whole_reduce_sum, eight for block_reduce_*); use 1 for packed results.
    """

    mask: int | tuple[int, int]
    repeat_times: int = 1
    dst_blk_stride: int = 1
    src0_blk_stride: int = 1
    src1_blk_stride: int = 1
    dst_rep_stride: int = 8
    src0_rep_stride: int = 8
    src1_rep_stride: int = 8

    def __post_init__(self):
        if isinstance(self.mask, list):
            object.__setattr__(self, "mask", tuple(self.mask))
        mask = self.mask
        pair = isinstance(mask, tuple) and len(mask) == 2 and all(_is_int(m) for m in mask)
        if not (_is_int(mask) or pair):
            raise NpusimError(f"RepeatParams.mask must be an int (first k elements) or a pair "
                              f"(mask_high, mask_low) of 64-bit ints, got {mask!r}")
        if pair and not all(0 <= m < 1 << 64 for m in mask):
            raise NpusimError(f"RepeatParams.mask halves must lie in [0, 2**64), got {mask!r}")
        for f in fields(self)[1:]:
            value = getattr(self, f.name)
            if not _is_int(value) or value < 0:
                raise NpusimError(f"RepeatParams.{f.name} must be a non-negative int, "
                                  f"got {value!r}")

    def strides(self, which: str) -> tuple[int, int]:
        """(block stride, repeat stride) of operand ``which`` ('dst', 'src0' or 'src1')."""
        return getattr(self, f"{which}_blk_stride"), getattr(self, f"{which}_rep_stride")


@lru_cache(maxsize=512)
def lane_mask(mask, per_repeat: int) -> np.ndarray:
    """Boolean array of the ``per_repeat`` elements of one repeat that ``mask`` selects."""
    if isinstance(mask, tuple):
        bits = (int(mask[0]) << 64) | int(mask[1])
        if bits >> per_repeat:
            raise NpusimError(f"mask {mask!r} sets bits beyond the {per_repeat} elements of a "
                              f"repeat; allowed: bits 0..{per_repeat - 1}")
        raw = np.frombuffer(bits.to_bytes(MASK_BITS // 8, "little"), np.uint8)
        sel = np.unpackbits(raw, bitorder="little")[:per_repeat].astype(bool)
    else:
        if not 1 <= mask <= per_repeat:
            raise NpusimError(f"mask {mask} out of range; allowed: 1..{per_repeat} elements "
                              "per repeat for this dtype")
        sel = np.arange(per_repeat) < mask
    sel.setflags(write=False)
    return sel


@lru_cache(maxsize=2048)
def _lanes(itemsize: int, per_repeat: int, mask, repeat_times: int, blk: int, rep: int):
    """(element offsets, lane numbers, span in elements) of the masked-in elements."""
    sel = np.flatnonzero(lane_mask(mask, per_repeat))
    per_block = BLOCK_BYTES // itemsize
    r = np.arange(repeat_times, dtype=np.int64)[:, None]
    offsets = (r * (rep * per_block) + (sel // per_block) * (blk * per_block)
               + sel % per_block).ravel()
    lanes = (r * per_repeat + sel).ravel()
    offsets.setflags(write=False)
    lanes.setflags(write=False)
    span = int(offsets.max()) + 1 if offsets.size else 0
    return offsets, lanes, span


def repeat_offsets(dtype, params: RepeatParams, which: str, per_repeat: int) -> np.ndarray:
    """Element offsets (units of ``dtype``) of the masked-in elements of operand ``which``.

    Ordered repeat by repeat, element by element; read-only and cached.
    """
    blk, rep = params.strides(which)
    return _lanes(np.dtype(dtype).itemsize, per_repeat, params.mask, params.repeat_times,
                  blk, rep)[0]


def repeat_span(dtype, params: RepeatParams, which: str, per_repeat: int) -> int:
    """Elements from the operand's start to one past its last masked-in element."""
    blk, rep = params.strides(which)
    return _lanes(np.dtype(dtype).itemsize, per_repeat, params.mask, params.repeat_times,
                  blk, rep)[2]


def repeat_lanes(params: RepeatParams, per_repeat: int) -> np.ndarray:
    """Lane numbers (repeat x per_repeat + element) of the masked-in elements, in order."""
    return _lanes(1, per_repeat, params.mask, params.repeat_times, 0, 0)[1]


def cost_class(dtype) -> str:
    """'f16' for 2-byte floats (fp16, bf16), 'f32' for 4-byte floats, 'int' for integers."""
    dt = np.dtype(dtype)
    if is_float(dt):
        return "f16" if dt.itemsize == 2 else "f32"
    return "int"


_SCALARS: dict = {}   # (type, value, sign, dtype) -> converted scalar (scalar_as)


def scalar_as(value, dtype, what: str):
    """``value`` converted to ``dtype`` as the chip's scalar register would hold it."""
    kind = type(value)
    if kind is int or (kind is float and value == value):   # cached: kernels repeat constants
        key = (kind, value, math.copysign(1.0, value) if kind is float else 0, dtype)
        hit = _SCALARS.get(key)
        if hit is None:
            hit = _SCALARS[key] = _scalar_as(value, dtype, what)
        return hit
    return _scalar_as(value, dtype, what)


def _scalar_as(value, dtype, what: str):
    dt = np.dtype(dtype)
    if is_float(dt):
        if not isinstance(value, (int, float, np.number)) or isinstance(value, bool):
            raise NpusimError(f"{what}: scalar must be a number, got {value!r}")
        with np.errstate(all="ignore"):
            return np.asarray(value, np.float64).astype(dt)[()]
    info = np.iinfo(dt)
    integral = _is_int(value) or (isinstance(value, (float, np.floating))
                                  and float(value).is_integer())
    if not integral or not info.min <= int(value) <= info.max:
        raise NpusimError(f"{what}: scalar {value!r} is not a {name_of(dt)} value; allowed: "
                          f"integers in [{info.min}, {info.max}]")
    return dt.type(int(value))


def same_dtype(what: str, *tensors) -> None:
    dts = {t.dtype for t in tensors}
    if len(dts) > 1:
        raise NpusimError(f"{what}: operands must share one dtype, got "
                          f"{', '.join(str(name_of(t.dtype)) for t in tensors)}")


@lru_cache(maxsize=64)
def dtype_name(dt) -> str | None:
    """npusim's name of a numpy dtype (cached ``name_of``)."""
    return name_of(dt)


def check_chip_dtypes(what: str, chip, dtypes, allowed) -> None:
    """Raise unless every dtype of ``dtypes`` is in ``allowed`` (names)."""
    for dt in dtypes:
        name = dtype_name(dt)
        if name not in allowed:
            raise NpusimError(f"{what}: dtype {name} is not supported on chip {chip.name!r}; "
                              f"allowed: {', '.join(allowed) or 'none'}")


def _check_form(inst) -> None:
    count, repeat = inst.count, inst.repeat
    if (count is None) == (repeat is None):
        raise NpusimError(f"{inst.name}: give either count= (counter mode) or repeat= (the "
                          f"repeat form), not {'both' if count is not None else 'neither'}")
    if count is not None and (not _is_int(count) or count < 0):
        raise NpusimError(f"{inst.name}: count must be a non-negative int, got {count!r}")
    if repeat is not None:
        if not isinstance(repeat, RepeatParams):
            raise NpusimError(f"{inst.name}: repeat must be a RepeatParams, got {repeat!r}")
        lane_mask(repeat.mask, inst.per_repeat())


@dataclass(frozen=True, kw_only=True, slots=True)
class VectorInstr(Instr):
    """Base of every vector instruction: operand forms, bounds, cost, dtype checks.

    Subclasses list their tensors in ``operand_list()`` as (tensor, which, writes), ``which``
    naming the RepeatParams strides the tensor uses, and implement ``execute``.
    """

    pipe: ClassVar[str] = Pipe.V
    op: ClassVar[str] = ""
    op_dtypes: ClassVar[tuple[str, ...]] = ARITH
    count: int | None = None
    repeat: RepeatParams | None = None
    # computed once: (operand_list(), reads, writes) at construction; (chip, head, body) at
    # validate (the issue), so the run and the race detector do not recompute them
    spans: tuple = field(default=(), init=False, repr=False, compare=False)
    timing: tuple = field(default=(None, 0.0, 0.0), init=False, repr=False, compare=False)
    arrays: tuple = field(default=(), init=False, repr=False, compare=False)   # counter_views

    def __post_init__(self):
        count = self.count
        if not (self.repeat is None and type(count) is int and count >= 0):
            _check_form(self)
        ops = self.operand_list()
        reads, writes = [], []
        for tensor, which, w in ops:
            nbytes = self.span_bytes(tensor, which)
            addr = tensor.addr
            if addr < 0 or addr + nbytes > tensor.limit:   # the message only then
                tensor.check(nbytes, f"{self.name} {'write' if w else 'read'} of {which}")
            (writes if w else reads).append((tensor.store, addr, addr + nbytes))
        self.check_operands()
        object.__setattr__(self, "spans", (ops, tuple(reads), tuple(writes)))

    # -- what subclasses describe
    def operand_list(self) -> tuple:
        raise NotImplementedError

    def check_operands(self) -> None:
        """Extra checks of the operands that need no chip (dtype agreement, modes)."""

    def lane_dtype(self) -> np.dtype:
        """The dtype whose 256 bytes make one repeat."""
        return self.dst.dtype

    def cost_dtype(self) -> np.dtype:
        return self.lane_dtype()

    def checked_dtypes(self) -> tuple:
        return tuple(t.dtype for t, _, _ in self.spans[0])

    def allowed_dtypes(self, chip) -> tuple:
        return tuple(d for d in self.op_dtypes if d in chip.compute_dtypes)

    def align_bytes(self, which: str, chip) -> int:
        return chip.ub_align_bytes

    def extra_operands(self) -> dict:
        return {}

    # -- the shared machinery
    def per_repeat(self) -> int:
        return REPEAT_BYTES // self.lane_dtype().itemsize

    def lanes(self) -> int:
        """Lanes the instruction covers: count, or repeat_times x elements per repeat."""
        if self.repeat is None:
            return self.count
        return self.repeat.repeat_times * self.per_repeat()

    def counter_views(self) -> tuple:
        """Counter mode: every operand's numpy view (``operand_list`` order), made at the first
        execute and kept (UB arrays live as long as the launch)."""
        views = self.arrays
        if not views:
            count = self.count
            views = tuple(t.array(count) for t, _, _ in self.spans[0])
            object.__setattr__(self, "arrays", views)
        return views

    def element_offsets(self, tensor, which: str) -> np.ndarray:
        return repeat_offsets(tensor.dtype, self.repeat, which, self.per_repeat())

    def span_bytes(self, tensor, which: str) -> int:
        if self.repeat is None:
            return self.count * tensor.dtype.itemsize
        return repeat_span(tensor.dtype, self.repeat, which, self.per_repeat()) \
            * tensor.dtype.itemsize

    def load(self, tensor, which: str) -> np.ndarray:
        """The operand's values: a view in counter mode, the masked-in elements otherwise."""
        if self.repeat is None:
            return tensor.array(self.count)
        flat = tensor.array(repeat_span(tensor.dtype, self.repeat, which, self.per_repeat()))
        return flat[self.element_offsets(tensor, which)]

    def store(self, tensor, which: str, values) -> None:
        """Write ``values`` (rounded to the tensor dtype) to the masked-in elements."""
        if self.repeat is None:
            tensor.array(self.count)[...] = values
            return
        flat = tensor.array(repeat_span(tensor.dtype, self.repeat, which, self.per_repeat()))
        flat[self.element_offsets(tensor, which)] = values

    def repeats(self) -> int:
        if self.repeat is not None:
            return self.repeat.repeat_times
        return -(-self.count * self.lane_dtype().itemsize // REPEAT_BYTES)

    def cost(self, chip) -> tuple[float, float]:
        dt = self.cost_dtype()
        hit = _COSTS.get((self.op, dt, id(chip)))
        if hit is None or hit[0] is not chip:
            hit = _COSTS[(self.op, dt, id(chip))] = (chip, chip.vector_cost(self.op,
                                                                             cost_class(dt)))
        return hit[1]

    def head(self, chip) -> float:
        timing = self.timing
        if timing[0] is chip:
            return timing[1]
        return self.cost(chip)[0]

    def body(self, chip) -> float:
        timing = self.timing
        if timing[0] is chip:
            return timing[2]
        return self.cost(chip)[1] * self.repeats()

    def validate(self, chip) -> None:
        allowed = _allowed_on(self, chip)
        for dt in self.checked_dtypes():
            if dtype_name(dt) not in allowed:
                check_chip_dtypes(self.name, chip, (dt,), allowed)
        if chip.repeat_bytes != REPEAT_BYTES:
            raise NpusimError(f"{self.name}: chip {chip.name!r} has repeat_bytes = "
                              f"{chip.repeat_bytes}; npusim's vector ISA models 256")
        if self.repeat is not None and self.repeat.repeat_times > chip.max_repeat_times:
            raise NpusimError(f"{self.name}: repeat_times = {self.repeat.repeat_times}; allowed: "
                              f"0..{chip.max_repeat_times} on chip {chip.name!r}")
        for tensor, which, _ in self.spans[0]:
            _check_placement(self.name, tensor, which, self.align_bytes(which, chip))
        head, slope = self.cost(chip)
        object.__setattr__(self, "timing", (chip, head, slope * self.repeats()))

    def reads(self) -> tuple:
        return self.spans[1]

    def writes(self) -> tuple:
        return self.spans[2]

    def operands(self) -> dict:
        form = ({"count": self.count} if self.repeat is None else
                {"repeat_times": self.repeat.repeat_times, "mask": self.repeat.mask})
        return {"dtype": name_of(self.lane_dtype()), **form, **self.extra_operands()}


_ALLOWED: dict = {}  # (instruction class, id(chip)) -> (chip, allowed dtype names)
_COSTS: dict = {}    # (op, cost dtype, id(chip)) -> (chip, (head, cycles per repeat))


def _allowed_on(inst, chip) -> tuple:
    """``inst.allowed_dtypes(chip)``, computed once per instruction class and chip."""
    key = (type(inst), id(chip))
    hit = _ALLOWED.get(key)
    if hit is None or hit[0] is not chip:
        hit = _ALLOWED[key] = (chip, inst.allowed_dtypes(chip))
    return hit[1]


def _check_placement(what: str, tensor, which: str, align: int) -> None:
    if tensor.kind != "UB":
        raise NpusimError(f"{what}: {which} is in {tensor.kind}; vector instructions work on UB")
    if tensor.addr % align:
        raise NpusimError(f"{what}: {which} at {tensor.where()} is not {align}-byte aligned, "
                          f"as the vector unit requires")


@dataclass(frozen=True, kw_only=True, slots=True)
class Binary(VectorInstr):
    """dst = fn(src0, src1), element by element, in the operands' dtype."""

    fn: ClassVar = None
    dst: object
    src0: object
    src1: object

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True), (self.src0, "src0", False), (self.src1, "src1", False))

    def check_operands(self) -> None:
        same_dtype(self.name, self.dst, self.src0, self.src1)

    def execute(self) -> None:
        if self.repeat is None:     # counter mode: straight into dst (numpy handles overlap)
            dst, a, b = self.counter_views()
            self.fn(a, b, out=dst)  # FP exceptions are values: launch() ignores them
            return
        a, b = self.load(self.src0, "src0"), self.load(self.src1, "src1")
        with np.errstate(all="ignore"):
            self.store(self.dst, "dst", self.fn(a, b))


@dataclass(frozen=True, kw_only=True, slots=True)
class Add(Binary):
    """Add: dst = src0 + src1."""

    name: ClassVar[str] = "add"
    op: ClassVar[str] = "add"
    fn: ClassVar = np.add


@dataclass(frozen=True, kw_only=True, slots=True)
class Sub(Binary):
    """Sub: dst = src0 - src1."""

    name: ClassVar[str] = "sub"
    op: ClassVar[str] = "sub"
    fn: ClassVar = np.subtract


@dataclass(frozen=True, kw_only=True, slots=True)
class Mul(Binary):
    """Mul: dst = src0 * src1."""

    name: ClassVar[str] = "mul"
    op: ClassVar[str] = "mul"
    fn: ClassVar = np.multiply


@dataclass(frozen=True, kw_only=True, slots=True)
class Div(Binary):
    """Div: dst = src0 / src1 (floats only)."""

    name: ClassVar[str] = "div"
    op: ClassVar[str] = "div"
    op_dtypes: ClassVar[tuple[str, ...]] = FLOATS
    fn: ClassVar = np.true_divide


@dataclass(frozen=True, kw_only=True, slots=True)
class Max(Binary):
    """Max: dst = max(src0, src1); NaN propagates (assumed)."""

    name: ClassVar[str] = "max"
    op: ClassVar[str] = "max"
    fn: ClassVar = np.maximum


@dataclass(frozen=True, kw_only=True, slots=True)
class Min(Binary):
    """Min: dst = min(src0, src1); NaN propagates (assumed)."""

    name: ClassVar[str] = "min"
    op: ClassVar[str] = "min"
    fn: ClassVar = np.minimum


@dataclass(frozen=True, kw_only=True, slots=True)
class TensorScalar(VectorInstr):
    """dst = fn(src, scalar); the scalar is first converted to the tensor dtype."""

    fn: ClassVar = None
    dst: object
    src: object
    scalar: float

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True), (self.src, "src0", False))

    def check_operands(self) -> None:
        same_dtype(self.name, self.dst, self.src)
        scalar_as(self.scalar, self.dst.dtype, self.name)

    def execute(self) -> None:
        s = scalar_as(self.scalar, self.dst.dtype, self.name)
        if self.repeat is None:     # counter mode: straight into dst (numpy handles overlap)
            dst, src = self.counter_views()
            self.fn(src, s, out=dst)  # FP exceptions are values: launch() ignores them
            return
        with np.errstate(all="ignore"):
            self.store(self.dst, "dst", self.fn(self.load(self.src, "src0"), s))

    def extra_operands(self) -> dict:
        return {"scalar": float(self.scalar)}


@dataclass(frozen=True, kw_only=True, slots=True)
class Adds(TensorScalar):
    """Adds: dst = src + scalar."""

    name: ClassVar[str] = "adds"
    op: ClassVar[str] = "adds"
    fn: ClassVar = np.add


@dataclass(frozen=True, kw_only=True, slots=True)
class Muls(TensorScalar):
    """Muls: dst = src * scalar."""

    name: ClassVar[str] = "muls"
    op: ClassVar[str] = "muls"
    fn: ClassVar = np.multiply


@dataclass(frozen=True, kw_only=True, slots=True)
class Maxs(TensorScalar):
    """Maxs: dst = max(src, scalar)."""

    name: ClassVar[str] = "maxs"
    op: ClassVar[str] = "maxs"
    fn: ClassVar = np.maximum


@dataclass(frozen=True, kw_only=True, slots=True)
class Mins(TensorScalar):
    """Mins: dst = min(src, scalar)."""

    name: ClassVar[str] = "mins"
    op: ClassVar[str] = "mins"
    fn: ClassVar = np.minimum


@dataclass(frozen=True, kw_only=True, slots=True)
class Unary(VectorInstr):
    """dst = fn(src), element by element, in the operands' dtype."""

    fn: ClassVar = None
    op_dtypes: ClassVar[tuple[str, ...]] = FLOATS
    dst: object
    src: object

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True), (self.src, "src0", False))

    def check_operands(self) -> None:
        same_dtype(self.name, self.dst, self.src)

    def execute(self) -> None:
        with np.errstate(all="ignore"):
            if self.repeat is None:     # counter mode: the result assigned to dst's view
                dst, src = self.counter_views()
                dst[...] = self.fn(src)
            else:
                self.store(self.dst, "dst", self.fn(self.load(self.src, "src0")))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.zeros((), x.dtype))


def _exp(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    return np.exp(wide, out=wide).astype(x.dtype)


def _ln(x: np.ndarray) -> np.ndarray:
    wide = x.astype(np.float64)
    return np.log(wide, out=wide).astype(x.dtype)


@dataclass(frozen=True, kw_only=True, slots=True)
class Exp(Unary):
    """Exp: dst = e ** src (numpy's float64 value, rounded once to the dtype)."""

    name: ClassVar[str] = "exp"
    op: ClassVar[str] = "exp"
    fn: ClassVar = staticmethod(_exp)


@dataclass(frozen=True, kw_only=True, slots=True)
class Ln(Unary):
    """Ln: dst = log(src) (float64, rounded once); log(0) = -inf, log(x < 0) = NaN."""

    name: ClassVar[str] = "ln"
    op: ClassVar[str] = "ln"
    fn: ClassVar = staticmethod(_ln)


@dataclass(frozen=True, kw_only=True, slots=True)
class Abs(Unary):
    """Abs: dst = |src|."""

    name: ClassVar[str] = "abs"
    op: ClassVar[str] = "abs"
    fn: ClassVar = np.abs


@dataclass(frozen=True, kw_only=True, slots=True)
class Reciprocal(Unary):
    """Reciprocal: dst = 1 / src, correctly rounded."""

    name: ClassVar[str] = "reciprocal"
    op: ClassVar[str] = "reciprocal"
    fn: ClassVar = np.reciprocal


@dataclass(frozen=True, kw_only=True, slots=True)
class Sqrt(Unary):
    """Sqrt: dst = sqrt(src), correctly rounded; NaN for negative inputs."""

    name: ClassVar[str] = "sqrt"
    op: ClassVar[str] = "sqrt"
    fn: ClassVar = np.sqrt


@dataclass(frozen=True, kw_only=True, slots=True)
class Relu(Unary):
    """Relu: dst = src where src > 0, else +0 (int32 too, as Ascend C's Relu on A2)."""

    name: ClassVar[str] = "relu"
    op: ClassVar[str] = "relu"
    op_dtypes: ClassVar[tuple[str, ...]] = ("float16", "float32", "int32")
    fn: ClassVar = staticmethod(_relu)


@dataclass(frozen=True, kw_only=True, slots=True)
class Duplicate(VectorInstr):
    """Duplicate: every (masked-in) element of dst = scalar, converted to dst's dtype.

    A pure fill, so any 2- or 4-byte dtype the vector unit stores (compute or cast dtypes,
    including bf16 on A2) is accepted.
    """

    name: ClassVar[str] = "duplicate"
    op: ClassVar[str] = "duplicate"
    dst: object
    scalar: float

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True),)

    def check_operands(self) -> None:
        scalar_as(self.scalar, self.dst.dtype, self.name)

    def allowed_dtypes(self, chip) -> tuple:
        names = dict.fromkeys([*chip.compute_dtypes, *chip.cast_dtypes])
        return tuple(n for n in names if n in ("float16", "bfloat16", "float32", "int16",
                                               "int32", "uint16", "uint32"))

    def execute(self) -> None:
        value = scalar_as(self.scalar, self.dst.dtype, self.name)
        if self.repeat is None:
            self.counter_views()[0][...] = value
            return
        self.store(self.dst, "dst", value)

    def extra_operands(self) -> dict:
        return {"scalar": float(self.scalar)}
