"""What a run returns: outputs, cycles, time, tiling, workspace and statistics.

``stats`` is a plain dict (it ``json.dumps``): per core and pipe busy cycles and utilisation,
instruction counts by name, bytes moved per path, bytes allocated per buffer (the peak of
``init_buffer``, per core and the maximum over cores; and, for timed runs, the peak of bytes
live at once from the alloc/free marks) and GM traffic (HBM bytes, L2 hits).
"""

from collections import Counter
from dataclasses import dataclass, field
from operator import itemgetter

from npusim.isa.base import Instr


@dataclass
class Result:
    """The result of one operator or kernel run."""

    outputs: dict
    cycles: int
    chip: object
    mode: str
    tiling: object = None
    workspace_bytes: int = 0
    stats: dict = field(default_factory=dict)
    tracer: object = None
    parts: list = field(default_factory=list, repr=False)   # an operator's KernelRuns
    # trace="path": each kernel's critical-path share, taken as it ended (no records kept)
    kernel_paths: list | None = field(default=None, repr=False)

    def critical_path(self):
        """The run's critical path (``npusim/engine/explain.py``): per kernel, its cycles
        attributed to pipes' work and kinds of wait; they sum to ``cycles``. Needs a timed run
        with ``trace=True``."""
        from npusim.engine.explain import critical_path
        from npusim.engine.gc_pause import gc_paused

        with gc_paused():
            return critical_path(self)

    def explain(self, what_ifs: bool = True):
        """The attribution of the critical path and, with ``what_ifs``, the estimated cycles
        with each pipe on the path 2x faster or free and HBM 2x (``npusim/engine/explain.py``);
        ``str()`` of it is the table ``npusim run --explain`` prints."""
        from npusim.engine.explain_report import explain

        return explain(self, what_ifs)

    def dependency_graph(self, kernel: int = 0):
        """Kernel ``kernel``'s dependency graph as a ``networkx.DiGraph``
        (``npusim/engine/depgraph.py``)."""
        from npusim.engine.depgraph import RunGraph
        from npusim.engine.explain import kernel_runs

        runs = kernel_runs(self)
        if not isinstance(kernel, int) or not 0 <= kernel < len(runs):
            from npusim.errors import NpusimError
            raise NpusimError(f"kernel = {kernel!r}: this run has {len(runs)} kernel(s), "
                              f"allowed 0 to {len(runs) - 1}")
        run = runs[kernel][3]
        return RunGraph(run.tracer, run.chip).to_networkx()

    @property
    def time_us(self) -> float:
        return self.cycles / self.chip.clock_hz * 1e6

    def __repr__(self) -> str:
        outs = ", ".join(f"{k}: {v.dtype} {tuple(v.shape)}" if v is not None else f"{k}: None"
                         for k, v in self.outputs.items())
        timing = (f"{self.cycles:,.0f} cycles = {self.time_us:.2f} us" if self.mode == "timed"
                  else "no timing")
        name = type(self.tiling).__name__ if self.tiling is not None else "no tiling"
        return (f"Result({self.chip.name}, {self.mode}: {timing}; outputs {{{outs}}}; "
                f"{self.stats.get('instructions', 0):,} instructions on "
                f"{self.stats.get('cores', 0)} cores; {name}; workspace "
                f"{self.workspace_bytes:,} bytes)")

    def write_trace(self, path) -> str:
        """Write a Chrome trace event JSON (Perfetto, chrome://tracing); return the path."""
        from npusim.engine.trace_export import write_chrome_trace

        return write_chrome_trace(self, path)

    def line_trace(self, core: int = 0) -> str:
        """One text line per instruction of ``core``: cycles, pipe, and why it waited."""
        from npusim.engine.trace_export import line_trace

        return line_trace(self, core)

    def summary(self) -> str:
        """A readable table of the run: time, pipes, GM traffic by path, the memory roofline,
        and per buffer the bytes ``init_buffer`` carved (``stats["peak_bytes"]``) beside the
        most live at once (``stats["peak_live_bytes"]``, with the trace)."""
        s = self.stats
        lines = [f"chip {self.chip.name}  mode {self.mode}  cycles {self.cycles}  "
                 f"time {self.time_us:.3f} us  instructions {s.get('instructions', 0)}"]
        if self.mode == "timed":
            lines.append(self._start_up_text())
        if self.tiling is not None:
            lines.append(f"tiling {self.tiling}")
        util = s.get("pipe_utilisation", {})
        if util:
            lines.append("pipe utilisation (mean over cores): "
                         + "  ".join(f"{p} {u:.0%}" for p, u in util.items()))
        for path, nbytes in s.get("bytes_by_path", {}).items():
            lines.append(f"  {path:<22} {nbytes:>14,d} bytes")
        if self.cycles:
            lines.append(self._roofline_text())
        live = s.get("peak_live_bytes", {})
        for buf, nbytes in s.get("peak_bytes", {}).items():
            most = (f"  live at most {live[buf]:>11,d} bytes" if buf in live
                    else "  (live bytes: run with trace on)")
            lines.append(f"  {buf:<4} carved by init_buffer {nbytes:>11,d} bytes{most}")
        return "\n".join(lines)

    def _roofline_text(self) -> str:
        """The memory roofline: the run's GM bytes at the chip's HBM bandwidth."""
        gm = sum(n for path, n in self.stats.get("bytes_by_path", {}).items() if "GM" in path)
        bound_us = gm / self.chip.hbm_bytes_per_s * 1e6
        return (f"roofline (memory): {gm:,} GM bytes at {self.chip.hbm_bytes_per_s / 1e12:.2f} "
                f"TB/s take {bound_us:.3f} us; the run reached {bound_us / self.time_us:.0%} "
                "of it (compute bounds: npusim run's report, which knows the flops)")

    def _start_up_text(self) -> str:
        kernels = self.stats.get("kernels")
        if kernels:
            return ("start-up: included (each kernel's start-up on its cores and the gaps "
                    "between kernels, as msprof's task durations count them)")
        return ("start-up: none charged (a bare launch() times the kernel's instructions only; "
                "an operator adds each kernel's start-up, [launch] kernel_start_cycles in the "
                "chip model, so compare lesson cycles with operator cycles with care)")


