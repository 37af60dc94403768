"""Workload files: a model's operator calls as data (``models/workloads/*.toml``).

A workload has a ``name``, a ``description`` and ``[[call]]`` entries, each what ``npusim run``
would take: ``op``, ``shape`` ("32x64x56x56"), ``dtype``, optional ``params`` (the ``--param``
values), optional ``tiling``, ``note`` and ``phase`` (``forward``, ``backward`` or
``optimizer``: the report then gives the step's time by phase), ``products`` (the products
that run the call, where a framework runs one product another way: SGD's foreach kernels on
Atlas A2, per-tensor kernels on the training series; a chip of another product leaves the call
out by design, and the call still counts as run by every chip), and ``count`` (how many times
the step runs it).
``dtype_on`` optionally gives another dtype on a chip, as a framework's mixed precision would
choose it there (``dtype_on = { atlas-training = "float16" }`` for a bf16 model on the Atlas
training series, which has no bf16).
A call's ``batch_dim`` (an index into its shape) says which dimension grows with the step's
batch; the workload's ``batch`` says what that batch is (``batch_unit``: of what), and
``rescale(workload, n)`` gives the workload at batch ``n`` (every call's ``batch_dim`` scaled by
``n / batch``; a call without one keeps its shape). ``formats`` is ``"aclnn"`` (the default:
each call as its aclnn operator runs it, converting NCHW to the chip's formats and back) or
``"internal"`` (a framework that keeps activations and their gradients in NC1HWC0 between
layers: each call with a graph form runs it on NC1HWC0 tensors, see
``npusim.studies.predict.graph``); the report's step section gives both.
``[[unmodelled]]`` entries describe the layers of the step npusim does not run (``kind``,
``shape``, ``dtype``, ``count``, ``params``, ``note``, ``batch_dim``), for the share of the
step's FLOPs and bytes the modelled calls cover (``npusim.studies.predict.step_accounting``).
Loading checks every entry against the command's registry; a malformed one is a one-line
``NpusimError`` naming the file, the entry and what is allowed. An operator the registry lists
but ``npusim.ops`` does not have yet is kept, marked not modelled yet.
"""

import dataclasses
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from math import gcd
from pathlib import Path

from npusim.errors import NpusimError

CALL_KEYS = {"op", "shape", "dtype", "dtype_on", "params", "tiling", "count", "note",
             "batch_dim", "phase", "products"}
UNMODELLED_KEYS = {"kind", "shape", "dtype", "count", "params", "note", "batch_dim"}
TOP_KEYS = {"name", "description", "call", "unmodelled", "batch", "batch_unit", "formats"}
FORMATS = ("aclnn", "internal")
PHASES = ("forward", "backward", "optimizer")
PRODUCTS = ("atlas-training", "atlas-a2", "atlas-inference")


@dataclass(frozen=True)
class Call:
    """One operator call of a workload."""

    index: int
    op: str
    shape: tuple
    dtype: str
    params: dict = field(default_factory=dict)      # parameter texts, as --param takes them
    tiling: dict = field(default_factory=dict)
    count: int = 1
    note: str = ""
    modelled: bool = True
    dtype_on: dict = field(default_factory=dict)    # chip name -> dtype there
    batch_dim: int | None = None                    # the shape's dimension the batch scales
    phase: str = ""                                 # forward, backward, optimizer, or none
    products: tuple = ()                            # the products it runs on; () every one

    def dtype_for(self, chip: str) -> str:
        return self.dtype_on.get(chip, self.dtype)

    def runs_on(self, product: str) -> bool:
        return not self.products or product in self.products


@dataclass(frozen=True)
class Unmodelled:
    """A layer of the step npusim does not run, described for its FLOPs and bytes."""

    index: int
    kind: str
    shape: tuple
    dtype: str
    count: int = 1
    params: dict = field(default_factory=dict)
    note: str = ""
    batch_dim: int | None = None


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    path: str
    calls: tuple
    formats: str = "aclnn"
    batch: int | None = None          # the step's batch, as the shapes give it
    batch_unit: str = ""
    unmodelled: tuple = ()


def workloads_dir() -> Path:
    return Path(str(resources.files("npusim.models"))) / "workloads"


def workload_names() -> list:
    return sorted(p.stem for p in workloads_dir().glob("*.toml"))


