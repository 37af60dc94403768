"""Running a case and reporting it: the check against the golden, the roofline, the summary.

``run_case`` makes the seeded inputs, runs the operator on the simulator and compares each
output with the golden bit for bit (after the run: the golden never fills an output).
``metrics`` derives what the command prints from the Result:

- bytes: the operator's tensors in and out, each once (what an ideal kernel moves through GM: HBM,
  or the LPDDR4X DRAM of the Atlas inference series, named by the chip's ``memory_kind``);
- achieved TB/s and TFLOPS: those bytes and the case's flops over the simulated time;
- roofline bound: bytes / GM bandwidth for a vector operator; for a cube operator the larger
  of that and flops / the cube peak of the chip at the operator's dtype. The ratio is bound over
  simulated time (100% would be the bound itself).

Not modelled here: host-side time (argument checks, tiling, launch), which the Result does not
include either.
"""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from npusim.cases import OpCase
from npusim.chip import load_chip
from npusim.errors import NpusimError
from npusim.golden.atomic import AtomicSum

# buffer name in the stats -> the chip attribute of its size (as npusim.plot, which this module
# does not import so that the command starts without matplotlib)
SIZE_KEYS = {"UB": "ub_bytes", "L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes",
             "L0C": "l0c_bytes", "BT": "bias_table_bytes", "FB": "fixpipe_buffer_bytes"}


@dataclass
class CaseRun:
    """One operator run on one chip, with what the command reports about it."""

    case: OpCase
    chip: object
    dtype: str
    shape: tuple
    params: dict
    seed: int
    result: object = None
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)   # (output name, ok, text)
    error: str = ""                              # why it did not run on this chip

    @property
    def ok(self) -> bool:
        return not self.error and all(ok for _, ok, _ in self.checks)


def run_case(case: OpCase, chip, shape, dtype: str, params: dict, *, tiling=None,
             mode: str = "timed", seed: int = 0, trace: bool = True,
             numerics: bool = True, sanitize: bool = True) -> CaseRun:
    """Make seeded inputs, run ``case`` on ``chip`` and check it against the golden (not
    with ``numerics=False``: a timing-only run computes no outputs)."""
    chip = load_chip(chip)
    rng = np.random.default_rng(seed)
    args, kwargs = case.make(shape, dtype, params, rng)
    run = CaseRun(case=case, chip=chip, dtype=dtype, shape=shape, params=params, seed=seed,
                  args=args, kwargs=kwargs)
    run.result = case.function()(*args, **kwargs, chip=chip, tiling=tiling or None, mode=mode,
                                 trace=trace, numerics=numerics, sanitize=sanitize)
    run.checks = check_outputs(case, args, kwargs, run.result) if numerics else []
    return run


def check_outputs(case: OpCase, args, kwargs, result) -> list:
    """(name, bit-identical?, text) for every output the golden gives."""
    golden = case.golden()
    if golden is None:
        return [("-", True, f"not checked: npusim.golden has no {case.name} yet")]
    extra = case.golden_options(result, args, kwargs) if case.golden_options else {}
    with np.errstate(all="ignore"):
        want = golden(*args, **kwargs, **extra)
    if not isinstance(want, dict):
        want = {next(iter(result.outputs)): want}
    checks = []
    for name, expected in want.items():
        got = result.outputs.get(name)
        if expected is None or got is None:
            continue
        if isinstance(expected, AtomicSum):
            checks.append((name, *_compare_atomic(got, expected)))
        else:
            checks.append((name, *_compare(got, expected)))
    return checks


def _compare_atomic(got, expected: AtomicSum) -> tuple:
    """An output summed by GM atomic adds: bit-identical to the part-order golden, or within
    the bound any landing order gives (the order follows timing)."""
    ok, text = _compare(got, expected.value)
    if ok:
        return True, "bit-identical to the golden (atomic: order follows timing)"
    inside = expected.within(got)
    if inside.all():
        return True, "within the summation-order bound of the golden (atomic: order follows " \
                     "timing; " + text.removeprefix("MISMATCH: ") + ")"
    return False, f"MISMATCH beyond the summation-order bound: {int((~inside).sum()):,} " \
                  f"elements (atomic: order follows timing)"


