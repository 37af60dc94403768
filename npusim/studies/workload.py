"""Workload files: a model's operator calls as data (``models/workloads/*.toml``).

A workload has a ``name``, a ``description`` and ``[[call]]`` entries, each what ``npusim run``
would take: ``op``, ``shape`` ("32x64x56x56"), ``dtype``, optional ``params`` (the ``--param``
values), optional ``tiling`` and ``note``, and ``count`` (how many times the step runs it).
``dtype_on`` optionally gives another dtype on a chip, as a framework's mixed precision would
choose it there (``dtype_on = { atlas-training = "float16" }`` for a bf16 model on the Atlas
training series, which has no bf16).
Loading checks every entry against the command's registry; a malformed one is a one-line
``NpusimError`` naming the file, the entry and what is allowed. An operator the registry lists
but ``npusim.ops`` does not have yet is kept, marked not modelled yet.
"""

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from npusim.errors import NpusimError

CALL_KEYS = {"op", "shape", "dtype", "dtype_on", "params", "tiling", "count", "note"}


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

    def dtype_for(self, chip: str) -> str:
        return self.dtype_on.get(chip, self.dtype)


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    path: str
    calls: tuple


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
    for key in ("name", "description", "call"):
        if key not in raw:
            raise NpusimError(f"{path}: missing {key!r}; a workload has name, description "
                              "and [[call]] entries")
    if not isinstance(raw["call"], list) or not raw["call"]:
        raise NpusimError(f"{path}: 'call' must be a list of [[call]] tables")
    calls = tuple(_call(path, i, entry) for i, entry in enumerate(raw["call"], 1))
    return Workload(name=str(raw["name"]), description=str(raw["description"]).strip(),
                    path=str(path), calls=calls)


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
        shape = parse_shape(str(entry["shape"]))
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
                modelled=case.available(), dtype_on=dtype_on)


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)
