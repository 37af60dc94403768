"""Scalar-pipe instructions: reading or writing one on-chip value, and scalar arithmetic.

As on the chip, a scalar read of a value a vector or MTE instruction produced needs its flag
(``set_flag(V, S)`` then ``wait_flag(V, S)``) first; the race detector reports a read without it.
The scalar unit's data cache and its GM access (A2) are not modelled.
"""

from dataclasses import dataclass
from typing import ClassVar

from npusim.isa.base import Instr, Pipe, region


@dataclass(frozen=True, kw_only=True, slots=True)
class GetValue(Instr):
    """LocalTensor.GetValue(index): one element into a scalar register."""

    name: ClassVar[str] = "get_value"
    kind: ClassVar[str] = "scalar_read"
    pipe: ClassVar[str] = Pipe.S
    src: object
    index: int

    def __post_init__(self):
        self.src[self.index].check(self.src.dtype.itemsize, "get_value")

    def body(self, chip) -> float:
        return chip.op_cycles

    def execute(self):
        return self.src.array(self.index + 1)[self.index].item()

    def reads(self) -> tuple:
        return (region(self.src[self.index], self.src.dtype.itemsize),)


@dataclass(frozen=True, kw_only=True, slots=True)
class SetValue(Instr):
    """LocalTensor.SetValue(index, value): one scalar into a buffer."""

    name: ClassVar[str] = "set_value"
    kind: ClassVar[str] = "scalar_write"
    pipe: ClassVar[str] = Pipe.S
    dst: object
    index: int
    value: float

    def __post_init__(self):
        self.dst[self.index].check(self.dst.dtype.itemsize, "set_value")

    def body(self, chip) -> float:
        return chip.op_cycles

    def execute(self):
        self.dst.array(self.index + 1)[self.index] = self.value

    def writes(self) -> tuple:
        return (region(self.dst[self.index], self.dst.dtype.itemsize),)


@dataclass(frozen=True, kw_only=True, slots=True)
class ScalarOps(Instr):
    """``count`` scalar ALU operations (address arithmetic, loop control)."""

    name: ClassVar[str] = "scalar_ops"
    kind: ClassVar[str] = "scalar"
    pipe: ClassVar[str] = Pipe.S
    count: int

    def body(self, chip) -> float:
        return self.count * chip.op_cycles
