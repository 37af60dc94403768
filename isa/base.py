"""What every instruction is: a small frozen dataclass with a pipe, a cost and a semantics.

An instruction's duration on its pipe is ``head(chip) + body(chip)`` cycles. The head (start-up
latency) is charged only when the pipe was idle before the instruction started, as the PTO cost
model does; back-to-back instructions pay only their body. (An instruction whose start-up a
chip model says is paid every time carries it in its body instead: LoadData2D on Atlas A2.)
``execute()`` applies the semantics to the simulated memories; timed and functional runs call
the very same method.

``reads()`` and ``writes()`` list the byte ranges an instruction touches, as
``(store, lo, hi)`` with ``store`` a Buffer or the GlobalMemory; the tracer and the race detector
use them. ``kind`` tells the engine how to treat the instruction: ``exec`` (occupies its pipe
for its duration), or one of the synchronisation kinds of ``isa/sync.py``.
"""

from dataclasses import dataclass
from typing import ClassVar


class Pipe:
    """Pipe names as Ascend C spells them (PIPE_S, PIPE_V, ...)."""

    S = "S"
    V = "V"
    M = "M"
    MTE1 = "MTE1"
    MTE2 = "MTE2"
    MTE3 = "MTE3"
    FIX = "FIX"
    ALL = "ALL"


PIPES = (Pipe.S, Pipe.MTE2, Pipe.MTE1, Pipe.M, Pipe.V, Pipe.MTE3, Pipe.FIX)


@dataclass(frozen=True, kw_only=True, slots=True)
class Instr:
    """Base of every instruction. Subclasses set ``pipe`` (class attribute or property)."""

    name: ClassVar[str] = "instr"
    kind: ClassVar[str] = "exec"
    touches_gm: ClassVar[bool] = False
    serialises_at_l2: ClassVar[bool] = False   # GM adds that wait for each other's range
    checks_data: ClassVar[bool] = False   # whether execute can raise on the data it reads

    def validate(self, chip) -> None:
        """Raise NpusimError when the chip cannot run this instruction (checked at issue)."""

    def head(self, chip) -> float:
        """Start-up cycles, paid only when the pipe was idle."""
        return 0.0

    def body(self, chip) -> float:
        """Cycles of work once started."""
        return 0.0

    def execute(self) -> None:
        """Apply the semantics to the memories."""

    def reads(self) -> tuple:
        return ()

    def writes(self) -> tuple:
        return ()

    def moved_bytes(self) -> int:
        """Bytes this instruction moves (for the stats); 0 for compute."""
        return 0

    def path(self) -> str:
        """The data path for the stats, e.g. 'GM->UB'; '' for compute."""
        return ""

    def operands(self) -> dict:
        """A small JSON-able description for traces."""
        return {}


def region(tensor, nbytes: int) -> tuple:
    """The (store, lo, hi) byte range of ``nbytes`` from a tensor window."""
    return (tensor.store, tensor.addr, tensor.addr + nbytes)
