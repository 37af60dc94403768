"""The kernels of one operator, run one after another on one stream and one GM.

An aclnn operator is often several kernels: l0op::Contiguous copies, casts, TransData format
conversions, MemSet zeroing of atomic-add outputs, then the compute kernel. ``OpRun`` launches
them in order on a shared ``GlobalMemory`` and folds their results into one ``Result``.

Modelled: each kernel's own cycles, plus the fixed costs of ``npusim/engine/kernel_costs.py`` from
the chip model: the start-up of each kernel on its cores, its cores' tiling-data read from GM (in
the kernel's own cycles), and the stream's gap between two kernels. The operator's cycles are
the sum of its kernels' task durations (start-up + own cycles) and of the gaps between them.
The trace places each kernel after the one before, with a ``stream gap`` and a ``launch`` slice
on PIPE-S of its cores; ``stats["kernels"]`` lists per kernel its name (msprof's Op Name), its
``op_type`` (msprof's OP Type), ``task_type``, ``impl`` (Ascend C or TBE), cores, blocks,
``cycles`` (task duration), ``launch_cycles``, ``body_cycles``, ``wait_cycles`` (the gap
before it), ``tiling_bytes``, ``start_cycle``, instruction count and ``atomic_add_bytes``
(bytes it adds into GM atomically: such a kernel follows the MemSet or ZerosLike kernel that
zeroes its target).

Not modelled: the host's time (tiling functions, enqueueing), which overlaps the device when
kernels are queued ahead; L2 contents carried from one kernel to the next (each starts cold).
"""

from collections import Counter
from dataclasses import dataclass
from functools import partial

import numpy as np

from npusim.chip import load_chip
from npusim.engine import launch_memo
from npusim.engine.fast import fast_launch
from npusim.engine.kernel_costs import (
    IMPLS,
    WORD_BYTES,
    KernelStart,
    StreamGap,
    start_cycles,
    tiling_words,
    with_tiling_read,
)
from npusim.engine.launch import check_options, gc_paused, launch
from npusim.engine.memory import GlobalMemory
from npusim.engine.result import Result
from npusim.engine.trace import LazyTracer
from npusim.errors import NpusimError

TASK_TYPES = {"aiv": "AI_VECTOR_CORE", "aic": "AI_CORE", "mix": "MIX_AIC"}


@dataclass
class KernelRun:
    """One kernel of the sequence: its Result and its fixed costs (cycles)."""

    name: str
    op_type: str
    task_type: str
    blocks: int
    result: Result
    launch_cycles: int
    wait_cycles: int
    tiling_bytes: int
    impl: str = "ascendc"
    start_cycle: int = 0

    @property
    def cycles(self) -> int:
        """The kernel's task duration: start-up on its cores, then its own cycles."""
        return self.launch_cycles + self.result.cycles


