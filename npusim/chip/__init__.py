"""Chip models: validated data loaded from ``models/<name>.toml``.

A chip file has fixed sections (``chip``, ``memory``, ``buffers``, ``alignment``, ``mte``,
``cube``, ``vector``, ``scalar``, ``launch``, ``sync``, ``features``) and a ``sources`` table
that names, for every number, where it comes from (a key of ``shared/reference/hardware.md``)
or says "assumed". A source given for a section or table covers every key inside it.

Two keys are optional, with the defaults of the chips that came first: ``memory.memory_kind``
(the GM technology, "HBM" unless a model says e.g. "LPDDR4X"; reports name it beside the
bandwidth) and ``features.has_inter_core_sync`` (true: SyncAll, and cross-core flags where the
chip has flag ids; false on the Atlas inference series, whose cores cannot synchronise).

A ``[tables]`` section names measured cost tables (``npusim/chip/tables.py``): for a data
path's rate key, a CSV of the rate against transfer size with its source; ``Chip.rate(key,
nbytes)`` interpolates it, and the path's ``[mte]`` number becomes the table's plateau.

Loading checks: unknown keys, missing keys, wrong types, non-positive sizes, unsourced numbers
and inconsistent values are a ``ChipModelError`` naming the file and the key. The loaded ``Chip``
is flat: every key is an attribute (``chip.ub_bytes``), keys being unique across sections.
"""

import math
import os
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from npusim.chip.checks import check_consistency, host_memory_bytes  # noqa: F401 (re-exported)
from npusim.chip.rules import (  # noqa: F401 (re-exported)
    COST_CLASSES,
    KNOWN_DTYPES,
    MEMORY_KINDS,
    MIN_BUFFER_BYTES,
    NON_NEGATIVE,
    PRODUCTS,
    TOPOLOGIES,
)
from npusim.chip.tables import TABLE_ONLY, load_tables
from npusim.errors import ChipModelError, NpusimError

# section -> key -> type. Numbers are positive unless listed in NON_NEGATIVE.
SCHEMA: dict[str, dict[str, type]] = {
    "chip": {"name": str, "soc": str, "product": str, "topology": str, "clock_hz": float,
             "ai_core_count": int, "aiv_per_ai_core": int},
    "memory": {"hbm_bytes": int, "hbm_bytes_per_s": float, "l2_bytes": int,
               "l2_bytes_per_s": float, "l2_line_bytes": int, "gm_burst_bytes": int,
               "gm_latency_cycles": int, "memory_kind": str},
    "buffers": {"l1_bytes": int, "l0a_bytes": int, "l0b_bytes": int, "l0c_bytes": int,
                "ub_bytes": int, "bias_table_bytes": int, "fixpipe_buffer_bytes": int},
    "alignment": {"ub_align_bytes": int, "l1_align_bytes": int, "l0ab_align_bytes": int,
                  "l0c_align_bytes": int},
    "mte": {"gm_to_ub_bytes_per_cycle": float, "gm_to_l1_bytes_per_cycle": float,
            "ub_to_gm_bytes_per_cycle": float, "ub_to_gm_atomic_bytes_per_cycle": float,
            "ub_to_ub_bytes_per_cycle": float,
            "ub_to_l1_bytes_per_cycle": float, "l1_to_ub_bytes_per_cycle": float,
            "l1_to_l0a_bytes_per_cycle": float, "l1_to_l0b_bytes_per_cycle": float,
            "load3d_bytes_per_cycle": float, "load3d_l0b_bytes_per_cycle": float,
            "l0c_to_ub_bytes_per_cycle": float,
            "fixpipe_elements_per_cycle": float, "l0c_to_gm_bytes_per_cycle": float,
            "load2d_startup_cycles": int, "load3d_startup_cycles": int,
            "fixpipe_startup_cycles": int, "local_move_startup_cycles": int,
            "load2d_startup_per_instruction": bool},
    "cube": {"fractal_m": int, "fractal_n": int, "fractal_k_bytes": int, "head_cycles": int,
             "input_dtypes": list, "b16_cycles_per_fractal": int, "b32_cycles_per_fractal": int,
             "hf32_cycles_per_fractal": int, "hf32_mantissa_bits": int},
    "vector": {"repeat_bytes": int, "block_bytes": int, "max_repeat_times": int,
               "compute_dtypes": list, "cast_dtypes": list, "barrier_drain_cycles": int,
               "cost": dict},
    "scalar": {"issue_cycles": int, "op_cycles": int, "queue_depth": int},
    "launch": {"kernel_start_cycles": int, "kernel_start_per_block_cycles": int,
               "tbe_kernel_start_cycles": int, "tik_kernel_start_cycles": int,
               "kernel_gap_cycles": int,
               "tiling_line_bytes": int},
    "sync": {"flag_cycles": int, "event_ids": int, "cross_core_flag_cycles": int,
             "sync_all_cycles": int, "cross_core_flag_ids": int},
    "features": {"has_fixpipe": bool, "has_l0c_to_ub": bool, "has_gm_nd2nz": bool,
                 "has_inter_core_sync": bool},
}
# Keys a model may leave out: the value of the chips that predate the key.
OPTIONAL = {"memory_kind": "HBM", "has_inter_core_sync": True,
            "load2d_startup_per_instruction": False}
