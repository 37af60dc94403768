"""``npusim demo``: every operator npusim has, on atlas-training and atlas-a2 (and the convolution
also on atlas-inference), in one report.

For each operator in ``npusim.cases`` that exists, at its moderate demo size: the five seed
operators (the contract: ``SEED_OPERATORS``) in every dtype they take, the others in their first
dtype (``npusim compare NAME --dtype D`` runs another); the same seeded inputs on every chip, each
output checked bit for bit against its golden, and the side-by-side table (time, roofline, pipe
use, buffers, tiling). A product
that does not take a dtype says why in its column. Then the engine's own micro-kernels (vector,
GM stream, cube). The report is ``report.md`` with its PNGs (and one Chrome trace per operator)
in the output folder, which appears only when everything is written.
"""

import sys
import time

import numpy as np

from npusim.cases import CASES
from npusim.cases.run import compare_runs, metrics
from npusim.chip import load_chip
from npusim.errors import NpusimError
from npusim.face import charts, interrupt, plot, provenance
from npusim.face.outdir import OutputDir
from npusim.face.report import (
    chip_markdown,
    compare_markdown,
    compare_text,
    product_text,
    shape_text,
)
from npusim.micro.stream import run_stream
from npusim.micro.vector import run_vector

CHIPS = ("atlas-training", "atlas-a2")
# The Atlas inference series (Ascend 310P3) runs only the convolution (the seeds list it for no
# other operator), so it joins that section alone.
EXTRA_CHIPS = {"convolution_backward": ("atlas-inference",)}
DEMO_CHIPS = CHIPS + EXTRA_CHIPS["convolution_backward"]
# The five operators of the seed documents run in every dtype they take; the others (the rest of
# a training step) in their first, so the demo stays near a minute.
SEED_OPERATORS = ("silu_backward", "convolution_backward", "cross_entropy_loss_grad",
                  "embedding_dense_backward", "moe_token_permute_grad")


def demo_dtypes(case) -> tuple:
    """The dtypes the demo runs ``case`` in."""
    return case.dtypes if case.name in SEED_OPERATORS else case.dtypes[:1]


def chips_of(case) -> tuple:
    return CHIPS + EXTRA_CHIPS.get(case.name, ())


def run_demo(out="npusim-demo", quick: bool = False) -> int:
    """Run the demo, write the report into ``out``; return the exit status. ``quick`` uses
    small shapes (a smoke test of the whole path)."""
    start = time.perf_counter()
    cases = [case for case in CASES.values() if case.available()]
    with OutputDir(out) as folder:
        sections, ok = [], True
        for case in cases:
            shape = case.quick_shape if quick else case.demo_shape
            runs = _run_case(case, shape, len(sections) + 1, len(cases))
            ok &= all(r.ok for by_chip in runs.values() for r in by_chip if not r.error)
            sections += [_case_section(case, shape, runs, folder)]
        micro = _micro_section()
        elapsed = time.perf_counter() - start
        with open(folder.file("report.md"), "w") as f:
            f.write("\n".join(_report(sections, micro, elapsed)) + "\n")
    print(f"\nreport: {folder.shown.rstrip('/')}/report.md (open it in a Markdown viewer); "
          f"done in {time.perf_counter() - start:.1f} s")
    return 0 if ok else 1