def _compare(got, expected) -> tuple:
    got, expected = np.asarray(got), np.asarray(expected)
    if got.shape == expected.shape and _same_bits(got, expected):
        return True, "bit-identical to the golden"
    a, b = got.astype(np.float64), expected.astype(np.float64)
    if a.shape != b.shape:
        return False, f"shape {a.shape}, golden {b.shape}"
    if np.array_equal(a, b, equal_nan=True):
        return True, "bit-identical to the golden"
    bad = ~((a == b) | (np.isnan(a) & np.isnan(b)))
    worst = float(np.nanmax(np.abs(a - b)[bad])) if bad.any() else 0.0
    return False, f"MISMATCH: {int(bad.sum()):,} of {a.size:,} elements differ (max |d| {worst:g})"


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """The same dtype and the same bytes (then the values compare equal too: the quick path
    of ``_compare``, without float64 copies of large outputs)."""
    if a.dtype != b.dtype:
        return False
    return np.array_equal(np.ascontiguousarray(a).reshape(-1).view(np.uint8),
                          np.ascontiguousarray(b).reshape(-1).view(np.uint8))


def moved_bytes(run: CaseRun) -> int:
    """The operator's tensors in and out, each counted once."""
    inputs = sum(a.nbytes for a in run.args)
    outputs = sum(o.nbytes for o in run.result.outputs.values() if o is not None)
    return inputs + outputs


def cube_dtype(run: CaseRun) -> str:
    """The dtype the cube ran at, for the roofline: what the run chose (the case's
    ``golden_options``: fp16 for fp32 inputs with cube_math_type 2, HF32 where the chip and
    cube_math_type give it), else the input dtype when the cube takes it, else fp16."""
    if run.case.golden_options and run.result is not None:
        opts = run.case.golden_options(run.result, run.args, run.kwargs)
        if opts.get("compute_dtype"):
            return "hfloat32" if opts.get("hf32_bits") else opts["compute_dtype"]
    return run.dtype if run.dtype in run.chip.input_dtypes else "float16"


def metrics(run: CaseRun) -> dict:
    """What the command reports about a timed (or functional) run."""
    r, chip = run.result, run.chip
    nbytes, flops = moved_bytes(run), run.case.flops(run.args, run.kwargs)
    out = {"bytes": nbytes, "flops": flops, "cycles": r.cycles, "time_us": r.time_us}
    memory_us = nbytes / chip.hbm_bytes_per_s * 1e6
    bound_us, bound = memory_us, "memory"
    if run.case.unit == "cube":
        dt = cube_dtype(run)
        compute_us = flops / chip.peak_flops(dt) * 1e6
        out["peak_tflops"], out["cube_dtype"] = chip.peak_flops(dt) / 1e12, dt
        if compute_us > memory_us:
            bound_us, bound = compute_us, "compute"
    out.update(bound_us=bound_us, bound=bound)
    if r.cycles:
        seconds = r.time_us * 1e-6
        out.update(tbs=nbytes / seconds / 1e12, tflops=flops / seconds / 1e12,
                   roofline_ratio=bound_us / r.time_us)
    out["pipe_utilisation"] = r.stats.get("pipe_utilisation", {})
    out["peak_live_bytes"] = r.stats.get("peak_live_bytes") or r.stats.get("peak_bytes", {})
    out["capacity_bytes"] = {b: getattr(chip, SIZE_KEYS[b]) for b in out["peak_live_bytes"]
                             if b in SIZE_KEYS}
    return out


def tiling_dict(tiling) -> dict:
    if tiling is None:
        return {}
    if dataclasses.is_dataclass(tiling):
        return dataclasses.asdict(tiling)
    return dict(tiling) if isinstance(tiling, dict) else {"tiling": str(tiling)}


def shape_text(shape) -> str:
    return "x".join(str(d) for d in shape)


def product_text(chip) -> str:
    kind = "separated AIC/AIV" if chip.separated else "coupled"
    return f"{chip.soc}, {kind}, {chip.clock_hz / 1e9:.2f} GHz"