# Keys a model may leave out that then take another key's value (what the chips before them
# charged); the other key's source covers them.
SAME_AS = {"load3d_l0b_bytes_per_cycle": "load3d_bytes_per_cycle",
           "tik_kernel_start_cycles": "tbe_kernel_start_cycles"}


@dataclass(frozen=True)
class Chip:
    """A validated chip model. Attribute names are the TOML keys (units in the names)."""

    path: str
    sources: dict = field(repr=False)
    values: dict = field(repr=False)

    def __post_init__(self):
        for key, value in self.values.items():   # plain attributes: no lookup per access
            object.__setattr__(self, key, value)

    def __getattr__(self, key):
        try:
            return self.__dict__["values"][key]
        except KeyError:
            raise AttributeError(key) from None

    def __repr__(self) -> str:
        cores = (f"{self.ai_core_count} AIC + {self.aiv_count} AIV" if self.separated
                 else f"{self.ai_core_count} coupled cores")
        return (f"Chip({self.name!r}: {self.soc}, {cores} at {self.clock_hz / 1e9:.2f} GHz, "
                f"UB {self.ub_bytes >> 10} KiB, L1 {self.l1_bytes >> 10} KiB, {self.memory_kind} "
                f"{self.hbm_bytes / 2**30:.0f} GiB at {self.hbm_bytes_per_s / 1e12:.2f} TB/s)")

    @property
    def separated(self) -> bool:
        return self.values["topology"] == "separated"

    @property
    def aiv_count(self) -> int:
        return self.ai_core_count * self.aiv_per_ai_core

    @property
    def vector_core_count(self) -> int:
        """Cores that run vector kernels: AIVs on separated chips, all cores on coupled ones."""
        return self.aiv_count if self.separated else self.ai_core_count

    @property
    def hbm_bytes_per_cycle(self) -> float:
        return self.hbm_bytes_per_s / self.clock_hz

    @property
    def l2_bytes_per_cycle(self) -> float:
        return self.l2_bytes_per_s / self.clock_hz

    def rate(self, key: str, nbytes: float) -> float:
        """Bytes per cycle of one instruction moving ``nbytes`` on the path of rate ``key``:
        the measured table's rate at that size where the model has one, else the number."""
        table = self.values["rate_tables"].get(key)
        if table is not None:
            return table.rate(nbytes)
        return self.values[TABLE_ONLY.get(key, key)]

    def vector_cost(self, op: str, cost_class: str) -> tuple[float, float]:
        """(startup cycles, cycles per 256-byte repeat) of a vector instruction."""
        table = self.values["cost"]
        if op not in table:
            raise NpusimError(f"chip {self.name!r} has no vector cost for {op!r}")
        entry = table[op]
        return tuple(entry.get(cost_class) or entry["f32"])

    def with_speedup(self, pipes: dict | None = None, hbm: float = 1.0) -> "Chip":
        """This chip with the named pipes' instruction bodies ``factor`` times faster (their
        start-up latency unchanged; ``inf``: free) and the HBM bandwidth ``hbm`` times higher:
        the re-simulation a what-if estimate is held against. Factors must be positive."""
        pipes = dict(pipes or {})
        for name, factor in [*pipes.items(), ("hbm", hbm)]:
            if not isinstance(factor, int | float) or isinstance(factor, bool) or factor <= 0:
                raise ChipModelError(f"speed-up {name} = {factor!r}: allowed a number > 0")
        values = dict(self.values, hbm_bytes_per_s=self.hbm_bytes_per_s * hbm,
                      pipe_speedup={**(self.values.get("pipe_speedup") or {}), **pipes})
        return Chip(self.path, self.sources, values)

    def peak_flops(self, dtype: str = "float16") -> float:
        """Cube peak in FLOP/s: cores x MACs per cycle x 2 x clock."""
        macs = self.fractal_m * self.fractal_n * (self.fractal_k_bytes // 2)
        per = {"float16": 1, "bfloat16": 1, "float32": 2 * self.b32_cycles_per_fractal,
               "hfloat32": 2 * max(self.hf32_cycles_per_fractal, 1)}[dtype]
        return self.ai_core_count * macs * 2 * self.clock_hz / per


def models_dir() -> Path:
    return Path(str(resources.files("npusim.models")))


def chips() -> list[str]:
    """Names of the chip models shipped in ``models/``."""
    return sorted(p.stem for p in models_dir().glob("*.toml"))


def load_chip(name_or_path="atlas-a2") -> Chip:
    """Load and validate a chip model by name (``'atlas-a2'``) or path to a TOML file."""
    if isinstance(name_or_path, Chip):
        return name_or_path
    if not isinstance(name_or_path, str | os.PathLike):
        raise ChipModelError(f"chip = {name_or_path!r}: a chip name ({', '.join(chips())}), "
                             "a path to a .toml file or a Chip")
    text = str(name_or_path)
    path = Path(text)
    if not text.strip() or path.is_dir():
        raise ChipModelError(f"chip = {text!r} is {'a directory' if text.strip() else 'empty'}"
                             f"; give a chip name ({', '.join(chips())}) or a .toml file")
    if not (text.endswith(".toml") or path.exists()):
        if text not in chips():
            raise NpusimError(f"unknown chip {text!r}; chips: {', '.join(chips())}")
        path = models_dir() / f"{text}.toml"
    return _load_cached(str(path.resolve()))


_CACHE: dict[str, Chip] = {}


def _load_cached(path: str) -> Chip:
    stamp = (path, Path(path).stat().st_mtime_ns) if Path(path).exists() else (path, 0)
    key = f"{stamp[0]}@{stamp[1]}"
    if key not in _CACHE:
        _CACHE[key] = _load(path)
    return _CACHE[key]


def _load(path: str) -> Chip:
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise ChipModelError(f"{path}: no such chip model file") from None
    except tomllib.TOMLDecodeError as exc:
        raise ChipModelError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ChipModelError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); "
                             "a chip model is a UTF-8 TOML file") from None
    except OSError as exc:
        raise ChipModelError(f"{path}: cannot be read: {exc.strerror}") from None
    sources = raw.pop("sources", None)
    if not isinstance(sources, dict):
        raise ChipModelError(f"{path}: missing [sources] table naming each number's source")
    tables = _tables(path, raw, sources)
    values = _flatten(path, raw)
    values["rate_tables"] = tables
    _check_sources(path, raw, _flat_sources(sources))
    check_consistency(path, values)
    return Chip(path=path, sources=sources, values=values)


