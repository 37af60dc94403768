"""Chip models: validated data loaded from ``models/<name>.toml``.

A chip file has fixed sections (``chip``, ``memory``, ``buffers``, ``alignment``, ``mte``,
``cube``, ``vector``, ``scalar``, ``launch``, ``sync``, ``features``) and a ``sources`` table
that names, for every number, where it comes from (a key of ``shared/reference/hardware.md``)
or says "assumed". A source given for a section or table covers every key inside it.

Two keys are optional, with the defaults of the chips that came first: ``memory.memory_kind``
(the GM technology, "HBM" unless a model says e.g. "LPDDR4X"; reports name it beside the
bandwidth) and ``features.has_inter_core_sync`` (true: SyncAll, and cross-core flags where the
chip has flag ids; false on the Atlas inference series, whose cores cannot synchronise).

A ``[tables]`` section names measured cost tables (``npusim/cost_tables.py``): for a data
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

from npusim.cost_tables import TABLE_ONLY, load_tables
from npusim.errors import ChipModelError, NpusimError


def host_memory_bytes() -> int:
    """Physical memory of this host: what the simulator's byte arrays can use at most."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


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
MEMORY_KINDS = ("HBM", "LPDDR4X")
NON_NEGATIVE = {"aiv_per_ai_core", "gm_latency_cycles", "head_cycles", "b32_cycles_per_fractal",
                "l0c_to_gm_bytes_per_cycle", "fixpipe_startup_cycles",
                "bias_table_bytes", "fixpipe_buffer_bytes", "ub_to_l1_bytes_per_cycle",
                "l1_to_ub_bytes_per_cycle", "l0c_to_ub_bytes_per_cycle",
                "fixpipe_elements_per_cycle", "hf32_cycles_per_fractal", "hf32_mantissa_bits",
                "cross_core_flag_cycles", "sync_all_cycles", "cross_core_flag_ids",
                "local_move_startup_cycles"}
# The least each buffer must hold for the shipped kernels' smallest tilings (assumed from
# them: a 16 x 16 x 16 cube block double-buffered through L1/L0, a vector tile of a few
# 32-byte blocks per queue plus the fp32 work tiles of the widest vector kernel).
MIN_BUFFER_BYTES = {"ub_bytes": 16 * 1024, "l1_bytes": 64 * 1024, "l0a_bytes": 16 * 1024,
                    "l0b_bytes": 16 * 1024, "l0c_bytes": 32 * 1024}
PRODUCTS = ("atlas-training", "atlas-a2", "atlas-inference")
TOPOLOGIES = ("coupled", "separated")
COST_CLASSES = ("f16", "f32", "int")
KNOWN_DTYPES = ("float16", "float32", "bfloat16", "hfloat32", "int8", "uint8", "int16",
                "int32", "uint32", "int64")


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
    _check_consistency(path, values)
    return Chip(path=path, sources=sources, values=values)


