"""``result.explain()``: the critical path's attribution and the what-ifs, as data and as text.

The text is what ``npusim run ... --explain`` prints: the share of the run's cycles each pipe's
work and each kind of wait has on the critical path (per kernel for an operator of several),
the edges the path walked, and the estimated time with each pipe on the path 2x faster or
free and HBM 2x (``npusim/engine/explain.py``).
"""

from dataclasses import dataclass, field

from npusim.engine.explain import critical_path, what_ifs
from npusim.engine.gc_pause import gc_paused

TOP_KERNELS = 6    # kernels listed by name; the rest are summed in one line


@dataclass
class Explanation:
    """The critical path of a run (``path``) and its what-ifs."""

    path: object
    what_ifs: list = field(default_factory=list)
    clock_hz: float = 1.0

    def shares(self) -> list:
        """[(what, cycles, share of the run)], largest first."""
        total = self.path.cycles or 1
        return sorted(((w, c, c / total) for w, c in self.path.by_what.items() if c > 0),
                      key=lambda x: -x[1])

    def bound(self) -> str:
        """What holds the run: the largest share and its percentage, e.g. "MTE2 61%"."""
        what, _cycles, share = self.path.largest()
        return f"{what} {share:.0%}"

    def _us(self, cycles: float) -> str:
        return f"{cycles / self.clock_hz * 1e6:,.2f} us"

    def __str__(self) -> str:
        return "\n".join(self.lines())

    def lines(self) -> list:
        p = self.path
        out = [f"critical path: {p.cycles:,} cycles = {self._us(p.cycles)} "
               f"(its steps sum to the run's cycles)",
               f"  {'on the path':<16} {'cycles':>10} {'share':>7}"]
        out += [f"  {w:<16} {c:>10,.0f} {s:>7.1%}" for w, c, s in self.shares()]
        if len(p.kernels) > 1:
            out.append("  per kernel (cycles: the three largest shares):")
            for k in p.kernels[:TOP_KERNELS]:
                top = sorted(k.by_what.items(), key=lambda kv: -kv[1])[:3]
                out.append(f"    {k.name:<28} {k.cycles:>9,}: " + ", ".join(
                    f"{w} {c / k.cycles:.0%}" for w, c in top))
            rest = p.kernels[TOP_KERNELS:]
            if rest:
                out.append(f"    {len(rest)} more kernels {sum(k.cycles for k in rest):>9,}")
        edges = {}
        for k in p.kernels:
            for reason, n in k.edges.items():
                edges[reason] = edges.get(reason, 0) + n
        out.append("  edges walked: " + ", ".join(
            f"{r} {n:,}" for r, n in sorted(edges.items(), key=lambda kv: -kv[1])))
        return out + self._what_if_lines()

    def _what_if_lines(self) -> list:
        if not self.what_ifs:
            return []
        base = self.path.cycles
        out = ["what if (the path's graph re-weighted, no second run):"]
        for w in self.what_ifs[:8]:
            change = "no change" if w.cycles == base else \
                f"{self._us(base)} -> {self._us(w.cycles)} ({w.cycles / base - 1:+.1%})"
            out.append(f"  {w.label + ':':<20} {change}{' *' if w.bound else ''}")
        bounds = sorted({w.bound for w in self.what_ifs[:8] if w.bound})
        out += [f"  * approximate: {b} (re-simulate with Chip.with_speedup to be sure)"
                for b in bounds]
        return out


def explain(result, with_what_ifs: bool = True) -> Explanation:
    """The Explanation of ``result`` (a timed run with a trace)."""
    with gc_paused():    # the graph is a few lists per record: no collector walks over them
        path = critical_path(result, with_what_ifs)
        wis = what_ifs(result, path) if with_what_ifs else []
    return Explanation(path, wis, result.chip.clock_hz)