def _tables(path: str, raw: dict, sources: dict) -> dict:
    """The measured rate tables of ``[tables]`` (``npusim/chip/tables.py``). A path with a
    table takes no ``[mte]`` number and no [sources] entry: its number becomes the table's
    plateau (the rate of its largest transfer), its source the table's header."""
    rate_keys = {k for k in SCHEMA["mte"] if k.endswith("_bytes_per_cycle")}
    tables = load_tables(path, raw.pop("tables", {}), rate_keys)
    mte = raw.get("mte")
    for key, table in tables.items():
        if key not in rate_keys:
            continue
        if isinstance(mte, dict) and key in mte:
            raise ChipModelError(f"{path}: mte.{key} is given and tables.{key} too; a "
                                 "measured path takes its table only")
        if f"mte.{key}" in sources:
            raise ChipModelError(f"{path}: sources.mte.{key}: the table {table.file} is its "
                                 "source (its header); remove the entry")
        if isinstance(mte, dict):
            mte[key] = table.plateau
            sources[f"mte.{key}"] = table.source_line()
    return tables


def _flatten(path: str, raw: dict) -> dict:
    for section in raw:
        if section not in SCHEMA:
            raise ChipModelError(f"{path}: unknown section [{section}]; "
                                 f"allowed: {', '.join(SCHEMA)}")
    values = {}
    for section, keys in SCHEMA.items():
        table = raw.get(section)
        if not isinstance(table, dict):
            raise ChipModelError(f"{path}: missing section [{section}]")
        for key in table:
            if key not in keys:
                raise ChipModelError(f"{path}: unknown key {section}.{key}; "
                                     f"allowed: {', '.join(keys)}")
        for key, typ in keys.items():
            if key not in table and key not in OPTIONAL and SAME_AS.get(key) not in table:
                raise ChipModelError(f"{path}: missing key {section}.{key}")
            default = table.get(SAME_AS[key]) if key in SAME_AS else OPTIONAL.get(key)
            values[key] = _typed(path, f"{section}.{key}", table.get(key, default), typ)
    return values


