"""Reductions on the vector unit: ReduceSum, ReduceMax, BlockReduceSum/Max, WholeReduceSum.

Summation order (fixed and documented, so goldens can reproduce it bit for bit): a pairwise
halving tree in the source dtype. The values are padded with zeros to a power of two, then
``a[:h] + a[h:]`` is taken repeatedly, each level rounded to the dtype, until one value is
left. The tree runs over lane positions: in counter mode the ``count`` elements; in the repeat
form every lane of every repeat (repeat x elements per repeat + element), masked-out lanes
contributing zero. The chip's own order (vcadd inside a repeat, then over the partials) is not
published; this order is a stand-in with the same pairwise error growth.

Results: ``reduce_sum``/``reduce_max`` write dst[0]. ``reduce_max(cal_index=True)`` also writes
the index of the first maximum into dst[1], as an unsigned integer of dst's width stored in its
bits (uint16 for half, uint32 for float), which Ascend C's ReduceMax docs say to read with
reinterpret_cast; in the repeat form the index is the lane number (repeat x elements per repeat
+ element). ``block_reduce_*`` reduce each 32-byte block to one value (a partial last block in
counter mode too), ``whole_reduce_sum`` each repeat (256 bytes in counter mode); their results
are packed in counter mode, and ``dst_rep_stride`` apart in the repeat form, in Ascend C's unit
of one repeat's result. A block with no masked-in element is not written. Max propagates NaN.

Cost: ``reduce_sum``/``reduce_max`` (vcadd/vcmax) take several passes on the chip, each over
the previous pass's partials: body = slope x (repeats of every pass) + start-up x (passes - 1);
``whole_reduce_sum`` is one vcadd pass (the ``reduce_sum`` entry); block reductions use their
own entries (vcgadd, vcgmax). The work buffer Ascend C's ReduceSum/ReduceMax take is not
modelled (no bytes of it are read or written).
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import NpusimError

from .vector import BLOCK_BYTES, FLOATS, REPEAT_BYTES, VectorInstr, repeat_lanes


def halving_sum(a: np.ndarray) -> np.ndarray:
    """Sum along the last axis by the pairwise halving tree, rounding to a.dtype per level."""
    n = a.shape[-1]
    size = 1 << max(n - 1, 0).bit_length()
    if size != n:
        pad = np.zeros((*a.shape[:-1], size - n), a.dtype)
        a = np.concatenate([a, pad], axis=-1)
    while size > 1:
        size //= 2
        a = a[..., :size] + a[..., size:]
    return a[..., 0]


def identity(dt: np.dtype, op: str):
    """The neutral element of ``op`` ('sum' or 'max') in dtype ``dt``."""
    if op == "sum":
        return np.zeros((), dt)[()]
    if np.issubdtype(dt, np.integer):
        return np.iinfo(dt).min
    return np.array(-np.inf, dt)[()]


@dataclass(frozen=True, kw_only=True, slots=True)
class Reduction(VectorInstr):
    """Base of the reductions: src feeds lanes, dst receives per-group results."""

    op_dtypes: ClassVar[tuple[str, ...]] = FLOATS
    kind_of_op: ClassVar[str] = "sum"
    dst: object
    src: object

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True), (self.src, "src0", False))

    def lane_dtype(self) -> np.dtype:
        return self.src.dtype

    def check_operands(self) -> None:
        if self.dst.dtype != self.src.dtype:
            raise NpusimError(f"{self.name}: dst and src must share one dtype, got "
                              f"{name_of(self.dst.dtype)} and {name_of(self.src.dtype)}")

    def align_bytes(self, which: str, chip) -> int:
        return self.dst.dtype.itemsize if which == "dst" else chip.ub_align_bytes

    def span_bytes(self, tensor, which: str) -> int:
        if which == "dst":
            return self.result_count() * tensor.dtype.itemsize
        return VectorInstr.span_bytes(self, tensor, which)

    def result_count(self) -> int:
        """Elements of dst written (span, counting gaps of the repeat form)."""
        raise NotImplementedError

    def dense(self) -> np.ndarray:
        """src as lanes: count values, or repeat_times x per_repeat with identity when masked."""
        if self.repeat is None:
            return self.src.array(self.count)
        vals = np.full(self.lanes(), identity(self.src.dtype, self.kind_of_op), self.src.dtype)
        vals[repeat_lanes(self.repeat, self.per_repeat())] = self.load(self.src, "src0")
        return vals


def reduce_passes(first_repeats: int, per_repeat: int) -> tuple[int, int]:
    """(repeats over all passes, passes) of a reduction that re-reduces its partials."""
    total, passes, n = first_repeats, 1, first_repeats
    while n > 1:
        n = -(-n // per_repeat)
        total += n
        passes += 1
    return total, passes


@dataclass(frozen=True, kw_only=True, slots=True)
class WholeReduction(Reduction):
    """reduce_sum / reduce_max: all lanes to one value in dst[0]."""

    def body(self, chip) -> float:
        start, slope = self.cost(chip)
        total, passes = reduce_passes(self.repeats(), self.per_repeat())
        return slope * total + start * (passes - 1)


@dataclass(frozen=True, kw_only=True, slots=True)
class ReduceSum(WholeReduction):
    """ReduceSum(dst, src, count): dst[0] = sum by the halving tree."""

    name: ClassVar[str] = "reduce_sum"
    op: ClassVar[str] = "reduce_sum"

    def result_count(self) -> int:
        return 1

    def execute(self) -> None:
        with np.errstate(all="ignore"):
            self.dst.array(1)[0] = halving_sum(self.dense())


@dataclass(frozen=True, kw_only=True, slots=True)
class ReduceMax(WholeReduction):
    """ReduceMax(dst, src, count, cal_index): dst[0] = max; dst[1] = its index when asked."""

    name: ClassVar[str] = "reduce_max"
    op: ClassVar[str] = "reduce_max"
    kind_of_op: ClassVar[str] = "max"
    cal_index: bool = False

    def result_count(self) -> int:
        return 2 if self.cal_index else 1

    def check_operands(self) -> None:
        Reduction.check_operands(self)
        limit = 1 << (8 * self.src.dtype.itemsize)
        if self.cal_index and self.lanes() > limit:
            raise NpusimError(f"reduce_max: an index of {self.lanes()} lanes does not fit the "
                              f"{8 * self.src.dtype.itemsize}-bit index slot; allowed: up to "
                              f"{limit} lanes")

    def execute(self) -> None:
        if self.repeat is None:
            vals, lanes = self.src.array(self.count), None
        else:
            vals, lanes = self.load(self.src, "src0"), repeat_lanes(self.repeat,
                                                                   self.per_repeat())
        if not vals.size:
            return
        pos = int(np.argmax(vals))  # first maximum; the first NaN if any
        out = self.dst.array(self.result_count())
        out[0] = vals[pos]
        if self.cal_index:
            index = pos if lanes is None else int(lanes[pos])
            out.view(np.dtype(f"u{out.dtype.itemsize}"))[1] = index

    def extra_operands(self) -> dict:
        return {"cal_index": self.cal_index}


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupReduction(Reduction):
    """Each group of ``group_bytes`` of src lanes to one dst element."""

    group_bytes: ClassVar[int] = BLOCK_BYTES
    reducer: ClassVar = None

    def group(self) -> int:
        return self.group_bytes // self.src.dtype.itemsize

    def result_count(self) -> int:
        if self.repeat is None:
            return -(-self.count // self.group())
        reps = self.repeat.repeat_times
        per_rep = self.per_repeat() // self.group()
        return (reps - 1) * self.repeat.dst_rep_stride * per_rep + per_rep if reps else 0

    def execute(self) -> None:
        g = self.group()
        vals = self.dense()
        n = -(-vals.size // g) * g
        if n != vals.size:
            pad = np.full(n - vals.size, identity(vals.dtype, self.kind_of_op), vals.dtype)
            vals = np.concatenate([vals, pad])
        with np.errstate(all="ignore"):
            res = self.reducer(vals.reshape(-1, g))
        if self.repeat is None:
            self.dst.array(res.size)[...] = res
            return
        per_rep = self.per_repeat() // g
        hit = np.zeros(res.size, bool)
        hit[repeat_lanes(self.repeat, self.per_repeat()) // g] = True
        slots = (np.arange(res.size) // per_rep) * (self.repeat.dst_rep_stride * per_rep) \
            + np.arange(res.size) % per_rep
        self.dst.array(self.result_count())[slots[hit]] = res[hit]


def _block_max(a: np.ndarray) -> np.ndarray:
    return np.max(a, axis=-1)


@dataclass(frozen=True, kw_only=True, slots=True)
class BlockReduceSum(GroupReduction):
    """BlockReduceSum: each 32-byte block of src -> one sum (halving tree) in dst."""

    name: ClassVar[str] = "block_reduce_sum"
    op: ClassVar[str] = "block_reduce_sum"
    reducer: ClassVar = staticmethod(halving_sum)


@dataclass(frozen=True, kw_only=True, slots=True)
class BlockReduceMax(GroupReduction):
    """BlockReduceMax: each 32-byte block of src -> its maximum in dst."""

    name: ClassVar[str] = "block_reduce_max"
    op: ClassVar[str] = "block_reduce_max"
    kind_of_op: ClassVar[str] = "max"
    reducer: ClassVar = staticmethod(_block_max)


@dataclass(frozen=True, kw_only=True, slots=True)
class WholeReduceSum(GroupReduction):
    """WholeReduceSum: each repeat (256 bytes of src) -> one sum (halving tree) in dst."""

    name: ClassVar[str] = "whole_reduce_sum"
    op: ClassVar[str] = "reduce_sum"
    group_bytes: ClassVar[int] = REPEAT_BYTES
    reducer: ClassVar = staticmethod(halving_sum)