def summary_dict(run: CaseRun) -> dict:
    """The run as JSON-ready data: the case, the check, the metrics, the tiling, the stats."""
    r = run.result
    return {"op": run.case.name, "aclnn": run.case.aclnn, "chip": run.chip.name,
            "soc": run.chip.soc, "dtype": run.dtype, "shape": list(run.shape),
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in run.params.items()},
            "seed": run.seed, "mode": r.mode,
            "check": {name: text for name, _ok, text in run.checks}, "ok": run.ok,
            "metrics": metrics(run), "tiling": tiling_dict(r.tiling),
            "workspace_bytes": r.workspace_bytes,
            "kernels": r.stats.get("kernels", []), "bytes_by_path": r.stats.get("bytes_by_path"),
            "gm": r.stats.get("gm", {}), "instructions": r.stats.get("instructions", 0)}


def _size(nbytes: float) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{int(nbytes)} B"


def summary_lines(run: CaseRun) -> list:
    """The readable summary ``npusim run`` prints."""
    r, m = run.result, metrics(run)
    head = (f"{run.case.aclnn} on {run.chip.name} ({product_text(run.chip)}): {run.dtype}, "
            f"shape {shape_text(run.shape)}, seed {run.seed}, {r.mode}")
    lines = [head] + [f"  check       {name}: {text}" for name, _ok, text in run.checks]
    if not r.cycles:
        return lines + ["  timing      none in functional mode (run with --mode timed)",
                        f"  tiling      {tiling_text(r.tiling)}"]
    kernels = ", ".join(f"{k['name']} on {k['cores']} cores" for k in r.stats.get("kernels", []))
    lines += [f"  time        {r.cycles:,} cycles = {r.time_us:.2f} us ({kernels})",
              f"  achieved    {m['tbs']:.2f} TB/s ({_size(m['bytes'])} in+out), "
              f"{m['tflops']:.2f} TFLOPS ({m['flops']:.3g} flop)",
              f"  GM          {_gm_text(r.stats, run.chip.memory_kind)}",
              f"  roofline    {m['bound_us']:.2f} us, {m['bound']}-bound "
              f"({_bound_text(run, m)}); reached {m['roofline_ratio']:.0%} of it",
              "  pipes       " + pipes_text(m["pipe_utilisation"]),
              "  buffers     " + buffers_text(m) + "  (peak live on one core)",
              f"  tiling      {tiling_text(r.tiling)}"]
    flag = fidelity_text(run, m)
    return lines + ([f"  fidelity    {flag}"] if flag else [])


def fidelity_text(run: CaseRun, m: dict | None = None) -> str:
    """The fidelity rule's sentence for a timed run (``npusim.fidelity``), or ""."""
    from npusim.fidelity import check

    if run.error or not run.result.cycles:
        return ""
    m = m or metrics(run)
    return check(run.chip.name, m["bound"], m.get("roofline_ratio", 0.0), m["bytes"])


def _gm_text(stats: dict, memory: str = "HBM") -> str:
    gm = stats.get("gm", {})
    moved = ", ".join(f"{path} {_size(n)}" for path, n in stats.get("bytes_by_path", {}).items())
    return (f"{memory} {_size(gm.get('hbm_bytes', 0))}, L2 hits {_size(gm.get('l2_hit_bytes', 0))}"
            f" (moved: {moved or '-'})")


def _bound_text(run: CaseRun, m: dict) -> str:
    memory = (f"{_size(m['bytes'])} / {run.chip.hbm_bytes_per_s / 1e12:.2f} TB/s "
              f"{run.chip.memory_kind}")
    if run.case.unit != "cube":
        return memory
    return f"{memory}; {m['flops']:.3g} flop / {m['peak_tflops']:.0f} TFLOPS {m['cube_dtype']}"


def pipes_text(util: dict) -> str:
    """'MTE2 55%  V 95%  (busy, mean over cores; idle: M)'."""
    busy = "  ".join(f"{p} {u:.0%}" for p, u in util.items() if u > 0) or "-"
    idle = ", ".join(p for p, u in util.items() if u <= 0)
    return busy + "  (busy, mean over cores" + (f"; idle: {idle})" if idle else ")")


