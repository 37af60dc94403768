"""``docs/modelling/costs.md``: where each instruction class's cost comes from, per chip.

One row per instruction class (data path, cube, vector instruction, start-up, sync) and chip:
the figure the model charges (a measured table, or its number), the source line of
``models/<chip>.toml`` and whether the figure is measured, documented or assumed (read off the
source line: a line starting "measured" is measured, one starting "assumed" assumed, any other
names a document). ``python -m npusim.studies.validate.costs_page`` prints the page;
``tests/test_costs_page.py`` holds the committed page to the loaded models.
"""

import sys

from npusim.chip import chips, load_chip
from npusim.studies.validate import vector_costs

# (key of the model, what the row calls it); the keys that are not vector costs
CLASSES = (
    ("gm_to_ub_bytes_per_cycle", "DataCopy GM->UB (MTE2)"),
    ("gm_to_l1_bytes_per_cycle", "DataCopy GM->L1 (MTE2)"),
    ("gm_to_l1_nd2nz_bytes_per_cycle", "DataCopy GM->L1 with ND2NZ (MTE2)"),
    ("ub_to_gm_bytes_per_cycle", "DataCopy UB->GM (MTE3)"),
    ("ub_to_gm_atomic_bytes_per_cycle", "DataCopy UB->GM atomic add (MTE3)"),
    ("ub_to_ub_bytes_per_cycle", "DataCopy UB->UB (V)"),
    ("ub_to_l1_bytes_per_cycle", "DataCopy UB->L1 (MTE3)"),
    ("l1_to_ub_bytes_per_cycle", "DataCopy L1->UB (MTE1)"),
    ("gm_latency_cycles", "GM move start-up (idle pipe)"),
    ("l1_to_l0a_bytes_per_cycle", "LoadData2D L1->L0A (MTE1)"),
    ("l1_to_l0b_bytes_per_cycle", "LoadData2D L1->L0B (MTE1)"),
    ("load2d_startup_cycles", "LoadData2D start-up"),
    ("load2d_startup_per_instruction", "LoadData2D start-up on every instruction"),
    ("load3d_bytes_per_cycle", "LoadData3Dv2 (img2col) L1->L0A"),
    ("load3d_l0b_bytes_per_cycle", "LoadData3Dv2 (img2col) L1->L0B"),
    ("load3d_startup_cycles", "LoadData3Dv2 start-up"),
    ("l0c_to_gm_bytes_per_cycle", "FixPipe L0C->GM"),
    ("fixpipe_elements_per_cycle", "FixPipe L0C->L1 (elements/cycle)"),
    ("fixpipe_startup_cycles", "FixPipe start-up"),
    ("l0c_to_ub_bytes_per_cycle", "L0C->UB (coupled cores)"),
    ("local_move_startup_cycles", "on-chip move start-up"),
    ("b16_cycles_per_fractal", "Mmad fp16/bf16 (cycles per fractal)"),
    ("b32_cycles_per_fractal", "Mmad fp32 (cycles per fractal)"),
    ("hf32_cycles_per_fractal", "Mmad hf32 (cycles per fractal)"),
    ("head_cycles", "Mmad head"),
    ("barrier_drain_cycles", "PipeBarrier<PIPE_V> drain"),
    ("kernel_start_cycles", "kernel start-up, Ascend C"),
    ("tbe_kernel_start_cycles", "kernel start-up, TBE"),
    ("tik_kernel_start_cycles", "kernel start-up, TIK"),
    ("kernel_start_per_block_cycles", "kernel start-up per block"),
    ("kernel_gap_cycles", "gap between kernels"),
    ("flag_cycles", "set_flag/wait_flag"),
    ("cross_core_flag_cycles", "cross-core flag"),
    ("sync_all_cycles", "SyncAll"),
    ("hbm_bytes_per_s", "HBM bandwidth (shared)"),
    ("l2_bytes_per_s", "L2 bandwidth (shared)"),
)
SECTION_OF = {"tik_kernel_start_cycles": "tbe_kernel_start_cycles"}


