"""A prediction report's figures, each comparing the chips on the calls all of them run:

- ``layers.png``, the one to take in at a glance: a group of bars per call (layer), the chips
  side by side, sorted by time, labelled with the call's note, each bar stacked by kernel type
  (one colour per type, with a legend) and its time written at its end;
- ``totals.png``: each chip's total, stacked by kernel type, with a legend;
- ``roofline.png``: a panel per chip on one y scale, each call a point labelled with its note.

Text is at least 8 points at 150 dpi (about 17 pixels): the bar labels were 6 points at 100 dpi,
8 pixels, too small to read. Each figure writes its times in one unit, the unit of its axis (ms).
"""

import io
import math
import textwrap

from npusim.chip import load_chip
from npusim.studies.predict.blocks import column

OTHER = "other kernels"
MAX_TYPES = 9          # kernel types drawn in their own colour; the rest are OTHER
DPI = 150
TEXT = 8               # points: the smallest text a figure draws


def ms(x_us: float) -> str:
    """A time in the figures' one unit, milliseconds (their axes are in ms)."""
    return f"{x_us / 1000:,.3f} ms"


def figures(result: dict) -> dict:
    """{file name: PNG bytes}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    for name, draw in (("layers.png", layers), ("totals.png", totals),
                       ("roofline.png", roofline)):
        fig = draw(plt, result)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
        plt.close(fig)
        out[name] = buf.getvalue()
    return out


def kernel_colours(plt, result: dict) -> dict:
    """{kernel type: colour}, the largest types first, the same in every figure."""
    time = {}
    for c in result["chips"]:
        for k, t in result["totals"][c]["by_kernel"].items():
            time[k] = time.get(k, 0.0) + t
    names = sorted(time, key=lambda k: -time[k])
    cmap = plt.get_cmap("tab10")
    colours = {k: cmap(i) for i, k in enumerate(names[:MAX_TYPES])}
    return {**colours, OTHER: (0.6, 0.6, 0.6, 1.0)}


def _segments(by_kernel: dict, colours: dict) -> list:
    """[(type, us)] in the legend's order, the types without a colour summed as OTHER."""
    segs = {k: 0.0 for k in colours}
    for k, t in by_kernel.items():
        segs[k if k in colours else OTHER] += t
    return [(k, t) for k, t in segs.items() if t > 0]


MOST_CALLS = 40    # the layers figure draws the longest calls; the tables list every one