def _run_case(case, shape, number: int, total: int) -> dict:
    """dtype -> [CaseRun per chip], with progress on stderr. Traces for the first dtype only."""
    runs = {}
    for i, dtype in enumerate(demo_dtypes(case)):
        t0 = time.perf_counter()
        print(f"[{number}/{total}] {case.name} {dtype} {shape_text(shape)} on "
              f"{', '.join(chips_of(case))} ...", end="", file=sys.stderr, flush=True)
        params = case.parse_params({})
        runs[dtype] = compare_runs(case, chips_of(case), shape, dtype, params, trace=i == 0)
        interrupt.check()
        print(f" {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    return runs


def _case_section(case, shape, runs: dict, folder) -> list:
    """The Markdown section of one operator; writes its plots and one trace into ``folder``."""
    first = case.dtypes[0]
    name = case.name
    print(f"\n== {case.aclnn}, {first}, shape {shape_text(shape)}")
    print("\n".join(compare_text(runs[first])))
    for dtype, by_chip in list(runs.items())[1:]:
        print(f"{dtype}: " + "; ".join(f"{r.chip.name} " + ("not run" if r.error else
                                       roofline_line(r)) for r in by_chip))
    charts.compare(runs[first], folder.file(f"{name}-compare.png"))
    lines = [f"## {case.aclnn}", "", f"{case.summary}. {case.notes}", "",
             f"Shape {shape_text(shape)}: {case.shape_help}. Seeded random inputs (seed 0), "
             "the same on every chip; every output compared bit for bit with its golden.", "",
             f"![{name} on each chip]({name}-compare.png)", ""]
    if len(runs) > 1:
        charts.bars(runs, folder.file(f"{name}-dtypes.png"),
                    f"{case.aclnn} {shape_text(shape)}: simulated time per dtype")
        lines += [f"![{name} per dtype]({name}-dtypes.png)", ""]
    elif len(case.dtypes) > 1:
        lines += [f"Also takes {', '.join(case.dtypes[1:])}: `npusim compare {name} --dtype "
                  f"{case.dtypes[1]}`.", ""]
    for dtype, by_chip in runs.items():
        lines += [f"### {dtype}", "", *compare_markdown(by_chip), ""]
    for run in runs[first]:
        if run.error or run.result.tracer is None:
            continue
        chip = run.chip.name
        plot.pipeline(run.result, folder.file(f"{name}-pipeline-{chip}.png"), max_cores=2)
        plot.memory(run.result, folder.file(f"{name}-memory-{chip}.png"))
        lines += [f"### The pipes and the buffers on {chip} ({first})", "",
                  f"![pipeline on {chip}]({name}-pipeline-{chip}.png)", "",
                  f"![buffer occupancy on {chip}]({name}-memory-{chip}.png)", ""]
    last = next((r for r in reversed(runs[first]) if not r.error), None)
    if last is not None:
        last.result.write_trace(folder.file(f"{name}-trace-{last.chip.name}.json"))
        lines += [f"The whole run on {last.chip.name} is in `{name}-trace-{last.chip.name}"
                  ".json`: open it in https://ui.perfetto.dev or chrome://tracing.", ""]
    return lines


def _report(sections: list, micro: list, elapsed: float) -> list:
    lines = ["# npusim demo", "",
             "Every operator npusim models, on the Atlas training series (Ascend 910, coupled "
             "cores) and Atlas A2 (Ascend 910B, separated cube and vector cores), and the "
             "convolution also on the Atlas inference series (Ascend 310P3: 8 coupled cores, "
             "LPDDR4X, no FixPipe). Times are "
             "simulated (cycles at the chip's clock); the roofline bound is the operator's bytes "
             "over the GM bandwidth (and, for cube work, its flops over the cube peak).", "",
             f"Made by `npusim demo` in {elapsed:.1f} s of wall time: "
             f"{provenance.line(provenance.stamp(DEMO_CHIPS))}.", "",
             "## The chips", "", *chip_markdown(), ""]
    for section in sections:
        lines += section
    lines += micro
    lines += ["## Next", "", "```bash", "npusim run silu_backward --chip atlas-a2 --out silu",
              "npusim compare silu_backward --dtype bfloat16 --out cmp",
              "npusim run silu_backward --help", "```"]
    return lines


# --- the engine's micro-kernels -----------------------------------------------------------------

def _vector_rows(chip):
    dtypes = ["float16", "float32"] + (["bfloat16"] if "bfloat16" in chip.cast_dtypes else [])
    for dtype in dtypes:
        for op in ("add", "exp_mul"):
            r = run_vector(op, chip=chip.name, dtype=dtype, tiles=8, tile_length=4096,
                           block_dim=min(8, chip.vector_core_count))
            x, y, z = (r.outputs[k].astype(np.float64) for k in "xyz")
            want = x + y if op == "add" else np.exp(x) * y
            err = np.max(np.abs(z - want) / np.maximum(np.abs(want), 1e-3))
            gbs = 3 * r.outputs["z"].nbytes / (r.time_us * 1e-6) / 1e9
            yield (f"vector {op}", dtype, r, f"max rel err {err:.1e}, {gbs:,.0f} GB/s")


def _stream_row(chip):
    cores = chip.vector_core_count
    r = run_stream(chip=chip.name, block_dim=cores, per_core_bytes=4 << 20)
    tbs = cores * (4 << 20) / (r.time_us * 1e-6) / 1e12
    yield ("GM stream", f"{cores} cores", r,
           f"{tbs:.2f} TB/s of {chip.hbm_bytes_per_s / 1e12:.2f} TB/s {chip.memory_kind}")


def _matmul_rows(chip):
    from npusim.micro.matmul import run_matmul

    r = run_matmul(chip=chip.name, m=128, n=128, k=256)
    a, b, c = (r.outputs[k].astype(np.float64) for k in ("a", "b", "c"))
    err = np.max(np.abs(c - a @ b)) / max(np.max(np.abs(a @ b)), 1e-9)
    tflops = 2 * 128 * 128 * 256 / (r.time_us * 1e-6) / 1e12
    yield ("cube matmul", "fp16->fp32", r, f"rel err {err:.1e}, {tflops:.2f} TFLOPS on 1 core")


def _micro_section() -> list:
    """Print and return (as Markdown) the micro-kernel table of each chip."""
    lines = ["## The engine underneath: micro-kernels", "",
             "Small kernels of `npusim.micro` that exercise one unit each; the check column "
             "compares with numpy after the run.", ""]
    for name in CHIPS:
        chip = load_chip(name)
        print(f"\n== micro-kernels on {name} ({product_text(chip)})")
        print(f"   {'kernel':<18}{'dtype':<12}{'cycles':>10}{'time us':>10}  check")
        lines += [f"### {name} ({product_text(chip)})", "",
                  "| kernel | dtype | cycles | time (us) | check |", "|---|---|---:|---:|---|"]
        for rows in (_vector_rows, _stream_row, _matmul_rows):
            try:
                for label, dtype, r, note in rows(chip):
                    print(f"   {label:<18}{dtype:<12}{r.cycles:>10,}{r.time_us:>10.2f}  {note}")
                    lines.append(f"| {label} | {dtype} | {r.cycles:,} | {r.time_us:.2f} | "
                                 f"{note} |")
            except NpusimError as exc:
                print(f"   {rows.__name__[1:]:<30} not run: {exc}")
                lines.append(f"| {rows.__name__[1:]} | | | | not run: {exc} |")
        lines.append("")
    return lines


def roofline_line(run) -> str:
    """'12.3 us, 85% of roofline' for a run that has timing."""
    m = metrics(run)
    return f"{m['time_us']:.2f} us, {m.get('roofline_ratio', 0):.0%} of roofline"
