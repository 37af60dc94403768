"""The fixed costs of a kernel in an operator's sequence, beyond its own instructions.

Three costs, each from the chip model's ``[launch]`` section (``models/*.toml``):

- the start-up of a kernel on its cores, by the kind CANN builds it as:
  ``kernel_start_cycles`` for an Ascend C kernel, ``tbe_kernel_start_cycles`` for a TBE (DSL)
  kernel (the legacy convolution kernels, SiluGrad), ``tik_kernel_start_cycles`` for a TIK
  kernel (TransData, MemSet); plus ``kernel_start_per_block_cycles`` per block started. Where
  each figure comes from: ``models/*.toml`` and ``docs/modelling/costs.md``. It is the time
  from the task's start to the first instruction on its cores;
  it is part of the kernel's task duration, as msprof's Task Duration counts it, and shows in
  the trace as a ``launch`` slice on each core's PIPE-S;
- the tiling-data read: each core reads its tiling struct from GM in the kernel's prologue
  (Ascend C's GetTilingData), one scalar ``gm_get_value`` per ``tiling_line_bytes`` line, a
  real simulated GM read charged by the engine like any other;
- the gap between two kernels on one stream (``kernel_gap_cycles``, msprof's Task Wait
  Time): idle time before every kernel but the first, shown as a ``stream gap`` slice.

The tiling struct's size is counted from the kernel's arguments: eight bytes for every scalar
argument and every scalar field of a dataclass argument (the tiling objects), as the host
packs them. Not modelled: the host's own time to run the tiling function and enqueue the
task (it overlaps the device's work when kernels are queued ahead), and any variation of the
start-up with the kernel's binary size.
"""

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.dsl.scalar_gm import gm_get_value
from npusim.isa.base import Instr, Pipe

WORD_BYTES = 8   # one tiling field as the host packs it (int64 / double)


@dataclass(frozen=True, kw_only=True, slots=True)
class KernelStart(Instr):
    """A trace slice, not an instruction: a kernel starting on a core (or the stream idle
    before it). The engine never runs it; ``OpRun`` places it in the merged trace."""

    name: ClassVar[str] = "launch"
    kind: ClassVar[str] = "launch"
    pipe: ClassVar[str] = Pipe.S
    kernel: str
    cycles: int

    def operands(self) -> dict:
        return {"kernel": self.kernel, "cycles": self.cycles}


@dataclass(frozen=True, kw_only=True, slots=True)
class StreamGap(KernelStart):
    """The stream idle between two kernels (a trace slice)."""

    name: ClassVar[str] = "stream gap"


IMPLS = ("ascendc", "tbe", "tik")   # how CANN builds a kernel: Ascend C, TBE (DSL) or TIK
START_KEYS = {"ascendc": "kernel_start_cycles", "tbe": "tbe_kernel_start_cycles",
              "tik": "tik_kernel_start_cycles"}


def start_cycles(chip, block_dim: int, impl: str = "ascendc") -> int:
    """The start-up of a kernel launched on ``block_dim`` blocks (``impl``: see IMPLS)."""
    fixed = getattr(chip, START_KEYS[impl])
    return fixed + chip.kernel_start_per_block_cycles * int(block_dim)


def tiling_words(args: dict) -> list:
    """The tiling struct's fields as 64-bit words: each scalar argument and each scalar field
    of a dataclass argument (floats stored by their bits)."""
    values = []
    for value in args.values():
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            values += [getattr(value, f.name) for f in dataclasses.fields(value)]
        else:
            values.append(value)
    return [_word(v) for v in values if _is_scalar(v)]


def _is_scalar(v) -> bool:
    return isinstance(v, bool | int | float | np.integer | np.floating | np.bool_)


def _word(v) -> int:
    """The field as an unsigned 64-bit word (floats by their bits, ints modulo 2**64)."""
    if isinstance(v, float | np.floating):
        return int(np.float64(v).view(np.uint64))
    return int(v) % (1 << 64)


def with_tiling_read(kernel_cls, tiling, words: int, line_bytes: int):
    """``kernel_cls`` whose every core first reads ``words`` tiling words from the GM tensor
    ``tiling``, one scalar GM read per ``line_bytes`` line."""
    step = max(1, line_bytes // WORD_BYTES)

    def init(self, **args):
        for index in range(0, words, step):
            gm_get_value(tiling, index)
        kernel_cls.init(self, **args)

    return type(kernel_cls.__name__, (kernel_cls,),
                {"init": init, "__qualname__": kernel_cls.__qualname__,
                 "__module__": kernel_cls.__module__, "__doc__": kernel_cls.__doc__})