class OpRun:
    """Launch an operator's kernels in order and combine them into one ``Result``."""

    def __init__(self, chip, *, mode: str = "timed", numerics: bool = True, trace: bool = True,
                 sanitize: bool = True, jitter: tuple | None = None):
        self.chip = load_chip(chip)
        check_options(mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                      jitter=jitter)
        self.gm = GlobalMemory(self.chip.hbm_bytes, self.chip.name)
        self.mode, self.numerics = mode, numerics
        # trace="path": each kernel is traced, its critical-path share taken as it ends and its
        # records dropped, so the run holds one kernel's trace at a time (npusim predict)
        self.path_only = isinstance(trace, str) and mode == "timed"
        self.options = dict(trace="path" if self.path_only else bool(trace),
                            sanitize=sanitize, jitter=jitter)
        self.parts: list[KernelRun] = []
        self.kernel_paths: list = []

    def launch(self, kernel_cls, *, block_dim: int, args: dict, name: str = "",
               op_type: str = "", impl: str = "ascendc") -> Result:
        """Run one kernel on the shared GM after the ones before it; return its own Result.
        ``name`` is the kernel's instance name (msprof's Op Name), ``op_type`` its OP Type
        (default: ``name`` up to a parenthesis); ``impl`` how CANN builds it ("ascendc",
        "tbe" or "tik": the start-up it pays, ``npusim/engine/kernel_costs.py``)."""
        if impl not in IMPLS:
            raise NpusimError(f"launch {name or kernel_cls.__name__}: impl = {impl!r}; "
                              f"allowed {', '.join(IMPLS)}")
        name = name or kernel_cls.__name__
        words = tiling_words(args)
        tiling = self.gm.tensor(f"{name}.tiling", np.int64, len(words),
                                np.array(words, np.uint64).view(np.int64))
        cls = with_tiling_read(kernel_cls, tiling, len(words), self.chip.tiling_line_bytes)
        key = self._memo_key(kernel_cls, block_dim, args, (name, op_type, impl))
        kept = launch_memo.lookup(key)
        if kept is not None and self.path_only and kept[2] is None:
            kept = None                 # kept by a launch without a trace: no path to share
        if kept is None:
            result = launch(cls, chip=self.chip, block_dim=block_dim, gm=self.gm, args=args,
                            outputs={}, mode=self.mode, numerics=self.numerics, **self.options)
        else:                       # the same launch ran before in this study
            self.gm.check_fits(self.chip)
            stats = kept[1] | {"wall_seconds": {"record": 0.0, "run": 0.0, "total": 0.0}}
            if not self.options["trace"]:          # what only a trace gives
                stats.pop("peak_live_bytes", None)
            result = Result(outputs={}, cycles=kept[0], chip=self.chip, mode=self.mode,
                            stats=stats)
        timed = self.mode == "timed"
        core_type = kernel_cls.core_type if self.chip.separated else "aic"
        self.parts.append(KernelRun(
            name, op_type or name.split("(")[0], TASK_TYPES[core_type], int(block_dim), result,
            start_cycles(self.chip, block_dim, impl) if timed else 0,
            self.chip.kernel_gap_cycles if timed and self.parts else 0,
            len(words) * WORD_BYTES, impl))
        own = kept[2] if kept is not None else None
        if self.path_only:
            own = self._keep_path_only(self.parts[-1], own)
        if kept is None:
            launch_memo.keep(key, (result.cycles, result.stats, own))
        return result

    def _memo_key(self, kernel_cls, block_dim: int, args: dict, labels: tuple) -> str | None:
        """The launch's key in the study's memo (``npusim/engine/launch_memo.py``), or None
        when it must run: numerics, a full trace or jitter."""
        opts = self.options
        if self.mode != "timed" or self.numerics or opts["jitter"] is not None \
                or opts["trace"] not in ("path", False) or not launch_memo.active():
            return None
        fast = fast_launch(mode=self.mode, numerics=self.numerics, sanitize=opts["sanitize"],
                           jitter=None, eager=kernel_cls.reads_data)
        return launch_memo.launch_key(kernel_cls, self.chip, block_dim, args, self.gm, labels,
                                      (bool(opts["sanitize"]), fast))

    def _keep_path_only(self, part: KernelRun, own: tuple | None):
        """Take the kernel's critical-path share now (from ``own``, the same launch's path
        taken before, when given) and drop its records; return its own path."""
        from npusim.engine.explain import run_path, share_of
        from npusim.engine.gc_pause import gc_paused

        with gc_paused():
            if own is None:
                own = run_path(part.name, part.result, take_records=True)
            self.kernel_paths.append(share_of(part.name, part.wait_cycles,
                                              part.launch_cycles, part.result.cycles, own))
        part.result.tracer = None
        return own

    def result(self, outputs: dict, *, tiling=None, workspace_bytes: int = 0) -> Result:
        """The operator's Result. ``outputs`` maps each aclnn output name to
        ``(GlobalTensor, shape)`` to read back, or to None when the operator does not produce it."""
        read = {}
        for name, spec in outputs.items():
            if spec is None:
                read[name] = None
                continue
            tensor, shape = spec
            read[name] = self.gm.read_back(tensor, shape, copy=self.numerics)
        cycles = 0
        for part in self.parts:
            part.start_cycle = cycles + part.wait_cycles
            cycles = part.start_cycle + part.cycles
        with gc_paused():   # the merged trace is a tuple per instruction (npusim/engine/launch.py)
            tracer = self._merged_tracer()
            stats = merge_stats(self.parts, cycles, tracer)
        return Result(outputs=read, cycles=cycles, chip=self.chip, mode=self.mode, tiling=tiling,
                      workspace_bytes=workspace_bytes, stats=stats, tracer=tracer,
                      parts=list(self.parts) if tracer is not None else [],
                      kernel_paths=list(self.kernel_paths) if self.path_only else None)

    def _merged_tracer(self):
        if self.mode != "timed" or not self.options["trace"] or self.path_only:
            return None
        return LazyTracer(partial(_merge_traces, list(self.parts)))   # picklable, unlike a lambda


def _merge_traces(parts) -> tuple[list, list]:
    """The kernels' records and marks on one time line and one set of core indices."""
    records, marks, labels = [], [], _labels(parts)
    for part in parts:
        r = part.result
        index = [labels.index(label) for label in r.stats["core_labels"]]
        records += _fixed_slices(part, index)
        offset = part.start_cycle + part.launch_cycles
        records += [(index[c], pipe, inst, i + offset, s + offset, e + offset)
                    for c, pipe, inst, i, s, e in r.tracer.records]
        marks += [(index[c], t + offset, buf, delta, label)
                  for c, t, buf, delta, label in r.tracer.marks]
        marks += _release_marks(r.tracer.marks, index, offset + r.cycles)
    return records, marks


def _fixed_slices(part: KernelRun, index: list) -> list:
    """The ``stream gap`` and ``launch`` slices of a kernel on PIPE-S of each of its cores."""
    start, records = part.start_cycle, []
    gap = StreamGap(kernel=part.name, cycles=part.wait_cycles)
    launch_slice = KernelStart(kernel=part.name, cycles=part.launch_cycles)
    for core in index:
        if part.wait_cycles:
            g0 = start - part.wait_cycles
            records.append((core, "S", gap, g0, g0, start))
        if part.launch_cycles:
            records.append((core, "S", launch_slice, start, start,
                            start + part.launch_cycles))
    return records


