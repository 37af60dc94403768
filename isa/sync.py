"""Synchronisation instructions: flags between pipes, barriers, cross-core flags, SyncAll.

The engine gives these their meaning (they block pipes); here they are plain records.
``SetFlag`` sits in the source pipe's queue, ``WaitFlag`` in the destination pipe's queue and
blocks it until a matching set has executed. Flags count: each set allows one wait.
``PipeBarrier(pipe=V)`` drains a pipe; ``PipeBarrier(pipe=ALL)`` is issued on the scalar and
blocks it until every pipe of the core is idle. Cross-core flags (Atlas A2) go from an AIC to its
AIVs or back (CrossCoreSetFlag mode 2); ``SyncAll`` is a barrier of every core of the launch.

A chip without inter-core synchronisation (``has_inter_core_sync = false``: the Atlas inference
series, "该硬件架构不支持核间同步") refuses the cross-core flags and SyncAll at issue, naming the
chip and the instruction.

Not modelled: the limit of 15 pending cross-core sets, event-id reservation by the toolchain.
"""

from dataclasses import dataclass, field
from typing import ClassVar

from npusim.errors import NpusimError
from npusim.isa.base import Instr, Pipe


def check_inter_core_sync(chip, what: str) -> None:
    """NpusimError unless ``chip`` can synchronise its cores (``has_inter_core_sync``)."""
    if not chip.has_inter_core_sync:
        raise NpusimError(f"{what}: chip {chip.name!r} has no inter-core synchronisation "
                          "(has_inter_core_sync = false): no SyncAll and no cross-core flags; "
                          "split the work into separate launches instead")


@dataclass(frozen=True, kw_only=True, slots=True)
class SetFlag(Instr):
    name: ClassVar[str] = "set_flag"
    kind: ClassVar[str] = "set"
    src: str
    dst: str
    event_id: int
    pipe: str = field(init=False, repr=False, compare=False)   # src, set once
    key: tuple = field(init=False, repr=False, compare=False)  # (src, dst, event_id)

    def __post_init__(self):
        object.__setattr__(self, "pipe", self.src)
        object.__setattr__(self, "key", (self.src, self.dst, self.event_id))

    def body(self, chip) -> float:
        return chip.flag_cycles

    def operands(self) -> dict:
        return {"event": f"{self.src}_{self.dst}", "id": self.event_id}


@dataclass(frozen=True, kw_only=True, slots=True)
class WaitFlag(Instr):
    name: ClassVar[str] = "wait_flag"
    kind: ClassVar[str] = "wait"
    src: str
    dst: str
    event_id: int
    pipe: str = field(init=False, repr=False, compare=False)   # dst, set once
    key: tuple = field(init=False, repr=False, compare=False)  # (src, dst, event_id)

    def __post_init__(self):
        object.__setattr__(self, "pipe", self.dst)
        object.__setattr__(self, "key", (self.src, self.dst, self.event_id))

    def body(self, chip) -> float:
        return chip.flag_cycles

    def operands(self) -> dict:
        return {"event": f"{self.src}_{self.dst}", "id": self.event_id}


@dataclass(frozen=True, kw_only=True, slots=True)
class PipeBarrier(Instr):
    """PipeBarrier<pipe>: drain one pipe (in-order, so only the drain cost), or ALL on S."""

    name: ClassVar[str] = "pipe_barrier"
    kind: ClassVar[str] = "barrier"
    target: str

    @property
    def pipe(self) -> str:
        return Pipe.S if self.target == Pipe.ALL else self.target

    def body(self, chip) -> float:
        return chip.barrier_drain_cycles if self.target == Pipe.V else chip.flag_cycles

    def operands(self) -> dict:
        return {"pipe": self.target}


@dataclass(frozen=True, kw_only=True, slots=True)
class CrossCoreSetFlag(Instr):
    """CrossCoreSetFlag<mode, pipe>(flag_id): AIC -> its AIVs, or AIV -> its AIC (mode 2)."""

    name: ClassVar[str] = "cross_core_set_flag"
    kind: ClassVar[str] = "xset"
    pipe: str
    flag_id: int
    mode: int = 2

    def validate(self, chip) -> None:
        check_inter_core_sync(chip, self.name)

    def body(self, chip) -> float:
        return chip.cross_core_flag_cycles

    def operands(self) -> dict:
        return {"flag": self.flag_id, "mode": self.mode}


@dataclass(frozen=True, kw_only=True, slots=True)
class CrossCoreWaitFlag(Instr):
    name: ClassVar[str] = "cross_core_wait_flag"
    kind: ClassVar[str] = "xwait"
    pipe: str
    flag_id: int

    def validate(self, chip) -> None:
        check_inter_core_sync(chip, self.name)

    def body(self, chip) -> float:
        return chip.flag_cycles

    def operands(self) -> dict:
        return {"flag": self.flag_id}


@dataclass(frozen=True, kw_only=True, slots=True)
class SyncAll(Instr):
    """SyncAll(): every pipe of this core drains, then every core of the launch meets."""

    name: ClassVar[str] = "sync_all"
    kind: ClassVar[str] = "syncall"
    pipe: ClassVar[str] = Pipe.S

    def validate(self, chip) -> None:
        check_inter_core_sync(chip, self.name)

    def body(self, chip) -> float:
        return chip.sync_all_cycles


@dataclass(frozen=True, kw_only=True, slots=True)
class BufferMark(Instr):
    """Not an instruction: a queue buffer becomes live (``delta`` > 0) or is freed (< 0).

    The DSL issues one on the producer pipe at ``alloc_tensor`` and one at ``free_tensor`` on
    the pipe that holds the buffer then (the consumer after a ``deque``, else the producer:
    ``npusim/dsl/core.py``'s ``_Slot``), so the memory trace follows simulated time and a free
    is never traced before its alloc. It costs nothing, takes no
    queue entry and is invisible to the functional run and to the instruction counts.
    """

    name: ClassVar[str] = "buffer_mark"
    kind: ClassVar[str] = "mark"
    pipe: str
    buffer: object
    delta: int
    label: str = ""
