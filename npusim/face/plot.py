"""Plots of a timed run, drawn headless with matplotlib (Agg) to PNG.

- ``pipeline(result, path, cores=None, max_cores=4, x_max_us=None)``: a Gantt chart, one row
  per pipe that ran of each core shown (the title says "4 of 48 cores shown" when it leaves
  cores out), time in microseconds, each instruction a bar coloured by kind (GM move, local
  move, vector, cube, flag wait, flag set, scalar). Each lane is one collection per colour,
  not one artist per bar, so a run of thousands of instructions draws in seconds.
- ``memory(result, path, cores=None)``: live bytes per on-chip buffer over time, one panel per
  core shown, with each buffer's capacity as a dashed line.

By default both show every core type the run used (``shown_cores``): on Atlas A2 a mixed
operator's cube core (aic: L1, L0A, L0B, L0C; MTE1, M, FIX) as well as its vector cores (aiv:
UB; V), on coupled chips the one kind of core. ``pipeline_rows`` and ``memory_panels`` say what
a figure draws, so a test can hold it against what the run used.
- ``critical_path(result, path, out)``: the Gantt of the cores the critical path visits most,
  the path in red over every instruction in grey.

Both write to a temporary file and rename it, so a failed plot leaves no partial PNG.
"""

import os
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from npusim.engine.trace_export import PIPE_ORDER, memory_timeline  # noqa: E402
from npusim.errors import NpusimError  # noqa: E402

COLOURS = {"gm": "#1f77b4", "local": "#17becf", "vector": "#2ca02c", "cube": "#d62728",
           "wait": "#bbbbbb", "set": "#7f7f7f", "scalar": "#9467bd", "other": "#ff7f0e"}
SIZE_KEYS = {"UB": "ub_bytes", "L1": "l1_bytes", "L0A": "l0a_bytes", "L0B": "l0b_bytes",
             "L0C": "l0c_bytes", "BT": "bias_table_bytes", "FB": "fixpipe_buffer_bytes"}


def _kind(inst) -> str:
    if inst.kind in ("wait", "xwait"):
        return "wait"
    if inst.kind in ("set", "xset"):
        return "set"
    if inst.pipe == "S":
        return "scalar"
    if inst.touches_gm:
        return "gm"
    return {"V": "vector", "M": "cube", "MTE1": "local", "FIX": "local"}.get(inst.pipe, "other")


def _save(fig, path) -> str:
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".plot-", suffix=".png", dir=folder)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png")
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)          # mkstemp's file is private; a new file is not
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _need_trace(result):
    if result.tracer is None:
        raise NpusimError("plots need a timed run with trace=True")


BUFFER_ORDER = ("L1", "L0A", "L0B", "L0C", "BT", "FB", "UB")
TYPE_ORDER = ("aic", "core", "aiv")   # cube (or coupled) cores above vector cores


def core_type(label: str) -> str:
    """The kind of core a label names: ``aic``, ``aiv`` (Atlas A2) or ``core`` (coupled)."""
    return label.rstrip("0123456789")


def shown_cores(result, max_cores: int = 4) -> list[int]:
    """Core indices a figure shows by default: the cores that ran instructions, taken in turn
    from each core type (cube first), up to ``max_cores`` but at least one of every type."""
    labels = result.stats.get("core_labels", [])
    used = sorted({r[0] for r in result.tracer.records})
    by_type: dict[str, list[int]] = {}
    for c in used:
        by_type.setdefault(core_type(labels[c]), []).append(c)
    queues = [by_type[t] for t in sorted(by_type, key=_type_rank)]
    limit = max(max_cores, len(queues))
    turns = (q[depth] for depth in range(max(map(len, queues), default=0))
             for q in queues if depth < len(q))
    shown = [c for _, c in zip(range(limit), turns, strict=False)]
    return sorted(shown, key=lambda c: (_type_rank(core_type(labels[c])), c))


def _type_rank(kind: str) -> int:
    return TYPE_ORDER.index(kind) if kind in TYPE_ORDER else len(TYPE_ORDER)


def pipeline_rows(result, cores=None, max_cores: int = 4) -> list[tuple[int, str]]:
    """(core index, pipe) of each row of the pipeline figure, top to bottom: the pipes of the
    cores shown that ran anything (a lane with no instruction, e.g. PIPE-S of a kernel whose
    scalar work is not traced, is left out)."""
    labels = result.stats.get("core_labels", [])
    shown = list(cores) if cores is not None else shown_cores(result, max_cores)
    pipes = result.stats.get("core_pipes", {})
    busy = {(r[0], r[1]) for r in result.tracer.records}
    return [(c, p) for c in shown for p in PIPE_ORDER
            if p in pipes.get(labels[c], PIPE_ORDER) and (c, p) in busy]


