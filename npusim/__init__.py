"""npusim: a cycle-approximate simulator of Huawei Ascend NPU AI cores on SimPy."""

from pathlib import Path as _Path

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

# Installed, `isa/`, `ops/` and `models/` live inside this package as npusim.isa, npusim.ops
# and npusim.models. Run from a source checkout (``python -m npusim.cli`` in the clone), they
# sit beside it: let the package path reach them there too.
_root = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "isa").is_dir() and (_root / "isa" / "__init__.py").is_file():
    __path__.append(str(_root))  # noqa: F821 - a package's __path__ is defined by the import system