def _tables(path: str, raw: dict, sources: dict) -> dict:
    """The measured rate tables of ``[tables]`` (``npusim/cost_tables.py``). A path with a
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


PLAUSIBLE = {"clock_hz": (1e7, 1e10), "hbm_bytes_per_s": (1e9, 1e14),    # 10 GHz, 1 GB/s
             "ai_core_count": (1, 256), "aiv_per_ai_core": (0, 8)}


def _check_consistency(path: str, v: dict) -> None:
    def bad(key, msg):
        raise ChipModelError(f"{path}: {key} = {v.get(key)!r} is inconsistent: {msg}")

    if v["product"] not in PRODUCTS:
        bad("product", f"allowed: {', '.join(PRODUCTS)}")
    if v["memory_kind"] not in MEMORY_KINDS:
        bad("memory_kind", f"allowed: {', '.join(MEMORY_KINDS)}")
    if v["topology"] not in TOPOLOGIES:
        bad("topology", f"allowed: {', '.join(TOPOLOGIES)}")
    coupled = v["topology"] == "coupled"
    if coupled and v["aiv_per_ai_core"] != 0:
        bad("aiv_per_ai_core", "a coupled chip has no separate vector cores (use 0)")
    if not coupled and v["aiv_per_ai_core"] < 1:
        bad("aiv_per_ai_core", "a separated chip needs at least one AIV per AI core")
    if coupled and v["has_fixpipe"]:
        bad("has_fixpipe", "coupled cores move L0C out through UB, not FixPipe")
    if not coupled and v["has_l0c_to_ub"]:
        bad("has_l0c_to_ub", "separated cores have no L0C->UB path")
    if v["has_l0c_to_ub"] and v["l0c_to_ub_bytes_per_cycle"] <= 0:
        bad("l0c_to_ub_bytes_per_cycle", "must be positive when has_l0c_to_ub")
    if v["has_fixpipe"] and min(v["fixpipe_elements_per_cycle"],
                                v["l0c_to_gm_bytes_per_cycle"]) <= 0:
        bad("has_fixpipe", "FixPipe rates must be positive when has_fixpipe")
    if v["l2_bytes_per_s"] < v["hbm_bytes_per_s"]:
        bad("l2_bytes_per_s", "L2 cannot be slower than HBM")
    if v["l2_bytes"] >= v["hbm_bytes"]:
        bad("l2_bytes", "L2 must be smaller than HBM")
    for key, (low, high) in PLAUSIBLE.items():     # no chip has these: a typo, not a design
        if not low <= v[key] <= high:
            bad(key, f"outside the plausible range {low:g} to {high:g}")
    _check_buffers(bad, v)
    _check_host(bad, v)
    _check_dtypes(bad, v)
    _check_costs(path, v)


def _check_buffers(bad, v):
    pairs = [("ub_bytes", "ub_align_bytes"), ("l1_bytes", "l1_align_bytes"),
             ("l0a_bytes", "l0ab_align_bytes"), ("l0b_bytes", "l0ab_align_bytes"),
             ("l0c_bytes", "l0c_align_bytes")]
    for size, align in pairs:
        if v[size] % v[align]:
            bad(size, f"not a multiple of {align} = {v[align]}")
    if v["repeat_bytes"] != 8 * v["block_bytes"]:
        bad("repeat_bytes", "a vector repeat is 8 blocks")
    if v["l2_bytes"] % v["l2_line_bytes"]:
        bad("l2_bytes", f"not a multiple of l2_line_bytes = {v['l2_line_bytes']}")
    for key, least in MIN_BUFFER_BYTES.items():
        if v[key] < least:
            bad(key, f"smaller than the {least} bytes the smallest tiling of npusim's kernels "
                     "needs")


def _check_host(bad, v):
    """Every core's on-chip buffers are host byte arrays, and L2 residency a bit per line of
    HBM: a model whose arrays exceed the host's memory is refused before numpy allocates."""
    cores = v["ai_core_count"] * (1 + v["aiv_per_ai_core"])
    host = host_memory_bytes()
    for key in ("ub_bytes", "l1_bytes", "l0a_bytes", "l0b_bytes", "l0c_bytes",
                "bias_table_bytes", "fixpipe_buffer_bytes"):
        if v[key] * cores > host:
            bad(key, f"{cores} cores x {v[key]} bytes is more than this host's {host} bytes of "
                     "memory")
    if v["l2_bytes"] > host:
        bad("l2_bytes", f"more than this host's {host} bytes of memory")


def _check_dtypes(bad, v):
    for key in ("input_dtypes", "compute_dtypes", "cast_dtypes"):
        for name in v[key]:
            if name not in KNOWN_DTYPES:
                bad(key, f"unknown dtype {name!r}; known: {', '.join(KNOWN_DTYPES)}")
    if "hfloat32" in v["input_dtypes"] and v["hf32_cycles_per_fractal"] <= 0:
        bad("hf32_cycles_per_fractal", "must be positive when the cube takes hfloat32")
    if "hfloat32" in v["input_dtypes"] and not 0 < v["hf32_mantissa_bits"] < 23:
        bad("hf32_mantissa_bits", "HF32 keeps between 1 and 22 mantissa bits")
    if "float32" in v["input_dtypes"] and v["b32_cycles_per_fractal"] <= 0:
        bad("b32_cycles_per_fractal", "must be positive when the cube takes float32")


def _check_costs(path, v):
    """One message per bad entry, naming its key and value (never the whole table)."""
    for op, entry in v["cost"].items():
        where = f"{path}: vector.cost.{op}"
        if not isinstance(entry, dict) or "f32" not in entry:
            raise ChipModelError(f"{where} = {entry!r}: needs at least an f32 entry, e.g. "
                                 "{ f32 = [5.9, 2.1] }")
        for cls, pair in entry.items():
            if cls not in COST_CLASSES:
                raise ChipModelError(f"{where}.{cls}: unknown class; allowed: "
                                     f"{', '.join(COST_CLASSES)}")
            if (not isinstance(pair, list) or len(pair) != 2
                    or any(isinstance(x, bool) or not isinstance(x, int | float)
                           or not math.isfinite(x) or x < 0 for x in pair)):
                raise ChipModelError(f"{where}.{cls} = {pair!r}: must be [startup cycles, "
                                     "cycles per repeat], two finite numbers >= 0")
