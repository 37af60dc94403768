"""Predicted against measured times on log-log axes: ``npusim validate`` and ``correlate``.

Each point carries its own band, drawn as a bar through the point at its measured x: for the
validation table the row's tolerance, for a correlation the error band npusim has shown on the
validation rows of that operator on that chip (``bands.band``), or no bar where no row covers
it. Nothing is drawn with a band the point does not have. Points are numbered (a validation row
by its place in the table, a CSV row by its line) and named in the legend; points too close to
label apart share one label ("3, 7"), and a label that would cover another is moved down
beside its point, with a thin line back to it.
"""

import math
from dataclasses import dataclass

CLOSE = 0.03   # points closer than this fraction of the log span, on both axes, share a label


@dataclass(frozen=True)
class Point:
    measured_us: float
    predicted_us: float
    number: int            # the label drawn beside the point
    name: str              # the legend's text after the number
    band: float | None     # the bar through the point (fraction), None: no bar
    hollow: bool = False   # drawn hollow (a row npusim does not model)


def _clusters(points: list, lo: float, hi: float) -> list:
    """Groups of indices of points within CLOSE of the group's first point, in order."""
    span = math.log10(hi / lo)
    near = CLOSE * span
    groups: list = []
    for i, p in enumerate(points):
        x, y = math.log10(p.measured_us), math.log10(p.predicted_us)
        for g in groups:
            q = points[g[0]]
            if (abs(math.log10(q.measured_us) - x) < near
                    and abs(math.log10(q.predicted_us) - y) < near):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def _draw_point(ax, i: int, p: Point) -> None:
    colour = f"C{i % 10}"
    if p.band is not None:
        m = p.measured_us
        ax.plot([m, m], [m * (1 - p.band), m * (1 + p.band)], color=colour, lw=3, alpha=0.3,
                solid_capstyle="butt")
    ax.scatter([p.measured_us], [p.predicted_us], s=24, zorder=3,
               marker="os^Dv"[i // 10 % 5], facecolors="none" if p.hollow else colour,
               edgecolors=colour, label=f"{p.number}: {p.name}")


def _label(fig, ax, points: list, groups: list) -> list:
    """One label per group of close points, each moved down until it covers no other label
    (a moved label gets a thin line back to its point); the labels' boxes (display units)."""
    renderer = fig.canvas.get_renderer()
    placed: list = []
    for group in groups:
        first = points[group[0]]
        where = (first.measured_us, first.predicted_us)
        text = ", ".join(str(points[i].number) for i in group)
        note = ax.annotate(text, where, fontsize=7, xytext=(4, 2),
                           textcoords="offset points")
        for step in range(40):
            note.xyann = (4, 2 - 8 * step)
            box = note.get_window_extent(renderer)
            if not any(box.overlaps(other) for other in placed):
                break
        if step:   # moved: drawn again with its line (an annotation's arrow is made with it)
            note.remove()
            ax.annotate(text, where, fontsize=7, xytext=note.xyann, textcoords="offset points",
                        arrowprops=dict(arrowstyle="-", lw=0.4, color="grey"))
        placed.append(box)
    return placed


def scatter(points: list, path, title: str, band_name: str, numbered_by: str) -> str:
    """Draw ``points`` (Point) to ``path``; the legend says what the bars are (``band_name``)
    and what the numbers are (``numbered_by``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from npusim.face.plot import _save

    points = [p for p in points if p.measured_us > 0 and p.predicted_us > 0]
    fig, ax = plt.subplots(figsize=(7.2, 5.6))
    values = [v for p in points for v in (p.measured_us, p.predicted_us)] or [1.0, 10.0]
    lo, hi = min(values) / 2, max(values) * 2
    ax.plot([lo, hi], [lo, hi], color="black", lw=1, label="predicted = measured")
    if any(p.band is not None for p in points):
        ax.plot([], [], color="grey", lw=3, alpha=0.3, label=f"bar: {band_name}")
    for i, p in enumerate(points):
        _draw_point(ax, i, p)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured on hardware (us)")
    ax.set_ylabel("predicted by npusim (us)")
    ax.set_title(title, fontsize=10)
    _label(fig, ax, points, _clusters(points, lo, hi))   # once the axes are final
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0,
              title=f"numbers: {numbered_by}", title_fontsize=7)
    return _save(fig, path)
