"""npusim: a cycle-approximate simulator of Huawei Ascend NPU AI cores on SimPy.

The package's rooms, lowest first (imports point down only, as ``tests/test_layers.py`` holds):
``errors``, ``chip`` and ``dtypes`` here at the top, the shared data types; ``npusim.isa``, the
instruction set; ``engine/``, which runs a launch and times it, beside ``dsl/``, the Ascend
C-style kernel language; ``npusim.ops``, the operators' kernels and tilings (``micro/``, the
engine's own micro-kernels); and on top ``cases/`` (the operator registry), ``studies/`` (many
runs: sweep, predict, validate, correlate), ``aclnn/``, ``golden/`` and ``face/``, the command
line, demo, bench, reports and plots.
"""

import importlib as _importlib
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys
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
# and npusim.models. Run from a source checkout (``python -m npusim`` in the clone), they
# sit beside it: let the package path reach them there too.
_root = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "isa").is_dir() and (_root / "isa" / "__init__.py").is_file():
    __path__.append(str(_root))  # noqa: F821 - a package's __path__ is defined by the import system


def __getattr__(name):
    """``npusim.ops``, ``npusim.aclnn``, ``npusim.golden`` ... without importing them first;
    loaded on first use (PEP 562) so ``import npusim`` stays quick."""
    if name in _LAZY:
        return _importlib.import_module(f"npusim.{name}")
    if name == "sweep":   # npusim.sweep(op_name, *, chip, shape, dtype, params, space, ...)
        from npusim.studies.sweep.study import sweep

        return sweep
    if name == "predict":   # npusim.predict(workload, chips=...): the prediction table
        from npusim.studies.predict.study import predict

        return predict
    raise AttributeError(f"module 'npusim' has no attribute {name!r}")


# Import paths a user may have written before the engine and the face had rooms of their own.
MOVED = {"npusim.launch": "npusim.engine.launch", "npusim.memory": "npusim.engine.memory",
         "npusim.plot": "npusim.face.plot", "npusim.cli": "npusim.face.cli"}


class _MovedModules(_abc.MetaPathFinder, _abc.Loader):
    """``import npusim.launch`` gives the module ``npusim.engine.launch`` itself (one module
    object under both names, so its state is shared); ``python -m npusim.cli`` runs the
    command."""

    def find_spec(self, name, path=None, target=None):
        return _util.spec_from_loader(name, self) if name in MOVED else None

    specs = {}   # new name -> the module's own spec, which the import system replaces

    def create_module(self, spec):
        module = _importlib.import_module(MOVED[spec.name])
        self.specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self.specs[module.__name__]

    def get_code(self, name):
        new = MOVED[name]
        return _util.find_spec(new).loader.get_code(new)


_sys.meta_path.append(_MovedModules())