def _lanes(ax, bars: dict, colour, height: float) -> None:
    """Draw ``bars`` ({(row, key): [(x, width)]}) as one collection per lane and key (one
    ``broken_barh`` call each, not one per bar: the same picture, drawn in seconds)."""
    for (row, key), spans in bars.items():
        ax.broken_barh(spans, (row - height / 2, height), color=colour(key))


def _cores_shown(result, rows) -> str:
    """'4 of 48 cores shown' when the figure leaves cores out, else ''."""
    shown = len({c for c, _ in rows})
    used = len({r[0] for r in result.tracer.records})
    return f"; {shown} of {used} cores shown" if shown < used else ""


def memory_panels(result, cores=None) -> list[tuple[int, list[str]]]:
    """(core index, buffers drawn) of each panel of the memory figure, every buffer the core
    used. By default the first core of each type that holds buffers, and a further core of a
    type only where it used a buffer those before it did not."""
    labels = result.stats.get("core_labels", [])
    used: dict[int, set] = {}
    for core, _time, buffer, _delta, _label in result.tracer.marks:
        used.setdefault(core, set()).add(buffer)
    if cores is None:
        covered, cores = set(), []
        for c in sorted(used):
            pairs = {(core_type(labels[c]), b) for b in used[c]}
            if not pairs <= covered:
                covered |= pairs
                cores.append(c)
        cores.sort(key=lambda c: (_type_rank(core_type(labels[c])), c))
    order = {b: i for i, b in enumerate(BUFFER_ORDER)}
    return [(c, sorted(used.get(c, ()), key=lambda b: order.get(b, len(order))))
            for c in cores]


# flags (zero-length, drawn 0.3 cycles wide) under the work they sit between
DRAW_ORDER = ("wait", "set", "scalar", "gm", "local", "vector", "cube", "other")
LEGEND = {"gm": "GM move", "local": "local move", "vector": "vector", "cube": "cube (mmad)",
          "wait": "wait_flag: idle until another pipe's set_flag", "set": "set_flag",
          "scalar": "scalar", "other": "other"}


def pipeline(result, path, cores=None, max_cores: int = 4, x_max_us: float | None = None) -> str:
    """Gantt chart of the pipes of ``cores``, time in microseconds.

    cores: core indices to draw (``result.stats["core_labels"]`` names them); default
        ``shown_cores``: up to ``max_cores`` cores that ran, at least one of every core type.
        The title says how many of the cores that ran are shown ("4 of 48 cores shown").
    x_max_us: the time axis' right end, so that two runs' charts share one scale (lesson 3's
        single and double buffering); default the run's own length.

    One row per pipe that ran anything; each instruction a bar coloured by kind. A grey
    ``wait`` bar is a ``wait_flag`` holding its pipe until another pipe's ``set_flag``: on
    PIPE-M after an ``mmad``, M waiting for the next L0A/L0B tiles (MTE1) or for L0C to be
    freed (FIX, or V on the 910)."""
    _need_trace(result)
    labels = result.stats.get("core_labels", [])
    rows = pipeline_rows(result, cores, max_cores)
    index = {row: i for i, row in enumerate(rows)}
    us = 1e6 / result.chip.clock_hz
    bars: dict = {}
    for core, pipe, inst, _issue, start, end in result.tracer.records:
        row = index.get((core, pipe))
        if row is not None:
            bars.setdefault((row, _kind(inst)), []).append(
                (start * us, max(end - start, 0.3) * us))
    bars = dict(sorted(bars.items(), key=lambda kv: DRAW_ORDER.index(kv[0][1])))
    fig, ax = plt.subplots(figsize=(12, 0.32 * len(rows) + 1.5))
    _lanes(ax, bars, COLOURS.get, 0.8)
    ax.set_yticks(range(len(rows)), [f"{labels[c]} PIPE-{p}" for c, p in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    ax.set_xlim(0, x_max_us if x_max_us is not None else result.cycles * us * 1.01)
    ax.set_title(f"pipeline: {result.chip.name}, {result.cycles * us:,.2f} us"
                 f"{_cores_shown(result, rows)}")
    kinds = [k for k in COLOURS if any(key == k for _, key in bars)]
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[k]) for k in kinds]
    ax.legend(handles, [LEGEND[k] for k in kinds], fontsize=7, loc="upper left",
              bbox_to_anchor=(1.005, 1))      # beside the lanes, not over them
    return _save(fig, path)


