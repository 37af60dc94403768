"""Charts of several runs side by side, drawn headless with matplotlib (Agg) to PNG.

- ``compare(runs, path)``: for one operator on several chips, the simulated time of each chip
  against its roofline bound, and each pipe's busy share. A chip that did not run shows why.
- ``bars(groups, path)``: simulated time for labelled cases (e.g. dtypes) on several chips.

Files are written to a temporary name and renamed, as ``npusim.face.plot`` does.
"""

import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import transforms  # noqa: E402

from npusim.cases.run import metrics
from npusim.face.plot import _save  # noqa: E402
from npusim.face.report import shape_text  # noqa: E402


def compare(runs: list, path) -> str:
    """Time against roofline per chip (left) and per-pipe busy share per chip (right)."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    names = [r.chip.name for r in runs]
    done = {r.chip.name: metrics(r) for r in runs if not r.error and r.result.cycles}
    base = transforms.blended_transform_factory(left.transData, left.transAxes)
    for i, run in enumerate(runs):
        m = done.get(run.chip.name)
        if m is None:
            why = run.error.split(": ", 1)[-1] if run.error else "functional mode: no timing"
            left.text(i, 0.05, "not run:\n" + "\n".join(textwrap.wrap(why, 30)), ha="center",
                      va="bottom", fontsize=6, color="#a00", transform=base)
            continue
        left.bar(i, m["time_us"], color=f"C{i}", width=0.6)
        left.hlines(m["bound_us"], i - 0.35, i + 0.35, color="black", linestyles="--")
        left.text(i, m["time_us"], f"{m['time_us']:.1f} us\n{m['roofline_ratio']:.0%} of "
              f"roofline", ha="center", va="bottom", fontsize=7)
    left.set_xticks(range(len(names)), names, fontsize=8)
    left.set_ylabel("simulated time (us)")
    left.set_title("time; dashed: roofline bound", fontsize=9)
    left.margins(y=0.25)
    _pipe_bars(right, runs, done)
    run = runs[0]
    fig.suptitle(f"{run.case.aclnn} {run.dtype} {shape_text(run.shape)}", fontsize=10)
    return _save(fig, path)


def _pipe_bars(ax, runs, done) -> None:
    pipes = list(dict.fromkeys(p for m in done.values()
                               for p, u in m["pipe_utilisation"].items() if u > 0))
    width = 0.8 / max(len(runs), 1)
    for i, run in enumerate(runs):
        m = done.get(run.chip.name)
        if m is None:
            continue
        xs = [j + (i - (len(runs) - 1) / 2) * width for j in range(len(pipes))]
        ys = [100 * m["pipe_utilisation"].get(p, 0) for p in pipes]
        ax.bar(xs, ys, width=width, color=f"C{i}", label=run.chip.name)
    ax.set_xticks(range(len(pipes)), pipes, fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("busy (% of run, mean over cores)")
    ax.set_title("pipe utilisation", fontsize=9)
    if done:
        ax.legend(fontsize=7)


def bars(groups: dict, path, title: str) -> str:
    """``groups``: label -> list of CaseRun (one per chip). Grouped bars of simulated time."""
    labels = list(groups)
    chips = list(dict.fromkeys(r.chip.name for runs in groups.values() for r in runs))
    width = 0.8 / max(len(chips), 1)
    fig, ax = plt.subplots(figsize=(8, 3.8))
    labelled = set()
    for i, chip in enumerate(chips):
        for j, label in enumerate(labels):
            x = j + (i - (len(chips) - 1) / 2) * width
            run = next((r for r in groups[label] if r.chip.name == chip), None)
            if run is None or run.error or not run.result.cycles:
                ax.text(x, 0, "not\nsupported", ha="center", va="bottom", fontsize=6,
                        color="#a00")
                continue
            m = metrics(run)
            ax.bar(x, m["time_us"], width=width, color=f"C{i}",
                   label=None if chip in labelled else chip)
            labelled.add(chip)
            ax.text(x, m["time_us"], f"{m['time_us']:.1f}", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(labels)), labels, fontsize=8)
    ax.set_ylabel("simulated time (us)")
    ax.set_title(title, fontsize=10)
    ax.margins(y=0.2)
    ax.legend(fontsize=8)
    return _save(fig, path)