def buffers_text(m: dict) -> str:
    parts = []
    for buf, used in m["peak_live_bytes"].items():
        cap = m["capacity_bytes"].get(buf)
        parts.append(f"{buf} {_size(used)} of {_size(cap)} ({used / cap:.0%})" if cap
                     else f"{buf} {_size(used)}")
    return "  ".join(parts) or "-"


def tiling_text(tiling) -> str:
    return " ".join(f"{k}={v}" for k, v in tiling_dict(tiling).items()) or "-"


# --- side by side ---------------------------------------------------------------------------

def compare_runs(case, chips, shape, dtype, params, tiling=None, mode="timed", seed=0,
                 trace=True) -> list:
    """One CaseRun per chip; a chip that refuses the case carries the reason in ``error``."""
    runs = []
    for chip in map(load_chip, chips):
        try:
            runs.append(run_case(case, chip, shape, dtype, params, tiling=tiling, mode=mode,
                                 seed=seed, trace=trace))
        except NpusimError as exc:
            runs.append(CaseRun(case=case, chip=chip, dtype=dtype, shape=shape, params=params,
                                seed=seed, error=" ".join(str(exc).split())))
    if all(r.error for r in runs):
        raise NpusimError(runs[0].error)
    return runs


def compare_rows(runs: list) -> list:
    """(label, one cell per run) rows of the side-by-side table; a run that did not happen
    shows why in its status cell and '-' elsewhere."""
    done = [r for r in runs if not r.error]
    ms = {id(r): metrics(r) for r in done}
    pipes = list(dict.fromkeys(p for r in done for p, u in ms[id(r)]["pipe_utilisation"].items()
                               if u > 0))
    bufs = list(dict.fromkeys(b for r in done for b in ms[id(r)]["peak_live_bytes"]))
    fields = list(dict.fromkeys(k for r in done for k in tiling_dict(r.result.tiling)))

    def row(label, fn, timed=False):   # timed rows mean nothing for a functional run
        return label, [fn(r, ms[id(r)]) if not r.error and not (timed and not r.result.cycles)
                       else "-" for r in runs]

    short = {"atlas-a2": "A2", "atlas-training": "training", "atlas-inference": "inference"}
    rows = [("product", [f"{r.chip.soc} ({short.get(r.chip.product, r.chip.product)})"
                         for r in runs]),
            ("status", [_status(r) for r in runs]),
            row("cycles", lambda r, m: f"{m['cycles']:,.0f}", True),
            row("time (us)", lambda r, m: f"{m['time_us']:.2f}", True),
            row("achieved TB/s", lambda r, m: f"{m.get('tbs', 0):.2f}", True),
            row("achieved TFLOPS", lambda r, m: f"{m.get('tflops', 0):.2f}", True),
            row("roofline (us)", lambda r, m: f"{m['bound_us']:.2f} {m['bound']}"),
            row("of roofline", lambda r, m: f"{m.get('roofline_ratio', 0):.0%}", True),
            row("cores", lambda r, m: str(r.result.stats.get("cores", "-")))]
    rows += [row(f"{p} busy", lambda r, m, p=p: _pct(m["pipe_utilisation"].get(p)), True)
             for p in pipes]
    rows += [row(f"peak {b}", lambda r, m, b=b: _peak(m, b)) for b in bufs]
    rows += [row(f"tiling {k}", lambda r, m, k=k: str(tiling_dict(r.result.tiling).get(k, "-")))
             for k in fields]
    return rows


def _status(run: CaseRun) -> str:
    if run.error:
        return "not run (see below)"
    return "exact" if run.ok else "MISMATCH"


def _pct(value) -> str:
    return "-" if value is None else f"{value:.0%}"


def _peak(m: dict, buf: str) -> str:
    used, cap = m["peak_live_bytes"].get(buf), m["capacity_bytes"].get(buf)
    if used is None:
        return "-"
    return f"{_size(used)} ({used / cap:.0%})" if cap else _size(used)


