"""Not instructions: the markers of a fast run's steady-state loops (``npusim.dsl.steady``).

A fast run (timing only) records a kernel's tile loop until the last iterations repeat with a
period of ``p`` iterations, then leaves whole periods out of the stream. Two markers tell the
timed run what it left out:

- ``SteadyTick`` at the start of every recorded iteration of such a loop: it rides in every
  pipe's queue without taking an entry (as a buffer mark does), and the scalar and each pipe
  note when they reach it and, for a pipe, its busy cycles so far.
- ``SteadySkip``, one per pipe of the core where iterations were left out: the pipe reaches it,
  measures its last ``period`` iterations (since the tick that many ticks back: their time,
  busy cycles, GM bytes and moves, and the cycles the moves waited on the shared servers) and
  stays on it for the ``period * repeats`` iterations left out, GM move by GM move: between two
  moves it spends its measured time per iteration less its server waits (``mode`` "pace":
  its waits on the other pipes' flags kept) or its own busy cycles less those waits ("stream":
  no waits on other pipes), and each left-out transfer reserves L2 and HBM now and waits for
  them, so the skip meets the other cores' traffic as it is then. A pipe without GM moves
  spends its measured time ("pace") or its busy cycles ("stream") per iteration. A pipe
  whose measured iterations overlap another pipe's skip on its core (it may have waited on
  that pipe) keeps instead the pace it measured at an earlier skip of the same iterations
  (``template``), where it has one. A pipe's skip takes a queue entry and is a record of the
  trace, so the critical path runs through it (its cycles are shared out as the rest of the
  kernel's path is: ``npusim/engine/cpath.py``). The scalar does not wait out its own skip:
  it runs ahead of the pipes, whose queues hold it back.

The skip's cycles are those of its run (``cycles``, set when the run reaches it); ``skipped``
on the scalar's skip counts the instructions left out, by name, for the run's statistics.
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from npusim.isa.base import Instr, Pipe


@dataclass(frozen=True, kw_only=True, slots=True)
class SteadyTick(Instr):
    """The start of a recorded iteration of a steady-state loop (see the module docstring)."""

    name: ClassVar[str] = "steady_tick"
    kind: ClassVar[str] = "mark"
    pipe: str = Pipe.S


@dataclass(frozen=True, kw_only=True, slots=True, eq=False)
class SteadySkip(Instr):
    """``repeats`` periods of ``period`` iterations left out, on ``pipe`` (see the module
    docstring)."""

    name: ClassVar[str] = "steady_skip"
    kind: ClassVar[str] = "skip"
    pipe: str
    period: int
    repeats: int
    template: int = 0      # a hash of the measured period's signatures (npusim/dsl/steady.py)
    mode: str = "pace"     # "pace" or "stream" (npusim.dsl.steady)
    skipped: Counter = field(default_factory=Counter)
    cycles: list = field(default_factory=lambda: [0.0])

    def body(self, chip) -> float:
        return self.cycles[0]

    def operands(self) -> dict:
        return {"iterations": self.period * self.repeats, "period": self.period}