def collect_stats(chip, specs, tracer, cycles: float, engine=None) -> dict:
    """Build the stats dict from the recorded streams and, for a timed run, the engine."""
    counts, by_path, instructions = Counter(), Counter(), 0
    left_out = Counter()
    for spec in specs:
        by_type = Counter(map(type, spec.stream))
        movers = set()
        for cls, n in by_type.items():
            if cls.kind == "mark":
                continue
            if cls.kind == "skip":      # a fast run's steady skips: what they left out
                _add_left_out(spec.stream, left_out)
                continue
            instructions += n
            counts[cls.name] += n
            if cls.path is not Instr.path:   # a data move: bytes per path, instance by instance
                movers.add(cls)
        if movers:
            _add_moved_bytes(spec.stream, movers, by_path)
    peak: dict[str, int] = {}
    for spec in specs:
        for buf, used in spec.used_bytes.items():
            peak[buf] = max(peak.get(buf, 0), used)
    if left_out:
        counts.update(left_out)
        instructions += sum(left_out.values())
    stats = {"cores": len(specs), "core_labels": [s.label for s in specs],
             "core_pipes": {s.label: list(s.pipes) for s in specs},
             "instructions": instructions,
             "instruction_counts": dict(sorted(counts.items())),
             "bytes_by_path": dict(sorted(by_path.items())), "peak_bytes": peak,
             "peak_bytes_per_core": {s.label: dict(s.used_bytes) for s in specs}}
    if left_out:     # counted above; their bytes by path are not
        stats["fast"] = {"instructions_left_out": sum(left_out.values())}
    if engine is not None:
        stats.update(_timed_stats(engine, cycles))
    if tracer is not None:
        stats["peak_live_bytes"] = _peak_live(tracer, specs)
    return stats


def _add_left_out(stream, left_out: Counter) -> None:
    """The instructions a fast run's steady skips left out of ``stream``, by name (the
    scalar's skip carries them: isa/steady.py)."""
    for inst in stream:
        if inst.kind == "skip" and inst.pipe == "S":
            left_out.update(inst.skipped)


def _add_moved_bytes(stream, movers: set, by_path: Counter) -> None:
    """Bytes per path of the stream's moves. An object issued several times (the DSL re-issues
    repeated instructions) is asked for its path and bytes once; integer bytes are multiplied
    by the issue count, other bytes added issue by issue in stream order."""
    moves = [inst for inst in stream if type(inst) in movers]
    ids = list(map(id, moves))
    described = {key: (inst.path(), inst.moved_bytes())
                 for key, inst in dict(zip(ids, moves, strict=True)).items()}
    if all(type(n) is int for _, n in described.values()):
        for key, n in Counter(ids).items():
            path, nbytes = described[key]
            if path:
                by_path[path] += nbytes * n
        return
    for key in ids:
        path, nbytes = described[key]
        if path:
            by_path[path] += nbytes


def _peak_live(tracer, specs=None) -> dict:
    """Per buffer, the most bytes live at once on any core (from the alloc/free marks).

    The same figure as the maximum of ``trace_export.memory_timeline``'s series, without
    building them: the marks in time order (stable), a running sum per (core, buffer)."""
    live: dict = {}
    peak: dict[str, int] = {}
    for core, _time, buffer, delta, _label in sorted(tracer.marks, key=itemgetter(1)):
        key = (core, buffer)
        now = live[key] = live.get(key, 0) + delta
        if now > peak.setdefault(buffer, 0):
            peak[buffer] = now
    return peak


def _timed_stats(engine, cycles: float) -> dict:
    per_core, totals, seen = {}, Counter(), Counter()
    for core in engine.cores:
        pipes = {}
        for name, pipe in core.pipes.items():
            if name == "S":
                continue
            util = pipe.busy_cycles / cycles if cycles else 0.0
            pipes[name] = {"busy_cycles": round(pipe.busy_cycles, 3), "utilisation": util}
            totals[name] += util
            seen[name] += 1
        per_core[core.label] = pipes
    return {"per_core": per_core,
            "pipe_utilisation": {p: totals[p] / seen[p] for p in totals},
            "gm": {"hbm_bytes": engine.bw.hbm_bytes, "l2_hit_bytes": engine.bw.l2_hit_bytes}}
