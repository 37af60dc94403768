"""Vector instructions that make or use bit masks and indices: Compare, Select, Gather, Sort.

Bit masks (Compare's dst, Select's sel_mask) hold one bit per lane, little-endian within each
byte (``np.packbits(..., bitorder="little")``): lane i is bit i % 8 of byte i // 8. In the
repeat form the lanes of repeat r are bits r x elements-per-repeat onward, packed (the dst_*
strides do not apply to a mask); Compare writes 0 for masked-out lanes, and in counter mode
pads the last byte with zeros.

Compare: modes lt, gt, le, ge, eq, ne with IEEE semantics (NaN compares unequal to
everything). Select: dst = src0 where the lane's bit is set, else src1 (a tensor, or a scalar
converted to dst's dtype, as VSEL_TENSOR_TENSOR_MODE / VSEL_TENSOR_SCALAR_MODE).
Gather(dst, src, offsets, base, count): dst[i] = the element at byte ``base + offsets[i]`` of
src (Ascend C Gather's srcOffset is in bytes); offsets are uint32, element-aligned, inside src's
allocation, else MemoryAccessError. Only counter mode is modelled for Gather and Sort.

Sort(dst_values, dst_indices, src, count, descending): a stable full sort of ``count`` values
with their uint32 source positions (ties keep source order; NaN sorts last). It stands for the
chip's Sort32 + MrgSort sequence as one instruction: cost = sort32 start-up (head) + sort32
slope x ceil(count / 32) + for each of ceil(log4(count / 32)) merge passes, merge_sort
start-up + slope x repeats of the (value, index) pairs (8 bytes each). The pair layout in UB
and the tmp buffer of Ascend C's Sort are not modelled: values and indices go to two tensors.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import MemoryAccessError, NpusimError

from .vector import (
    FLOATS,
    REPEAT_BYTES,
    VectorInstr,
    cost_class,
    repeat_lanes,
    same_dtype,
    scalar_as,
)

COMPARE_MODES = {"lt": np.less, "gt": np.greater, "le": np.less_equal,
                 "ge": np.greater_equal, "eq": np.equal, "ne": np.not_equal}
SORT_GROUP = 32           # elements one Sort32 orders (VEC-ARCH vbitsort)
MERGE_WAYS = 4            # lists one MrgSort merges (vmrgsort4)
SORT_PAIR_BYTES = 8       # a (value, uint32 index) proposal in the sort layout


def mask_bytes(lanes: int) -> int:
    return -(-lanes // 8)


@dataclass(frozen=True, kw_only=True, slots=True)
class Compare(VectorInstr):
    """Compare(dst, src0, src1, mode, count): bit i of dst = src0[i] <mode> src1[i]."""

    name: ClassVar[str] = "compare"
    op: ClassVar[str] = "compare"
    op_dtypes: ClassVar[tuple[str, ...]] = (*FLOATS, "int32")
    dst: object
    src0: object
    src1: object
    mode: str

    def operand_list(self) -> tuple:
        return ((self.dst, "mask", True), (self.src0, "src0", False), (self.src1, "src1", False))

    def lane_dtype(self) -> np.dtype:
        return self.src0.dtype

    def span_bytes(self, tensor, which: str) -> int:
        if which == "mask":
            return mask_bytes(self.lanes())
        return VectorInstr.span_bytes(self, tensor, which)

    def checked_dtypes(self) -> tuple:
        return (self.src0.dtype,)

    def check_operands(self) -> None:
        same_dtype(self.name, self.src0, self.src1)
        if self.mode not in COMPARE_MODES:
            raise NpusimError(f"compare: unknown mode {self.mode!r}; allowed: "
                              f"{', '.join(COMPARE_MODES)}")
        if name_of(self.dst.dtype) not in ("uint8", "int8"):
            raise NpusimError(f"compare: dst must be uint8 (one bit per element), got "
                              f"{name_of(self.dst.dtype)}")
        if self.src0.dtype == np.int32 and self.mode not in ("eq", "ne"):
            raise NpusimError(f"compare: int32 supports modes eq, ne only (assumed), got "
                              f"{self.mode!r}")

    def execute(self) -> None:
        res = COMPARE_MODES[self.mode](self.load(self.src0, "src0"), self.load(self.src1, "src1"))
        if self.repeat is not None:
            bits = np.zeros(self.lanes(), bool)
            bits[repeat_lanes(self.repeat, self.per_repeat())] = res
            res = bits
        packed = np.packbits(res, bitorder="little")
        self.dst.bytes_view(packed.size)[...] = packed

    def extra_operands(self) -> dict:
        return {"mode": self.mode}


@dataclass(frozen=True, kw_only=True, slots=True)
class Select(VectorInstr):
    """Select(dst, sel_mask, src0, src1, count): dst = src0 where the bit is set, else src1."""

    name: ClassVar[str] = "select"
    op: ClassVar[str] = "select"
    op_dtypes: ClassVar[tuple[str, ...]] = FLOATS
    dst: object
    sel_mask: object
    src0: object
    src1: object

    def src1_is_tensor(self) -> bool:
        return hasattr(self.src1, "store")

    def operand_list(self) -> tuple:
        ops = ((self.dst, "dst", True), (self.sel_mask, "mask", False), (self.src0, "src0", False))
        return (*ops, (self.src1, "src1", False)) if self.src1_is_tensor() else ops

    def span_bytes(self, tensor, which: str) -> int:
        if which == "mask":
            return mask_bytes(self.lanes())
        return VectorInstr.span_bytes(self, tensor, which)

    def checked_dtypes(self) -> tuple:
        return (self.dst.dtype,)

    def check_operands(self) -> None:
        if self.src1_is_tensor():
            same_dtype(self.name, self.dst, self.src0, self.src1)
        else:
            same_dtype(self.name, self.dst, self.src0)
            scalar_as(self.src1, self.dst.dtype, self.name)
        if name_of(self.sel_mask.dtype) not in ("uint8", "uint16", "uint32"):
            raise NpusimError(f"select: sel_mask must be uint8, uint16 or uint32, got "
                              f"{name_of(self.sel_mask.dtype)}")

    def execute(self) -> None:
        raw = self.sel_mask.bytes_view(mask_bytes(self.lanes()))
        bits = np.unpackbits(raw, bitorder="little").astype(bool)
        if self.repeat is None:
            pick = bits[:self.count]
        else:
            pick = bits[repeat_lanes(self.repeat, self.per_repeat())]
        other = (self.load(self.src1, "src1") if self.src1_is_tensor()
                 else scalar_as(self.src1, self.dst.dtype, self.name))
        self.store(self.dst, "dst", np.where(pick, self.load(self.src0, "src0"), other))

    def extra_operands(self) -> dict:
        return {"mode": "tensor" if self.src1_is_tensor() else "scalar"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Gather(VectorInstr):
    """Gather(dst, src, offsets, base, count): dst[i] = src's element at byte base + offsets[i].

    The bytes read depend on the data, so ``reads()`` names src's whole allocation.
    """

    name: ClassVar[str] = "gather"
    op: ClassVar[str] = "gather"
    checks_data: ClassVar[bool] = True    # execute raises on an offset outside src
    dst: object
    src: object
    offsets: object
    base: int = 0

    def operand_list(self) -> tuple:
        return ((self.dst, "dst", True), (self.src, "src", False),
                (self.offsets, "offsets", False))

    def span_bytes(self, tensor, which: str) -> int:
        if which == "src":
            return 0  # checked per element at execute
        return self.count * tensor.dtype.itemsize

    def checked_dtypes(self) -> tuple:
        return (self.dst.dtype,)

    def allowed_dtypes(self, chip) -> tuple:
        names = dict.fromkeys([*chip.compute_dtypes, *chip.cast_dtypes])
        return tuple(n for n in names if n in ("float16", "bfloat16", "float32", "int16",
                                               "int32"))

    def check_operands(self) -> None:
        if self.repeat is not None:
            raise NpusimError("gather: only counter mode (count=) is modelled")
        same_dtype(self.name, self.dst, self.src)
        if self.offsets.dtype != np.uint32:
            raise NpusimError(f"gather: offsets must be uint32 byte offsets, got "
                              f"{name_of(self.offsets.dtype)}")

    def execute(self) -> None:
        size = self.src.dtype.itemsize
        offs = self.offsets.array(self.count).astype(np.int64) + self.base
        room = self.src.limit - self.src.addr
        bad = (offs < 0) | (offs + size > room) | (offs % size != 0)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MemoryAccessError(
                f"gather: element {i} reads byte offset {int(offs[i])} (base {self.base} + "
                f"offset {int(offs[i]) - self.base}) of {self.src.describe()}, which holds "
                f"{room} bytes; offsets must be multiples of {size} inside it")
        flat = self.src.array(room // size)
        self.dst.array(self.count)[...] = flat[offs // size]

    def reads(self) -> tuple:
        return ((self.src.store, self.src.addr, self.src.limit),
                (self.offsets.store, self.offsets.addr, self.offsets.addr + 4 * self.count))

    def extra_operands(self) -> dict:
        return {"base": self.base}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sort(VectorInstr):
    """Sort(dst_values, dst_indices, src, count): stable descending sort with indices (Sort32
    groups, then MrgSort passes). Ascend C's Sort32 and MrgSort sort descending only, so
    ``descending=False`` is refused: a kernel that wants ascending order negates the keys
    (Muls by -1) before and the sorted values after, and pays for both."""

    name: ClassVar[str] = "sort"
    op: ClassVar[str] = "sort32"
    op_dtypes: ClassVar[tuple[str, ...]] = FLOATS
    dst_values: object
    dst_indices: object
    src: object
    descending: bool = True

    def operand_list(self) -> tuple:
        return ((self.dst_values, "dst", True), (self.dst_indices, "dst", True),
                (self.src, "src0", False))

    def lane_dtype(self) -> np.dtype:
        return self.src.dtype

    def checked_dtypes(self) -> tuple:
        return (self.src.dtype,)

    def check_operands(self) -> None:
        if self.repeat is not None:
            raise NpusimError("sort: only counter mode (count=) is modelled")
        if self.descending is not True:
            raise NpusimError(f"sort: descending = {self.descending!r}: Sort32 and MrgSort sort "
                              "descending only; for ascending, negate the keys (Muls by -1) "
                              "before and the sorted values after")
        same_dtype(self.name, self.dst_values, self.src)
        if self.dst_indices.dtype != np.uint32:
            raise NpusimError(f"sort: dst_indices must be uint32, got "
                              f"{name_of(self.dst_indices.dtype)}")

    def merge_passes(self) -> int:
        """ceil(log4(ceil(count / 32))): MrgSort passes until one sorted list is left."""
        lists, passes = -(-self.count // SORT_GROUP), 0
        while lists > 1:
            lists, passes = -(-lists // MERGE_WAYS), passes + 1
        return passes

    def body(self, chip) -> float:
        slope = self.cost(chip)[1]
        m_start, m_slope = self.merge_cost(chip)
        pair_repeats = -(-self.count * SORT_PAIR_BYTES // REPEAT_BYTES)
        return (slope * -(-self.count // SORT_GROUP)
                + self.merge_passes() * (m_start + m_slope * pair_repeats))

    def merge_cost(self, chip) -> tuple[float, float]:
        return chip.vector_cost("merge_sort", cost_class(self.src.dtype))

    def validate(self, chip) -> None:
        VectorInstr.validate(self, chip)
        self.merge_cost(chip)

    def execute(self) -> None:
        x = self.src.array(self.count)
        order = np.argsort(-x, kind="stable")
        values = x[order]
        self.dst_indices.array(self.count)[...] = order.astype(np.uint32)
        self.dst_values.array(self.count)[...] = values

    def extra_operands(self) -> dict:
        return {"descending": self.descending}