def _typed(path, where, value, typ):
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if typ is int and isinstance(value, bool) or not isinstance(value, typ):
        raise ChipModelError(f"{path}: {where} must be {typ.__name__}, got {value!r}")
    key = where.split(".")[-1]
    if typ is float and not math.isfinite(value):
        raise ChipModelError(f"{path}: {where} must be a finite number, got {value!r}")
    if typ in (int, float):
        low_ok = value >= 0 if key in NON_NEGATIVE else value > 0
        if not low_ok:
            bound = "non-negative" if key in NON_NEGATIVE else "positive"
            raise ChipModelError(f"{path}: {where} must be {bound}, got {value!r}")
    return value


def _flat_sources(sources: dict, prefix: str = "") -> dict:
    flat = {}
    for key, val in sources.items():
        name = f"{prefix}{key}"
        if isinstance(val, dict):
            flat.update(_flat_sources(val, name + "."))
        else:
            flat[name] = val
    return flat


def _check_sources(path: str, raw: dict, sources: dict) -> None:
    known = {f"{s}.{k}" for s, keys in SCHEMA.items() for k in keys} | set(SCHEMA)
    for key, text in sources.items():
        if key not in known:
            raise ChipModelError(f"{path}: sources.{key} names no key of the model")
        if not isinstance(text, str) or not text.strip():
            raise ChipModelError(f"{path}: sources.{key} must be a non-empty string")
    for section, keys in SCHEMA.items():
        for key, typ in keys.items():
            left_out = key in SAME_AS and key not in raw.get(section, {})
            if typ in (int, float, dict) and f"{section}.{key}" not in sources \
                    and section not in sources and not left_out:
                raise ChipModelError(f"{path}: {section}.{key} has no entry in [sources]; "
                                     "name its hardware.md source or say 'assumed'")