def layers(plt, result: dict):
    chips, common = result["chips"], result["common_calls"]
    rows = {(r["call"], r["chip"]): r for r in result["rows"] if r["status"] == "ok"}
    order = sorted(common, key=lambda c: -max(rows[c, ch]["total_us"] for ch in chips
                                              if (c, ch) in rows))[:MOST_CALLS]
    colours, h = kernel_colours(plt, result), 0.8 / max(len(chips), 1)
    fig, ax = plt.subplots(figsize=(12, 1.5 + 0.42 * len(order) * max(len(chips), 2)))
    drawn, ticks, labels = set(), [], []
    for i, call in enumerate(order):
        for j, chip in enumerate(chips):
            r, y, left = rows.get((call, chip)), i + j * h - 0.4 + h / 2, 0.0
            if r is None:     # the workload runs it on other products only
                ax.text(0, y, f" {chip}: not on this product", va="center", fontsize=TEXT)
                continue
            for k, t in _segments({k: v * r["count"] for k, v in r["by_kernel"].items()},
                                  colours):
                ax.barh(y, t / 1000, height=h * 0.9, left=left, color=colours[k],
                        label=None if k in drawn else k)
                drawn.add(k)
                left += t / 1000
            ax.text(left, y, f" {chip} {ms(r['total_us'])}", va="center", fontsize=TEXT)
        ticks.append(i)
        first = next(rows[call, c] for c in chips if (call, c) in rows)
        labels.append(f"{call}: {first['label']} (x{first['count']})")
    ax.set_yticks(ticks, [textwrap.fill(lb, 44) for lb in labels], fontsize=TEXT)
    ax.set_ylim(max(len(order), 1) - 0.5, -0.5)
    ax.set_xlabel("predicted time x count (ms), stacked by kernel")
    what = "every call" if len(order) == len(common) else \
        f"the {len(order)} longest of the {len(common)} calls"
    ax.set_title(f"{result['workload'].name}: {what} all chips run, by time "
                 f"({', '.join(column(c, result['batch']) for c in chips)}, top to bottom)",
                 fontsize=10)
    ax.margins(x=0.25)
    if drawn:
        ax.legend(fontsize=TEXT, loc="upper left", bbox_to_anchor=(1.01, 1), title="kernel",
                  title_fontsize=TEXT)
    else:
        ax.text(0.5, 0.5, "no call runs on every chip", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    return fig


def totals(plt, result: dict):
    chips, colours = result["chips"], kernel_colours(plt, result)
    fig, ax = plt.subplots(figsize=(8, 1.6 + 0.6 * len(chips)))
    drawn = set()
    for y, chip in enumerate(chips):
        left = 0.0
        for k, t in _segments(result["totals"][chip]["by_kernel"], colours):
            ax.barh(y, t / 1000, left=left, color=colours[k], label=None if k in drawn else k)
            drawn.add(k)
            left += t / 1000
        ax.text(left, y, f" {ms(result['totals'][chip]['total_us'])}", va="center",
                fontsize=TEXT + 1)
    ax.set_yticks(range(len(chips)), [column(c, result["batch"]) for c in chips])
    ax.invert_yaxis()
    ax.margins(x=0.15)
    ax.set_xlabel(f"predicted time (ms) of the {len(result['common_calls'])} calls all chips "
                  "run, stacked by kernel")
    if drawn:
        ax.legend(fontsize=TEXT, loc="upper left", bbox_to_anchor=(1.01, 1), title="kernel",
                  title_fontsize=TEXT)
    fig.tight_layout()
    return fig


def roofline(plt, result: dict):
    from matplotlib.lines import Line2D

    chips, notes = result["chips"], {}
    fig, axes = plt.subplots(1, len(chips), figsize=(5.5 * len(chips), 5), squeeze=False,
                             sharey=True)
    points = {chip: [(r["flops"] / r["bytes"], r["flops"] / r["time_us"] / 1e6, r)
                     for r in result["rows"] if r["chip"] == chip and r["status"] == "ok"
                     and r["call"] in result["common_calls"] and r["bytes"] and r["flops"]]
              for chip in chips}
    specs = {chip: load_chip(result["chip_specs"][chip]) for chip in chips}
    peaks = [specs[c].peak_flops("float16") / 1e12 for c in chips]
    ys = [y for c in chips for _, y, _ in points[c]] or peaks
    for ax, chip in zip(axes[0], chips, strict=True):
        _roof(ax, specs[chip], points[chip])
        for x, y, r in points[chip]:
            ax.scatter(x, y, color="C1", s=14)
            ax.annotate(str(r["call"]), (x, y), fontsize=TEXT, xytext=(3, 2),
                        textcoords="offset points")
            notes[r["call"]] = r["label"]
        ax.set_title(column(chip, result["batch"]), fontsize=10)
    axes[0][0].set_ylim(min(ys) / 2, max(peaks) * 1.5)     # one y scale for every panel
    handles = [Line2D([], [], ls="none") for _ in notes]
    fig.legend(handles, [textwrap.shorten(f"{k}: {v}", 60) for k, v in sorted(notes.items())],
               loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=TEXT, handlelength=0,
               title="points: call and its note", title_fontsize=TEXT)
    fig.tight_layout()
    return fig


def _roof(ax, c, points: list) -> None:
    """The chip's fp16 cube and HBM roofline over the points' range."""
    peak, bw = c.peak_flops("float16") / 1e12, c.hbm_bytes_per_s / 1e12
    xs_seen = [x for x, _, _ in points] or [1.0]
    lo = min(math.floor(math.log2(x)) - 1 for x in xs_seen)
    hi = max(math.ceil(math.log2(peak / bw)) + 2, *(math.ceil(math.log2(x)) + 1
                                                      for x in xs_seen))
    xs = [2.0 ** e for e in range(lo, hi + 1)]
    ax.plot(xs, [min(peak, bw * x) for x in xs], color="C0", lw=1,
            label=f"roofline (fp16 cube, {c.memory_kind})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop / GM byte)", fontsize=TEXT + 1)
    ax.set_ylabel("achieved TFLOPS", fontsize=TEXT + 1)
    ax.tick_params(labelsize=TEXT)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=TEXT, loc="lower right")
