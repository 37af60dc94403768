"""AtomicAddCopy: a UB->GM DataCopyPad with SetAtomicAdd in force, on its own cost.

Semantics as ``DataCopy(atomic=True)``: each destination element becomes dst + src in the
destination dtype, rounded once (fp32 adds as IEEE fp32). The add happens when the instruction
executes, so several cores adding into one GM row land in simulated-time order.

Cost: on MTE3, the GM latency plus the charged bytes (whole bursts, as every GM move) over
``ub_to_gm_atomic_bytes_per_cycle`` of the chip model, an assumed figure (an atomic add is a
read-modify-write at L2; no published rate). The shared HBM/L2 servers see the written bytes
only: the L2 read half of the read-modify-write is not charged against shared bandwidth.
Atomic adds into the same GM range serialise (``npusim/engine/atomic_lines.py``): a second core
adding into a row another core is adding into waits for it.
"""

from dataclasses import dataclass
from typing import ClassVar

from npusim.errors import NpusimError
from npusim.isa.move import DataCopy

ATOMIC_RATE_KEY = "ub_to_gm_atomic_bytes_per_cycle"


@dataclass(frozen=True, kw_only=True, slots=True)
class AtomicAddCopy(DataCopy):
    """UB -> GM copy that adds into GM (SetAtomicAdd<T>(); DataCopyPad(); SetAtomicNone())."""

    name: ClassVar[str] = "data_copy_atomic_add"
    serialises_at_l2: ClassVar[bool] = True   # same-range adds wait for each other

    def __post_init__(self):
        DataCopy.__post_init__(self)
        if self.src.kind != "UB" or self.dst.kind != "GM":
            raise NpusimError(f"{self.name}: adds from UB into GM, got "
                              f"{self.src.kind}->{self.dst.kind}")
        if self.src.dtype != self.dst.dtype:
            raise NpusimError(f"{self.name}: UB {self.src.dtype} into GM {self.dst.dtype}: "
                              "the atomic add needs one dtype")
        object.__setattr__(self, "atomic", True)
        object.__setattr__(self, "rate_key", ATOMIC_RATE_KEY)
