"""What every operator's case is made of: ``OpCase`` and ``Param``, and the parsers and
input makers the cases share.

A case says how to make seeded random inputs of the operator's natural shape from a main shape
(``--shape``), a dtype and the operator's own parameters (``--param``), how to call
``npusim.ops.<name>``, which golden in ``npusim.golden`` checks it, and the work it does (bytes
through HBM and floating-point operations) for the roofline.
"""

import importlib
from collections.abc import Callable
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from npusim.dtypes import DTYPES
from npusim.errors import NpusimError

MAX_ELEMENTS = 1 << 28   # a bigger input is refused before numpy tries to allocate it
DTYPE_ALIASES = {"fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32",
                 "bf16": "bfloat16"}


@dataclass(frozen=True, kw_only=True)
class Param:
    """One operator parameter, given on the command line as ``--param name=value``."""

    name: str
    parse: Callable[[str], object]
    default: str
    help: str


@dataclass(frozen=True, kw_only=True)
class OpCase:
    """How the command runs one operator."""

    name: str                 # the npusim.ops function, and the command's name for the op
    aclnn: str                # the aclnn name
    summary: str              # one line: what the operator computes
    shape_help: str           # what --shape sets
    default_shape: tuple      # npusim run's default
    demo_shape: tuple         # npusim demo's size
    quick_shape: tuple        # npusim demo --quick's size (a smoke test)
    dtypes: tuple             # dtypes the operator takes on some product (the first is default)
    unit: str                 # "vector" (roofline = bytes / HBM) or "cube" (and flops / peak)
    make: Callable            # (shape, dtype, params, rng) -> (args tuple, kwargs dict)
    flops: Callable           # (args, kwargs) -> floating-point operations of the op
    params: tuple = ()
    golden_options: Callable | None = None   # (result, args, kwargs) -> what the run chose
    tiling_help: str = ""     # the tiling fields a user may override, for --help
    notes: str = ""
    examples: tuple = ()      # more argument lines for --help's examples
    sweep_example: str = "--tiling block_dim=8:48:8"   # npusim sweep --help's example space
    # (shape) -> elements of the largest tensor it means; None: the shape is one tensor's (a
    # GEMM's MxNxK is not: its largest tensor is the largest of MxK, KxN and MxN)
    largest_tensor: Callable | None = None
    atomic_outputs: tuple = ()   # outputs summed by GM atomic adds in simulated-time order:
    #                              checked within a summation-order bound, not bit for bit
    five_hd: object = None    # its graph form on NC1HWC0 activations (cases/five_hd.FiveHD)
    # True when a timing-only run's cycles cannot depend on the inputs' values (every input
    # is a random_array and nothing on the host reads them): such a run makes them as zeros
    values_free_timing: bool = False

    def available(self) -> bool:
        """True when ``npusim.ops`` has the operator."""
        return self.function() is not None

    def function(self):
        ops = importlib.import_module("npusim.ops")
        return getattr(ops, self.name, None)

    def golden(self):
        """The numpy reference ``golden(*args, **kwargs)``, or None when there is none yet."""
        golden = importlib.import_module("npusim.golden")
        return getattr(golden, self.name, None)

    def parse_params(self, pairs: dict) -> dict:
        """Typed parameter values: the defaults overridden by ``pairs`` (name -> text)."""
        known = {p.name: p for p in self.params}
        for key in pairs:
            if key not in known:
                allowed = ", ".join(known) or "none"
                raise NpusimError(f"{self.name} has no parameter {key!r}; parameters: {allowed}")
        values = {}
        for p in self.params:
            text = pairs.get(p.name, p.default)
            try:
                values[p.name] = p.parse(text)
            except (ValueError, TypeError) as exc:
                raise NpusimError(f"{self.name}: parameter {p.name}={text!r}: {exc}") from None
        return values


def gemm_largest(shape) -> int:
    """The largest tensor of a GEMM given as MxNxK: of A (MxK), B (KxN) and C (MxN)."""
    if len(shape) != 3:
        return int(np.prod(shape, dtype=np.float64))
    m, n, k = shape
    return max(m * k, k * n, m * n)


def parse_shape(text: str, case=None) -> tuple:
    """``"4x1024x1024"`` -> (4, 1024, 1024); a clear error for anything else, and for a shape
    whose largest tensor (the whole shape, or as ``case.largest_tensor`` says) is beyond what
    the host holds."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        raise NpusimError(f"shape {text!r} does not parse: write the dimensions separated by "
                          "'x', e.g. 4x1024x1024") from None
    bad = next((i for i, d in enumerate(dims) if d < 1), None)
    if bad is not None:
        kind = "negative" if dims[bad] < 0 else "zero"
        raise NpusimError(f"shape {text!r}: dimension {bad} is {dims[bad]} ({kind}); each "
                          "dimension is a positive integer")
    if len(dims) > 8:
        raise NpusimError(f"shape {text!r}: 1 to 8 dimensions, each a positive integer")
    largest = getattr(case, "largest_tensor", None)
    if (largest(dims) if largest else int(np.prod(dims, dtype=np.float64))) > MAX_ELEMENTS:
        what = "a tensor of" if largest else "shape"
        raise NpusimError(f"{what} {text!r} has more than {MAX_ELEMENTS:,} elements; "
                          "the simulator keeps every tensor in host memory")
    return dims


def parse_dtype(text: str, case: OpCase) -> str:
    """The dtype name for ``text`` (fp16, float16, bf16, ...) if the operator takes it."""
    name = DTYPE_ALIASES.get(text.lower(), text.lower())
    if name not in case.dtypes:
        raise NpusimError(f"{case.name} does not take dtype {text!r}; "
                          f"dtypes: {', '.join(case.dtypes)}")
    return name


def parse_ints(text: str) -> tuple:
    """``"1"`` -> (1,) and ``"2,1"`` -> (2, 1): one value for every spatial dimension, or one
    per dimension (up to 4: the 2-D padding's top, bottom, left, right form)."""
    try:
        values = tuple(int(v) for v in str(text).split(","))
    except ValueError:
        values = ()
    if not 1 <= len(values) <= 4 or min(values) < 0:
        raise ValueError("one non-negative integer, or one per spatial dimension, e.g. 1 or "
                         "2,1")
    return values


def parse_bool(text: str) -> bool:
    low = str(text).lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false")


def parse_mask(text: str) -> tuple:
    """``"1,1,0"`` -> (True, True, False): which of gradInput, gradWeight, gradBias to compute."""
    values = tuple(parse_bool(v) for v in str(text).split(","))
    if len(values) != 3:
        raise ValueError("three flags for gradInput, gradWeight, gradBias, e.g. 1,1,0")
    return values


_ZEROS = ContextVar("npusim_zero_inputs", default=False)


@contextmanager
def zero_inputs(on: bool = True):
    """Inside the block ``random_array`` gives zeros and draws nothing from ``rng``: for a
    timing-only run of a case whose cycles do not depend on its inputs' values
    (``OpCase.values_free_timing``). At batch 256 the normal draws cost about a second per
    activation tensor."""
    token = _ZEROS.set(bool(on))
    try:
        yield
    finally:
        _ZEROS.reset(token)


def random_array(rng, shape, dtype: str) -> np.ndarray:
    """Standard normal values rounded to ``dtype`` (zeros inside ``zero_inputs()``)."""
    if _ZEROS.get():
        return np.zeros(shape, DTYPES[dtype])
    return rng.standard_normal(shape, dtype=np.float32).astype(DTYPES[dtype])