def _release_marks(marks, index, end) -> list:
    """A kernel's buffers are released when it ends (what it never freed: its TBufs and the
    buffers still allocated at exit), so the next kernel starts from empty buffers. One mark
    per queue or TBuf, under its own label, so each one's live bytes end at zero."""
    live = Counter()
    for c, _t, buf, delta, label in marks:
        live[(c, buf, label)] += delta
    return [(index[c], end, buf, -n, label) for (c, buf, label), n in live.items() if n]


def _labels(parts) -> list[str]:
    """Every core any kernel used, in order of first use."""
    labels: list[str] = []
    for part in parts:
        labels += [label for label in part.result.stats["core_labels"] if label not in labels]
    return labels


def merge_stats(parts, cycles: int, tracer) -> dict:
    """The stats of kernels run back to back, as if one run: sums, maxima, utilisation over the
    whole span, and ``kernels`` with each kernel's own figures."""
    labels = _labels(parts)
    counts, by_path, peak, pipes, per_core_peak = Counter(), Counter(), {}, {}, {}
    gm = Counter()
    for part in parts:
        s = part.result.stats
        counts.update(s["instruction_counts"])
        by_path.update(s["bytes_by_path"])
        for buf, n in s["peak_bytes"].items():
            peak[buf] = max(peak.get(buf, 0), n)
        for label, used in s["peak_bytes_per_core"].items():
            mine = per_core_peak.setdefault(label, {})
            for buf, n in used.items():
                mine[buf] = max(mine.get(buf, 0), n)
        for label in s["core_labels"]:
            pipes.setdefault(label, [])
            pipes[label] += [p for p in s["core_pipes"][label] if p not in pipes[label]]
        gm.update(s.get("gm", {}))
    stats = {"cores": len(labels), "core_labels": labels, "core_pipes": pipes,
             "instructions": sum(counts.values()),
             "instruction_counts": dict(sorted(counts.items())),
             "bytes_by_path": dict(sorted(by_path.items())), "peak_bytes": peak,
             "peak_bytes_per_core": per_core_peak,
             "kernels": [_kernel_entry(part) for part in parts],
             "wall_seconds": {"total": sum(p.result.stats["wall_seconds"]["total"]
                                           for p in parts)}}
    if parts and "per_core" in parts[0].result.stats:
        stats.update(_merged_utilisation(parts, cycles))
        stats["gm"] = dict(gm)
    if tracer is not None:
        stats["peak_live_bytes"] = _merged_peak_live(parts)
    return stats


def _merged_peak_live(parts) -> dict:
    """The merged trace's peak live bytes per buffer without merging it: each kernel starts
    from empty buffers (its predecessor's release marks) and kernels do not overlap in time,
    so the peak is the largest of the kernels' own."""
    peak: dict[str, int] = {}
    for part in parts:
        for buf, n in part.result.stats.get("peak_live_bytes", {}).items():
            peak[buf] = max(peak.get(buf, 0), n)
    return peak


def _kernel_entry(part: KernelRun) -> dict:
    """A kernel's figures: ``cycles`` is its task duration (``launch_cycles`` of start-up
    and ``body_cycles`` of its own run, which include the tiling read), ``wait_cycles`` the
    stream's gap before it, ``start_cycle`` where its task starts in the operator's run."""
    r = part.result
    entry = {"name": part.name, "op_type": part.op_type, "task_type": part.task_type,
             "impl": part.impl, "cores": r.stats["cores"], "blocks": part.blocks,
             "cycles": part.cycles,
             "launch_cycles": part.launch_cycles, "body_cycles": r.cycles,
             "wait_cycles": part.wait_cycles, "tiling_bytes": part.tiling_bytes,
             "start_cycle": part.start_cycle, "instructions": r.stats["instructions"],
             "atomic_add_bytes": sum(n for path, n in r.stats["bytes_by_path"].items()
                                     if "atomic add" in path)}
    if "peak_live_bytes" in r.stats:
        entry["peak_live_bytes"] = r.stats["peak_live_bytes"]
    if "fast" in r.stats:       # a fast run's steady skips (npusim/dsl/steady.py)
        entry["fast"] = r.stats["fast"]
    return entry


def _merged_utilisation(parts, cycles: int) -> dict:
    busy: dict[str, Counter] = {}
    for part in parts:
        for label, pipes in part.result.stats["per_core"].items():
            mine = busy.setdefault(label, Counter())
            for pipe, figures in pipes.items():
                mine[pipe] += figures["busy_cycles"]
    per_core, totals, seen = {}, Counter(), Counter()
    for label, pipes in busy.items():
        per_core[label] = {}
        for pipe, b in pipes.items():
            util = b / cycles if cycles else 0.0
            per_core[label][pipe] = {"busy_cycles": round(b, 3), "utilisation": util}
            totals[pipe] += util
            seen[pipe] += 1
    return {"per_core": per_core, "pipe_utilisation": {p: totals[p] / seen[p] for p in totals}}