def load_workload(name_or_path) -> Workload:
    """A workload by name (``resnet50-backward``) or path to a TOML file, checked."""
    text = str(name_or_path)
    path = Path(text)
    if not path.is_file():
        if (workloads_dir() / f"{text}.toml").is_file():
            path = workloads_dir() / f"{text}.toml"
        else:
            raise NpusimError(f"no workload {text!r}: give a .toml file or one of "
                              f"{', '.join(workload_names())}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise NpusimError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); a "
                          "workload is a UTF-8 TOML file") from None
    except tomllib.TOMLDecodeError as exc:
        raise NpusimError(f"{path}: not a valid TOML file: {exc}") from None
    _check_top(path, raw)
    calls = tuple(_call(path, i, entry) for i, entry in enumerate(raw["call"], 1))
    extra = tuple(_unmodelled(path, i, e) for i, e in enumerate(raw.get("unmodelled", []), 1))
    batch = raw.get("batch")
    if batch is not None and (isinstance(batch, bool) or not isinstance(batch, int)
                              or batch < 1):
        raise NpusimError(f"{path}: batch = {batch!r}: a positive integer")
    return Workload(name=str(raw["name"]), description=str(raw["description"]).strip(),
                    path=str(path), calls=calls, formats=raw.get("formats", "aclnn"),
                    batch=batch, batch_unit=str(raw.get("batch_unit", "")), unmodelled=extra)


def _check_top(path, raw: dict) -> None:
    for key in ("name", "description", "call"):
        if key not in raw:
            raise NpusimError(f"{path}: missing {key!r}; a workload has name, description "
                              "and [[call]] entries")
    unknown = sorted(set(raw) - TOP_KEYS)
    if unknown:
        raise NpusimError(f"{path}: unknown key {unknown[0]!r}; keys: "
                          f"{', '.join(sorted(TOP_KEYS))}")
    if not isinstance(raw["call"], list) or not raw["call"]:
        raise NpusimError(f"{path}: 'call' must be a list of [[call]] tables")
    if raw.get("formats", "aclnn") not in FORMATS:
        raise NpusimError(f"{path}: formats = {raw['formats']!r}; allowed: "
                          f"{' or '.join(repr(f) for f in FORMATS)}")
    if not isinstance(raw.get("unmodelled", []), list):
        raise NpusimError(f"{path}: 'unmodelled' must be a list of [[unmodelled]] tables")
    dims = any("batch_dim" in c for c in raw["call"] if isinstance(c, dict))
    if dims and "batch" not in raw:
        raise NpusimError(f"{path}: calls declare batch_dim but the workload has no batch = N "
                          "(the batch their shapes are at)")


def _call(path, index: int, entry) -> Call:
    from npusim.cases import CASES, lookup_case, parse_dtype, parse_shape

    where = f"{path}: call {index}"
    if not isinstance(entry, dict):
        raise NpusimError(f"{where}: must be a table with {', '.join(sorted(CALL_KEYS))}")
    unknown = set(entry) - CALL_KEYS
    missing = {"op", "shape", "dtype", "count"} - set(entry)
    if unknown or missing:
        what = f"unknown key {sorted(unknown)[0]!r}" if unknown else \
            f"missing key {sorted(missing)[0]!r}"
        raise NpusimError(f"{where}: {what}; keys: {', '.join(sorted(CALL_KEYS))}")
    case = lookup_case(entry["op"])
    if case is None:
        raise NpusimError(f"{where}: unknown op {entry['op']!r}; ops: {', '.join(CASES)}")
    count = entry["count"]
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise NpusimError(f"{where}: count = {count!r}: a positive integer")
    params = {str(k): _text(v) for k, v in (entry.get("params") or {}).items()}
    try:
        shape = parse_shape(str(entry["shape"]), case)
        dtype = parse_dtype(str(entry["dtype"]), case)
        case.parse_params(params)
    except NpusimError as exc:
        raise NpusimError(f"{where} ({case.name}): {exc}") from None
    tiling = entry.get("tiling") or {}
    if not isinstance(tiling, dict):
        raise NpusimError(f"{where}: tiling must be a table of field = value")
    dtype_on = entry.get("dtype_on") or {}
    if not isinstance(dtype_on, dict):
        raise NpusimError(f"{where}: dtype_on must be a table of chip = dtype")
    try:
        dtype_on = {str(k): parse_dtype(str(v), case) for k, v in dtype_on.items()}
    except NpusimError as exc:
        raise NpusimError(f"{where} ({case.name}): dtype_on: {exc}") from None
    return Call(index=index, op=case.name, shape=shape, dtype=dtype, params=params,
                tiling=dict(tiling), count=count, note=str(entry.get("note", "")),
                modelled=case.available(), dtype_on=dtype_on,
                batch_dim=_batch_dim(where, entry, shape), phase=_phase(where, entry),
                products=_products(where, entry))