def kind(source: str) -> str:
    text = source.strip().lower()
    if text.startswith("measured"):
        return "measured"
    if text.startswith("assumed"):
        return "assumed"
    return "documented"


def source_of(chip, key: str) -> str:
    """The [sources] line that covers ``key`` (its own, the section's, or a key it takes its
    value from)."""
    sources = chip.sources
    for name in (key, SECTION_OF.get(key, key)):
        for full, text in sources.items():
            if full.split(".")[-1] == name and "." in full:
                return text
    for full, text in sources.items():
        if "." not in full and key in _section_keys(full):
            return text
    return "assumed: no source line"


def _section_keys(section: str) -> tuple:
    from npusim.chip import SCHEMA
    return tuple(SCHEMA.get(section, {}))


def figure(chip, key: str) -> str:
    table = chip.rate_tables.get(key)
    if table is not None:
        return (f"table `models/{table.file}` ({table.rates[0]:.1f}-{table.plateau:.1f} B/cycle "
                f"over {table.sizes[0]}-{table.sizes[-1]} B)")
    value = chip.values.get(key)
    if key == "gm_to_l1_nd2nz_bytes_per_cycle" and value is None:
        return f"as DataCopy GM->L1: {chip.gm_to_l1_bytes_per_cycle:g}"
    return str(value).lower() if isinstance(value, bool) else f"{value:g}"


def rows(chip) -> list[tuple[str, str, str, str]]:
    """(class, figure, measured/documented/assumed, source) for every class of ``chip``."""
    out = []
    for key, label in CLASSES:
        table = chip.rate_tables.get(key)
        if table is not None:
            src = table.source_line()
        elif key == "gm_to_l1_nd2nz_bytes_per_cycle":
            src = source_of(chip, "gm_to_l1_bytes_per_cycle")
        else:
            src = source_of(chip, key)
        out.append((label, figure(chip, key), kind(src), src))
    measured = set(vector_costs.measured_classes()) if chip.rate_tables else set()
    vec_src = chip.sources.get("vector.cost", "assumed: no source line")
    for op, entry in chip.cost.items():
        for cls, (start, per) in entry.items():
            mine = f"{op}.{cls}" in measured
            instr = " ".join(vector_costs.VECTOR_MAP[op][cls]) if mine else ""
            if mine:
                src = f"measured: msKPP {instr} (models/costs/910b/vector.csv)"
            elif measured:
                src = ("PTO-VEC cycle profile (hardware.md 2.3), a cost model: msKPP has no "
                       "table for this class")
            else:
                src = vec_src
            out.append((f"vector {op} {cls}", f"{start:g} + {per:g}/repeat", kind(src), src))
    return out


def page() -> str:
    intro = (
        "One row per instruction class and chip: the figure the chip model charges, whether it "
        "is measured, documented or assumed, and its source line in `models/<chip>.toml` (a "
        "measured table's header names its repository, file and commit). Generated by `python "
        "-m npusim.studies.validate.costs_page`; `tests/test_costs_page.py` holds it to the "
        "models. `python -m npusim.studies.validate.calibrate` re-derives the calibrated "
        "numbers from their sources. Vector figures are `start-up + cycles per 256-byte "
        "repeat` (the start-up paid when the V pipe was idle). msKPP's cube table (MMAD by m, "
        "k, n on 910B1) is not used: it reaches 98% of 4096 MAC/cycle from n = 256 with 2-3 "
        "cycles of issue per MMAD, what the model's 1 cycle per fractal and 6-cycle head "
        "charge within a few per cent; L1->BiasTable and L1->FixPipe buffer moves are not "
        "modelled (asc-devkit 32 B/cycle, agreeing with msKPP's measured 32.9, against "
        "msKPP's theoretical 64).")
    lines = ["# Where each cost comes from", "",
             "[npusim](../../README.md) · [docs](../README.md)", "", intro]
    for name in chips():
        chip = load_chip(name)
        lines += ["", f"## {name}", "", "| class | figure | kind | source |", "|---|---|---|---|"]
        for label, fig, knd, src in rows(chip):
            lines.append(f"| {label} | {fig} | {knd} | {src.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(page())
