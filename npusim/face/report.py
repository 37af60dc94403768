"""The run report: what ``npusim run``, ``compare`` and ``demo`` print about a case's run.

``summary_lines`` is the readable summary of one run (check, time and its error band, achieved
rates, GM traffic, roofline, pipes, buffers, tiling, the fidelity rule's flag); ``compare_text``
and ``compare_markdown`` put several chips side by side; ``chip_table`` lists the chip models.
The numbers come from ``npusim.cases.run.metrics`` and the bands from
``npusim.studies.validate.bands``; this module only words and aligns them.
"""

from npusim.cases.run import CaseRun, metrics, tiling_dict
from npusim.chip import load_chip
from npusim.studies.validate.bands import band, band_cell, file_hash
from npusim.studies.validate.fidelity import check


def shape_text(shape) -> str:
    return "x".join(str(d) for d in shape)


def product_text(chip) -> str:
    kind = "separated AIC/AIV" if chip.separated else "coupled"
    return f"{chip.soc}, {kind}, {chip.clock_hz / 1e9:.2f} GHz"


def summary_dict(run: CaseRun) -> dict:
    """The run as JSON-ready data: the case, the check, the metrics, the error band (None
    for a functional run), the tiling, the stats."""
    r = run.result
    return {"op": run.case.name, "aclnn": run.case.aclnn, "chip": run.chip.name,
            "soc": run.chip.soc, "dtype": run.dtype, "shape": list(run.shape),
            "params": {k: list(v) if isinstance(v, tuple) else v for k, v in run.params.items()},
            "seed": run.seed, "mode": r.mode,
            "check": {name: text for name, _ok, text in run.checks}, "ok": run.ok,
            "metrics": metrics(run), "band": run_band(run), "tiling": tiling_dict(r.tiling),
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
              f"  error band  {run_band(run)['text']}",
              f"  achieved    {m['tbs']:.2f} TB/s ({_size(m['bytes'])} in+out), "
              f"{m['tflops']:.2f} TFLOPS ({m['flops']:.3g} flop)",
              f"  GM          {_gm_text(r.stats, run.chip.memory_kind)}",
              f"  roofline    {m['bound_us']:.2f} us, {m['bound']}-bound "
              f"({_bound_text(run, m)}); reached {m['roofline_ratio']:.0%} of it",
              "  pipes       " + pipes_text(m["pipe_utilisation"]),
              "  buffers     " + buffers_text(m) + _peak_note(m),
              f"  tiling      {tiling_text(r.tiling)}"]
    flag = fidelity_text(run, m)
    return lines + ([f"  fidelity    {flag}"] if flag else [])


def _timed(run: CaseRun) -> bool:
    """Whether the run gave a time (it ran, and in the timed mode)."""
    return not run.error and bool(run.result.cycles)


def run_band(run: CaseRun) -> dict | None:
    """The error band of a timed run's kind and kernels (``npusim.studies.validate.bands``),
    or None."""
    if not _timed(run):
        return None
    kernels = [(k.get("op_type", k["name"]), k["cycles"])
               for k in run.result.stats.get("kernels", [])]
    return band(run.case.name, run.chip, kernels=kernels or None)


def chip_labels(runs: list) -> list:
    """A header per run: the chip's name, with its file's short sha256 where two runs' chips
    share a name, and a number where they share the file too."""
    names = [r.chip.name for r in runs]
    labels = [f"{n} ({file_hash(r.chip.path)[:8]})" if names.count(n) > 1 else n
              for n, r in zip(names, runs, strict=True)]
    return [f"{lab} #{labels[:i].count(lab) + 1}" if labels.count(lab) > 1 else lab
            for i, lab in enumerate(labels)]


def fidelity_text(run: CaseRun, m: dict | None = None) -> str:
    """The fidelity rule's sentence for a timed run (``studies.validate.fidelity``), or ""."""
    if not _timed(run):
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


def _peak_note(m: dict) -> str:
    if m.get("peak_kind") == "carved":
        return "  (carved by init_buffer on one core; the live peak needs the trace)"
    return "  (peak live on one core)"


def peak_label(runs_metrics: list, buf: str) -> str:
    """``peak UB live`` or ``UB carved``: the compare row says which of the two it shows."""
    kinds = {m.get("peak_kind", "live") for m in runs_metrics}
    return f"peak {buf} live" if kinds == {"live"} else f"{buf} carved"


def tiling_text(tiling) -> str:
    return " ".join(f"{k}={v}" for k, v in tiling_dict(tiling).items()) or "-"


# --- side by side ---------------------------------------------------------------------------

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
            row("error band", lambda r, m: band_cell(run_band(r)), True),
            row("achieved TB/s", lambda r, m: f"{m.get('tbs', 0):.2f}", True),
            row("achieved TFLOPS", lambda r, m: f"{m.get('tflops', 0):.2f}", True),
            row("roofline (us)", lambda r, m: f"{m['bound_us']:.2f} {m['bound']}"),
            row("of roofline", lambda r, m: f"{m.get('roofline_ratio', 0):.0%}", True),
            row("cores", lambda r, m: str(r.result.stats.get("cores", "-")))]
    rows += [row(f"{p} busy", lambda r, m, p=p: _pct(m["pipe_utilisation"].get(p)), True)
             for p in pipes]
    rows += [row(peak_label(list(ms.values()), b), lambda r, m, b=b: _peak(m, b)) for b in bufs]
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
    heads = chip_labels(runs)
    width = max(len(label) for label, _ in rows) + 2
    cols = [max(len(heads[i]), *(len(cells[i]) for _, cells in rows)) + 2
            for i in range(len(runs))]
    lines = [" " * width + "".join(h.rjust(c) for h, c in zip(heads, cols, strict=True))]
    for label, cells in rows:
        lines.append(label.ljust(width) + "".join(v.rjust(c) for v, c in zip(cells, cols,
                                                                               strict=True)))
    lines += [f"{head}: {r.error}" for head, r in zip(heads, runs, strict=True) if r.error]
    lines += [f"{head}: {name}: {text}" for head, r in zip(heads, runs, strict=True)
              for name, ok, text in r.checks if not ok]
    return lines + band_lines(runs) + fidelity_lines(runs)


def band_lines(runs: list) -> list:
    """'chip: error band: ...' for every timed run (``npusim.studies.validate.bands``)."""
    return [f"{head}: error band: {b['text']}"
            for head, r in zip(chip_labels(runs), runs, strict=True) if (b := run_band(r))]


def fidelity_lines(runs: list) -> list:
    """'chip: fidelity: ...' for every run the fidelity rule has something to say about."""
    return [f"{head}: fidelity: {text}" for head, r in zip(chip_labels(runs), runs, strict=True)
            if (text := fidelity_text(r))]


def compare_markdown(runs: list) -> list:
    """The side-by-side table in Markdown; a chip that did not run says why in its column."""
    rows = compare_rows(runs)
    lines = ["| | " + " | ".join(chip_labels(runs)) + " |",
             "|---|" + "---:|" * len(runs)]
    for label, cells in rows:
        if label == "status":
            cells = [f"not run: {r.error}" if r.error else c for r, c in zip(runs, cells,
                                                                             strict=True)]
        lines.append(f"| {label} | " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    flags = band_lines(runs) + fidelity_lines(runs)
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
