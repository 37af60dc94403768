"""npusim: a cycle-approximate simulator of Huawei Ascend NPU AI cores on SimPy."""

from npusim.chip import Chip, chips, load_chip
from npusim.errors import (
                           ChipModelError,
                           DeadlockError,
                           HazardError,
                           MemoryAccessError,
                           NpusimError,
                           ParamError,
                           TilingError,
)

__all__ = ["Chip", "chips", "load_chip", "NpusimError", "ParamError", "TilingError",
           "ChipModelError", "DeadlockError", "HazardError", "MemoryAccessError"]
