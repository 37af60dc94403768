"""npusim: a cycle-approximate simulator of Huawei Ascend NPU AI cores on SimPy."""

from pathlib import Path as _Path

from npusim.chip import Chip, chips, load_chip
from npusim.errors import (
    ChipModelError,
    DeadlockError,
    HazardError,
    MemoryAccessError,
    NpusimError,
    OutOfMemoryError,
    ParamError,
    TilingError,
)

_LAZY = ("ops", "aclnn", "golden", "isa", "models", "dsl", "cases")

__all__ = ["ops", "aclnn", "golden", "sweep", "predict", "Chip", "chips", "load_chip",
           "NpusimError", "ParamError", "TilingError", "ChipModelError", "DeadlockError",
           "HazardError", "MemoryAccessError", "OutOfMemoryError"]

# Installed, `isa/`, `ops/` and `models/` live inside this package as npusim.isa, npusim.ops
# and npusim.models. Run from a source checkout (``python -m npusim.cli`` in the clone), they
# sit beside it: let the package path reach them there too.
_root = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "isa").is_dir() and (_root / "isa" / "__init__.py").is_file():
    __path__.append(str(_root))  # noqa: F821 - a package's __path__ is defined by the import system


def __getattr__(name):
    """``npusim.ops``, ``npusim.aclnn``, ``npusim.golden`` ... without importing them first;
    loaded on first use (PEP 562) so ``import npusim`` stays quick."""
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"npusim.{name}")
    if name == "sweep":   # npusim.sweep(op_name, *, chip, shape, dtype, params, space, ...)
        from npusim.studies.sweep import sweep

        return sweep
    if name == "predict":   # npusim.predict(workload, chips=...): the prediction table
        from npusim.studies.predict import predict

        return predict
    raise AttributeError(f"module 'npusim' has no attribute {name!r}")