def memory(result, path, cores=None, core: int | None = None) -> str:
    """Live bytes per buffer over time, with capacity lines: one panel per core of
    ``memory_panels`` (default: the first core of each type the run used; ``core``: that one
    core alone)."""
    _need_trace(result)
    us = 1e6 / result.chip.clock_hz
    timeline = memory_timeline(result.tracer)
    panels = memory_panels(result, [core] if core is not None else cores)
    fig, axes = plt.subplots(len(panels) or 1, 1, figsize=(10, 3.2 * max(len(panels), 1) + 0.6),
                             sharex=True, squeeze=False)
    labels = result.stats.get("core_labels", [])
    for ax, (core, buffers) in zip(axes[:, 0], panels, strict=False):
        _memory_panel(ax, result, [(b, timeline[(core, b)]) for b in buffers], us)
        name = labels[core] if core < len(labels) else f"core {core}"
        ax.set_title(f"buffer occupancy: {name} on {result.chip.name}", fontsize=9)
        ax.set_ylabel("bytes")
    axes[-1, 0].set_xlabel("time (us)")
    return _save(fig, path)


def _memory_panel(ax, result, series, us) -> None:
    """One core's buffers: a step line of live bytes and a dashed capacity line each."""
    end = result.cycles * us
    for i, (buf, points) in enumerate(series):
        xs = [0.0] + [t * us for t, _ in points] + [end]
        ys = [0] + [b for _, b in points] + [points[-1][1]]
        colour = f"C{i}"
        ax.step(xs, ys, where="post", label=f"{buf} live", color=colour)
        capacity = getattr(result.chip, SIZE_KEYS.get(buf, "ub_bytes"))
        ax.axhline(capacity, color=colour, linestyle="--", linewidth=0.8,
                   label=f"{buf} capacity {capacity // 1024} KB")
    if series:
        ax.legend(fontsize=7, loc="upper right")


def critical_path(result, path, out, max_cores: int = 4) -> str:
    """The pipeline Gantt of the cores the critical path spends most time on (all their
    instructions in grey) with the path drawn over it in red; ``path`` is
    ``result.critical_path()``."""
    _need_trace(result)
    from npusim.engine.explain import kernel_runs

    us = 1e6 / result.chip.clock_hz
    labels = result.stats.get("core_labels", [])
    segments, t, starts = [], 0.0, []
    for share, (_name, gap, launch, run) in zip(path.kernels, kernel_runs(result), strict=True):
        t += gap
        starts.append(t)
        segments += _path_segments(share, run, t + launch)
        t += launch + run.cycles
    weight: dict = {}
    for label, _pipe, _x, w in segments:
        weight[label] = weight.get(label, 0.0) + w
    shown = sorted(weight, key=lambda c: -weight[c])[:max_cores]
    shown.sort(key=labels.index)
    pipes = result.stats.get("core_pipes", {})
    busy = {(labels[r[0]], r[1]) for r in result.tracer.records}
    rows = [(c, p) for c in shown for p in PIPE_ORDER
            if p in pipes.get(c, PIPE_ORDER) and (c, p) in busy]
    index = {row: i for i, row in enumerate(rows)}
    fig, ax = plt.subplots(figsize=(12, 0.32 * len(rows) + 1.8))
    grey: dict = {}
    for core, pipe, _inst, _issue, start, end in result.tracer.records:
        row = index.get((labels[core], pipe))
        if row is not None:
            grey.setdefault((row, 0), []).append((start * us, max(end - start, 0.3) * us))
    _lanes(ax, grey, lambda _: "#cccccc", 0.6)
    red: dict = {}
    for label, pipe, x, w in segments:
        row = index.get((label, pipe))
        if row is not None:
            red.setdefault((row, 0), []).append((x * us, max(w, 0.3) * us))
    _lanes(ax, red, lambda _: "#d62728", 0.8)
    for x in starts[1:]:
        ax.axvline(x * us, color="#555555", lw=0.6, ls=":")
    ax.set_yticks(range(len(rows)), [f"{c} PIPE-{p}" for c, p in rows], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (us)")
    what, _cycles, share = path.largest()
    ax.set_title(f"critical path: {result.chip.name}, {result.cycles * us:,.2f} us; largest "
                 f"share {what} {share:.0%}")
    ax.legend([plt.Rectangle((0, 0), 1, 1, color=c) for c in ("#d62728", "#cccccc")],
              ["on the critical path", "other instructions"], fontsize=7, loc="upper right")
    return _save(fig, out)


def _path_segments(share, run, offset: float) -> list:
    """[(core label, pipe, start cycle, cycles)] of a kernel's path steps on instructions."""
    labels = run.stats.get("core_labels", [])
    return [(labels[step.core], step.pipe, offset + step.until - step.cycles, step.cycles)
            for step in share.path.steps if step.record >= 0]
