"""A chip model's consistency checks, run on load: products, topology, memory kind, buffer
sizes, plausible magnitudes (a clock above 10 GHz or HBM below 1 GB/s is refused), the host's
memory, dtypes and cost classes. Each failure is a ChipModelError naming the file, the key, the
value and what is allowed."""

import math
import os

from npusim.chip.rules import (
    COST_CLASSES,
    KNOWN_DTYPES,
    MEMORY_KINDS,
    MIN_BUFFER_BYTES,
    PRODUCTS,
    TOPOLOGIES,
)
from npusim.errors import ChipModelError


def host_memory_bytes() -> int:
    """Physical memory of this host: what the simulator's byte arrays can use at most."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


PLAUSIBLE = {"clock_hz": (1e7, 1e10), "hbm_bytes_per_s": (1e9, 1e14),    # 10 GHz, 1 GB/s
             "ai_core_count": (1, 256), "aiv_per_ai_core": (0, 8)}


def check_consistency(path: str, v: dict) -> None:
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