def _products(where: str, entry: dict) -> tuple:
    given = entry.get("products", [])
    if not isinstance(given, list) or not given and "products" in entry \
            or any(p not in PRODUCTS for p in given):
        raise NpusimError(f"{where}: products = {given!r}: a non-empty list of "
                          f"{', '.join(PRODUCTS)}")
    return tuple(given)


def _phase(where: str, entry: dict) -> str:
    phase = entry.get("phase", "")
    if phase and phase not in PHASES:
        raise NpusimError(f"{where}: phase = {phase!r}; allowed: {', '.join(PHASES)}")
    return phase


def _batch_dim(where: str, entry: dict, shape: tuple):
    dim = entry.get("batch_dim")
    if dim is None:
        return None
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < len(shape):
        raise NpusimError(f"{where}: batch_dim = {dim!r}: an index into the shape, 0 to "
                          f"{len(shape) - 1}")
    return dim


def _unmodelled(path, index: int, entry) -> Unmodelled:
    from npusim.cases import parse_shape
    from npusim.studies.predict.step_accounting import DTYPE_BYTES, check_entry

    where = f"{path}: unmodelled {index}"
    if not isinstance(entry, dict):
        raise NpusimError(f"{where}: must be a table with {', '.join(sorted(UNMODELLED_KEYS))}")
    wrong = sorted(set(entry) - UNMODELLED_KEYS) or sorted({"kind", "shape"} - set(entry))
    if wrong:
        raise NpusimError(f"{where}: {'unknown' if wrong[0] in entry else 'missing'} key "
                          f"{wrong[0]!r}; keys: {', '.join(sorted(UNMODELLED_KEYS))}")
    shape = parse_shape(str(entry["shape"]))
    params = {str(k): _text(v) for k, v in (entry.get("params") or {}).items()}
    check_entry(where, str(entry["kind"]), shape, params)
    dtype, count = str(entry.get("dtype", "float16")), entry.get("count", 1)
    if dtype not in DTYPE_BYTES:
        raise NpusimError(f"{where}: dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise NpusimError(f"{where}: count = {count!r}: a positive integer")
    return Unmodelled(index=index, kind=str(entry["kind"]), shape=shape, dtype=dtype,
                      count=count, params=params, note=str(entry.get("note", "")),
                      batch_dim=_batch_dim(where, entry, shape))


def rescale(workload: Workload, batch: int) -> Workload:
    """``workload`` at batch ``batch``: each call's ``batch_dim`` scaled by batch / its batch."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise NpusimError(f"--batch {batch!r}: a positive integer")
    if workload.batch is None or not any(c.batch_dim is not None for c in workload.calls):
        raise NpusimError(f"--batch {batch}: workload {workload.name!r} declares no batch "
                          "dimension (give its calls batch_dim and the workload batch = N)")
    calls = tuple(_scaled(workload, c, batch) for c in workload.calls)
    extra = tuple(_scaled(workload, u, batch) for u in workload.unmodelled)
    return dataclasses.replace(workload, calls=calls, unmodelled=extra, batch=batch)


def _scaled(workload: Workload, entry, batch: int):
    if entry.batch_dim is None:
        return entry
    dim = entry.shape[entry.batch_dim]
    if dim * batch % workload.batch:
        what = f"call {entry.index}" if isinstance(entry, Call) else \
            f"unmodelled {entry.index}"
        raise NpusimError(f"--batch {batch}: {what}'s dimension {dim} at batch "
                          f"{workload.batch} does not scale to a whole number; allowed: a "
                          f"multiple of {workload.batch // gcd(dim, workload.batch)}")
    size = dim * batch
    shape = list(entry.shape)
    shape[entry.batch_dim] = size // workload.batch
    return dataclasses.replace(entry, shape=tuple(shape))


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
