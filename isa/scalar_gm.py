"""Scalar-unit access to an input in GM, runs of GetValue/SetValue, and a scalar
read-modify-write of one UB element.

``GmGetValue``: GlobalTensor.GetValue(index), the scalar reading one element of a GM tensor
(on Atlas A2 through its data cache). npusim binds scalar values when the kernel is recorded,
so the value is read then, from the tensor's contents at launch: this is only correct for a
tensor no instruction of the launch writes (an operator input), and the DSL's
``gm_get_value`` is meant only for those. Cost: ``gm_latency_cycles`` of the scalar per read
(every read a data-cache miss, assumed; the cache is not modelled).

``ScalarSubValue``: ``dst[index] = dst[index] - src[src_index]`` done by the scalar unit, as a
kernel's GetValue, scalar subtract and SetValue of one element; the subtrahend stands for a
scalar register the kernel loaded from ``src`` earlier. It executes at run time on the
simulated bytes (it is not bound at record time), in the dtype of ``dst`` (IEEE, rounded once).
Cost: three scalar operations (``op_cycles`` each). As for any scalar access of UB, the kernel
orders it against the vector unit with flags; the race detector checks it (the ``src`` element
too, unless ``src_loaded``: the kernel loaded it into scalar registers with ``ScalarGetValues``,
which the race detector checked then).

``ScalarSetValues`` / ``ScalarGetValues``: a loop of ``count`` SetValue (values bound at record
time) or GetValue (into scalar registers) over consecutive elements, recorded as one
instruction so the race detector keeps one interval instead of one per element; cost
``op_cycles`` per element, as the single instructions.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.errors import NpusimError

from .base import Instr, Pipe, region

SCALAR_RMW_OPS = 3   # GetValue, subtract, SetValue


@dataclass(frozen=True, kw_only=True, slots=True)
class GmGetValue(Instr):
    """One scalar read of an input GM tensor; the value was taken when the kernel was recorded."""

    name: ClassVar[str] = "gm_get_value"
    kind: ClassVar[str] = "scalar"
    pipe: ClassVar[str] = Pipe.S
    src: object
    index: int

    def __post_init__(self):
        if self.src.kind != "GM":
            raise NpusimError(f"gm_get_value reads GM; {self.src.where()} is "
                              f"{self.src.kind}: use get_value")
        self.src[self.index].check(self.src.dtype.itemsize, "gm_get_value")

    def body(self, chip) -> float:
        return chip.gm_latency_cycles

    def value(self):
        """The element, as a Python number (GM copies the tensor's initial contents in first,
        if it has not yet)."""
        self.src.store.load_tensor(self.src)
        return self.src.array(self.index + 1)[self.index].item()

    def operands(self) -> dict:
        return {"tensor": self.src.label, "index": self.index}


@dataclass(frozen=True, kw_only=True, slots=True)
class ScalarSubValue(Instr):
    """dst[index] -= src[src_index] on the scalar unit (read, subtract, write one element)."""

    name: ClassVar[str] = "scalar_sub_value"
    kind: ClassVar[str] = "scalar_write"
    pipe: ClassVar[str] = Pipe.S
    dst: object
    index: int
    src: object
    src_index: int
    src_loaded: bool = False

    def __post_init__(self):
        self.dst[self.index].check(self.dst.dtype.itemsize, "scalar_sub_value of dst")
        self.src[self.src_index].check(self.src.dtype.itemsize, "scalar_sub_value of src")
        if self.dst.dtype != self.src.dtype or self.dst.dtype.kind != "f":
            raise NpusimError(f"scalar_sub_value: dst and src must share one float dtype, got "
                              f"{self.dst.dtype} and {self.src.dtype}")

    def body(self, chip) -> float:
        return SCALAR_RMW_OPS * chip.op_cycles

    def execute(self):
        cell = self.dst.array(self.index + 1)
        sub = self.src.array(self.src_index + 1)[self.src_index]
        with np.errstate(all="ignore"):
            cell[self.index] = cell[self.index] - sub

    def reads(self) -> tuple:
        own = (region(self.dst[self.index], self.dst.dtype.itemsize),)
        if self.src_loaded:
            return own
        return (*own, region(self.src[self.src_index], self.src.dtype.itemsize))

    def writes(self) -> tuple:
        return (region(self.dst[self.index], self.dst.dtype.itemsize),)

    def operands(self) -> dict:
        return {"index": self.index, "src_index": self.src_index}


@dataclass(frozen=True, kw_only=True, slots=True)
class ScalarSetValues(Instr):
    """SetValue(i, values[i]) for i < len(values): consecutive elements from dst."""

    name: ClassVar[str] = "scalar_set_values"
    kind: ClassVar[str] = "scalar_write"
    pipe: ClassVar[str] = Pipe.S
    dst: object
    values: tuple

    def __post_init__(self):
        self.dst.check(len(self.values) * self.dst.dtype.itemsize, "scalar_set_values")

    def body(self, chip) -> float:
        return len(self.values) * chip.op_cycles

    def execute(self):
        with np.errstate(all="ignore"):
            self.dst.array(len(self.values))[...] = np.asarray(self.values, np.float64)

    def writes(self) -> tuple:
        return (region(self.dst, len(self.values) * self.dst.dtype.itemsize),)

    def operands(self) -> dict:
        return {"count": len(self.values)}


@dataclass(frozen=True, kw_only=True, slots=True)
class ScalarGetValues(Instr):
    """GetValue(i) for i < count into scalar registers: the reads the race detector checks for
    later ``ScalarSubValue(src_loaded=True)`` uses of them."""

    name: ClassVar[str] = "scalar_get_values"
    kind: ClassVar[str] = "scalar_read"
    pipe: ClassVar[str] = Pipe.S
    src: object
    count: int

    def __post_init__(self):
        self.src.check(self.count * self.src.dtype.itemsize, "scalar_get_values")

    def body(self, chip) -> float:
        return self.count * chip.op_cycles

    def reads(self) -> tuple:
        return (region(self.src, self.count * self.src.dtype.itemsize),)

    def operands(self) -> dict:
        return {"count": self.count}
