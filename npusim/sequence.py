"""The kernels of one operator, run one after another on one stream and one GM.

An aclnn operator is often several kernels: l0op::Contiguous copies, casts, TransData format
conversions, then the compute kernel. ``OpRun`` launches them in order on a shared
``GlobalMemory`` and folds their results into one ``Result``: cycles add up (kernel k+1 starts
when kernel k ends), the trace places each kernel after the one before on the cores it used, and
``stats["kernels"]`` lists each kernel's name, cores, cycles and instruction count.

Modelled: the kernels' own cycles, back to back. Not modelled: the host's launch overhead
between kernels, and L2 contents carried from one kernel to the next (each starts cold).
"""

from collections import Counter

from npusim.chip import load_chip
from npusim.launch import check_options, gc_paused, launch
from npusim.memory import GlobalMemory
from npusim.result import Result
from npusim.trace import Tracer


class OpRun:
    """Launch an operator's kernels in order and combine them into one ``Result``."""

    def __init__(self, chip, *, mode: str = "timed", numerics: bool = True, trace: bool = True,
                 sanitize: bool = True, jitter: tuple | None = None):
        self.chip = load_chip(chip)
        check_options(mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                      jitter=jitter)
        self.gm = GlobalMemory(self.chip.hbm_bytes, self.chip.name)
        self.mode, self.numerics = mode, numerics
        self.options = dict(trace=trace, sanitize=sanitize, jitter=jitter)
        self.parts: list[tuple[str, Result]] = []

    def launch(self, kernel_cls, *, block_dim: int, args: dict, name: str = "") -> Result:
        """Run one kernel on the shared GM after the ones before it; return its own Result."""
        result = launch(kernel_cls, chip=self.chip, block_dim=block_dim, gm=self.gm, args=args,
                        outputs={}, mode=self.mode, numerics=self.numerics, **self.options)
        self.parts.append((name or kernel_cls.__name__, result))
        return result

    def result(self, outputs: dict, *, tiling=None, workspace_bytes: int = 0) -> Result:
        """The operator's Result. ``outputs`` maps each aclnn output name to
        ``(GlobalTensor, shape)`` to read back, or to None when the operator does not produce it."""
        read = {}
        for name, spec in outputs.items():
            if spec is None:
                read[name] = None
                continue
            tensor, shape = spec
            count = 1
            for d in shape:
                count *= int(d)
            self.gm.load_inputs()
            read[name] = tensor.array(count).reshape(shape).copy()
        cycles = sum(r.cycles for _, r in self.parts)
        with gc_paused():   # the merged trace is a tuple per instruction (npusim/launch.py)
            tracer = self._merged_tracer()
            stats = merge_stats(self.parts, cycles, tracer)
        return Result(outputs=read, cycles=cycles, chip=self.chip, mode=self.mode, tiling=tiling,
                      workspace_bytes=workspace_bytes, stats=stats, tracer=tracer)

    def _merged_tracer(self):
        if self.mode != "timed" or not self.options["trace"]:
            return None
        merged, labels, offset = Tracer(), _labels(self.parts), 0
        for _name, r in self.parts:
            index = [labels.index(label) for label in r.stats["core_labels"]]
            merged.records += [(index[c], pipe, inst, i + offset, s + offset, e + offset)
                               for c, pipe, inst, i, s, e in r.tracer.records]
            merged.marks += [(index[c], t + offset, buf, delta, label)
                             for c, t, buf, delta, label in r.tracer.marks]
            offset += r.cycles
            merged.marks += _release_marks(r.tracer.marks, index, offset)
        return merged


def _release_marks(marks, index, end) -> list:
    """A kernel's buffers are released when it ends (what it never freed: its TBufs and the
    buffers still allocated at exit), so the next kernel starts from empty buffers."""
    live = Counter()
    for c, _t, buf, delta, _label in marks:
        live[(c, buf)] += delta
    return [(index[c], end, buf, -n, "kernel end") for (c, buf), n in live.items() if n]


def _labels(parts) -> list[str]:
    """Every core any kernel used, in order of first use."""
    labels: list[str] = []
    for _name, r in parts:
        labels += [label for label in r.stats["core_labels"] if label not in labels]
    return labels


def merge_stats(parts, cycles: int, tracer) -> dict:
    """The stats of kernels run back to back, as if one run: sums, maxima, utilisation over the
    whole span, and ``kernels`` with each kernel's own figures."""
    labels = _labels(parts)
    counts, by_path, peak, pipes, per_core_peak = Counter(), Counter(), {}, {}, {}
    gm = Counter()
    for _name, r in parts:
        s = r.stats
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
             "kernels": [_kernel_entry(name, r) for name, r in parts],
             "wall_seconds": {"total": sum(r.stats["wall_seconds"]["total"] for _, r in parts)}}
    if parts and "per_core" in parts[0][1].stats:
        stats.update(_merged_utilisation(parts, cycles))
        stats["gm"] = dict(gm)
    if tracer is not None:
        from npusim.result import _peak_live

        stats["peak_live_bytes"] = _peak_live(tracer, None)
    return stats


def _kernel_entry(name: str, r) -> dict:
    entry = {"name": name, "cores": r.stats["cores"], "cycles": r.cycles,
             "instructions": r.stats["instructions"]}
    if "peak_live_bytes" in r.stats:
        entry["peak_live_bytes"] = r.stats["peak_live_bytes"]
    return entry


def _merged_utilisation(parts, cycles: int) -> dict:
    busy: dict[str, Counter] = {}
    for _name, r in parts:
        for label, pipes in r.stats["per_core"].items():
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