def compare_text(runs: list) -> list:
    """The side-by-side table as aligned text lines, then why any chip did not run."""
    rows = compare_rows(runs)
    heads = [r.chip.name for r in runs]
    width = max(len(label) for label, _ in rows) + 2
    cols = [max(len(heads[i]), *(len(cells[i]) for _, cells in rows)) + 2
            for i in range(len(runs))]
    lines = [" " * width + "".join(h.rjust(c) for h, c in zip(heads, cols, strict=True))]
    for label, cells in rows:
        lines.append(label.ljust(width) + "".join(v.rjust(c) for v, c in zip(cells, cols,
                                                                               strict=True)))
    lines += [f"{r.chip.name}: {r.error}" for r in runs if r.error]
    lines += [f"{r.chip.name}: {name}: {text}" for r in runs for name, ok, text in r.checks
              if not ok]
    return lines + fidelity_lines(runs)


def fidelity_lines(runs: list) -> list:
    """'chip: fidelity: ...' for every run the fidelity rule has something to say about."""
    return [f"{r.chip.name}: fidelity: {text}" for r in runs if (text := fidelity_text(r))]


def compare_markdown(runs: list) -> list:
    """The side-by-side table in Markdown; a chip that did not run says why in its column."""
    rows = compare_rows(runs)
    lines = ["| | " + " | ".join(r.chip.name for r in runs) + " |",
             "|---|" + "---:|" * len(runs)]
    for label, cells in rows:
        if label == "status":
            cells = [f"not run: {r.error}" if r.error else c for r, c in zip(runs, cells,
                                                                             strict=True)]
        lines.append(f"| {label} | " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    flags = fidelity_lines(runs)
    return lines + ([""] + [f"- {line}" for line in flags] if flags else [])


# --- chips ------------------------------------------------------------------------------------

CHIP_COLUMNS = ("chip", "soc", "cores", "GHz", "UB KB", "L1 KB", "L0A/B KB", "L0C KB", "memory",
                "mem GB", "mem TB/s", "L2 MB", "L2 TB/s", "fp16 TFLOPS", "bf16", "fp32", "hf32")


def chip_rows() -> list:
    """One row of text cells per chip model (CHIP_COLUMNS)."""
    from npusim.chip import chips

    rows = []
    for name in chips():
        c = load_chip(name)
        cores = f"{c.ai_core_count}+{c.aiv_count}" if c.separated else f"{c.ai_core_count}"
        peaks = [f"{c.peak_flops(dt) / 1e12:.0f}" if dt in c.input_dtypes else "-"
                 for dt in ("float16", "bfloat16", "float32", "hfloat32")]
        rows.append([name, c.soc, cores, f"{c.clock_hz / 1e9:.2f}", str(c.ub_bytes >> 10),
                     str(c.l1_bytes >> 10), f"{c.l0a_bytes >> 10}/{c.l0b_bytes >> 10}",
                     str(c.l0c_bytes >> 10), c.memory_kind, str(c.hbm_bytes >> 30),
                     f"{c.hbm_bytes_per_s / 1e12:.2f}", str(c.l2_bytes >> 20),
                     f"{c.l2_bytes_per_s / 1e12:.1f}", *peaks])
    return rows


CHIP_NOTE = ("cores: AI cores, + vector cores (AIV) on separated chips; buffers per core (UB per "
             "vector core); memory: the GM technology (HBM, or LPDDR4X DRAM); TFLOPS: cube peak "
             "by input dtype, - where the cube does not take it")


def chip_table() -> list:
    """The chip models as aligned text lines."""
    return aligned([list(CHIP_COLUMNS)] + chip_rows(), range(2, len(CHIP_COLUMNS))) \
        + [CHIP_NOTE]


def aligned(rows: list, right) -> list:
    """Rows of text cells as lines: each column as wide as its widest cell, two spaces apart,
    the columns in ``right`` aligned right, the others left."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.rjust(w) if i in right else cell.ljust(w)
                      for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
            for row in rows]


def chip_markdown() -> list:
    """The chip models as a Markdown table."""
    lines = ["| " + " | ".join(CHIP_COLUMNS) + " |",
             "|---|---|" + "---:|" * (len(CHIP_COLUMNS) - 2)]
    lines += ["| " + " | ".join(row) + " |" for row in chip_rows()]
    return lines + ["", CHIP_NOTE + "."]
