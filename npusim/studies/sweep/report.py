"""What a sweep writes at the end: sweep.json, sweep.md, sweep.png and pareto.png.

``sweep.md`` names the ten fastest points, where the operator's default tiling ranks among the
points that ran (counted once when it is one of them), how much faster the best is than the
default, and what limits each: the largest share of the critical path for the default and the
best point, for the others its share of the roofline and the busiest pipe (``what_limits``, as
``npusim predict`` says it). The table's "busiest pipe" column is the pipe busy the largest
share of the time for every row (``busiest_pipe``). ``sweep.png`` plots time against each
swept field (a field of few values, or of booleans, on a categorical axis), the default and
the best marked, titled with the operator and chip; ``pareto.png`` time against the peak
on-chip bytes one core has live at once (the sum over its buffers), the Pareto front marked.
"""

import json
import os

from npusim.face import provenance
from npusim.studies.executor import PIPES
from npusim.studies.sweep.store import key_of


def bottleneck(record: dict) -> str:
    """What limits a point: the largest share of its critical path where the sweep followed
    it (the default and the best point), else the busiest pipe."""
    if record.get("path"):
        what, share = record["path"][0]
        return f"{what} ({share:.0%} of the critical path)"
    busy = record.get("busy") or {}
    if not busy:
        return "-"
    pipe = max(busy, key=busy.get)
    return f"{pipe} ({busy[pipe]:.0%} busy)"


def busiest_pipe(record: dict) -> str:
    """The pipe busy the largest share of the run, with that share (every row alike, the
    default's and the best's too: the table's column has one meaning)."""
    busy = record.get("busy") or {}
    if not busy:
        return "-"
    pipe = max(busy, key=busy.get)
    return f"{pipe} {busy[pipe]:.0%}"


def _limit(record: dict) -> str:
    """The name of what limits a point (``bottleneck`` without the share)."""
    return bottleneck(record).split(" (")[0]


def buffer_bytes(record: dict) -> int:
    return sum((record.get("peak_bytes") or {}).values())


def pareto_front(rows: list) -> list:
    """The ok rows no other row beats in both time and buffer bytes, by buffer bytes."""
    ok = sorted((r for r in rows if r["status"] == "ok"),
                key=lambda r: (buffer_bytes(r), r["time_us"]))
    front, best = [], float("inf")
    for r in ok:
        if r["time_us"] < best:
            front.append(r)
            best = r["time_us"]
    return front


def summary(rows: list, default: dict, fields: list) -> dict:
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["cycles"])
    out = {"points": len(rows), "ran": len(ok),
           "did_not_fit": sum(r["status"] == "does not fit" for r in rows),
           "not_allowed": sum(r["status"] == "not allowed" for r in rows),
           "default_us": default["time_us"], "default_bottleneck": bottleneck(default)}
    if ok:
        best = ok[0]
        mine = key_of(default["effective_tiling"], fields)
        among = any(key_of(r["tiling"], fields) == mine for r in ok)
        out.update(best_us=best["time_us"], best_tiling=best["tiling"],
                   speedup=default["cycles"] / best["cycles"],
                   default_rank=1 + sum(r["cycles"] < default["cycles"] for r in ok),
                   ranked=len(ok) + (0 if among else 1), default_among=among,
                   best_bottleneck=bottleneck(best))
    return out


def what_limits(record: dict) -> str:
    """One sentence on what holds a run back, as ``npusim predict`` says it (its roofline
    share, then the busiest pipe), or by the largest share of its critical path where the
    sweep followed it (the default and the best point)."""
    from npusim.studies.predict.study import classify

    if record.get("path"):   # the sweep followed its critical path
        return f"is held by {bottleneck(record)}."
    if record.get("bound") and record.get("bound_us") is not None:
        return classify(record)[1]
    pipe = bottleneck(record)
    return f"reaches {record['roofline_ratio']:.0%} of its roofline; busiest pipe {pipe}."


def markdown(case, base: dict, rows: list, default: dict, best, fields: list) -> str:
    s = summary(rows, default, fields)
    shape = "x".join(map(str, base["shape"]))
    lines = [f"# Sweep of {case.aclnn} on {base['chip']}", "",
             f"Made by {provenance.line(provenance.stamp([base['chip']]))}.", "",
             f"{base['dtype']}, shape {shape}, params {base['params'] or 'default'}; "
             f"{s['points']} points over {', '.join(fields)}: {s['ran']} ran, "
             f"{s['points'] - s['ran']} did not ({_why_not(s)}).", ""]
    if "best_us" not in s:
        return "\n".join(lines + ["No point ran.", *_failed(rows, fields, default), ""])
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["cycles"])
    where = "" if s["default_among"] else " (the default is not one of the points)"
    lines += [f"- The default tiling ({_tiling(default['effective_tiling'], fields)}) takes "
              f"{s['default_us']:.2f} us and ranks {s['default_rank']} of {s['ranked']}"
              f"{where}.",
              f"- The best ({_tiling(s['best_tiling'], fields)}) takes {s['best_us']:.2f} us: "
              f"{s['speedup']:.2f}x the default's speed.",
              f"- What limits the default: it {what_limits(default)}",
              f"- What limits the best: it {what_limits(ok[0])}{_moved(default, ok[0])}",
              f"- Check of the best: {best['check'] if best else 'not asked for'}.", "",
              "## The ten fastest", "",
              "| rank | " + " | ".join(fields) + " | time (us) | vs default | of roofline | "
              "busiest pipe (% of the time busy) | peak on-chip bytes |",
              "|---:|" + "---:|" * len(fields) + "---:|---:|---:|---|---:|"]
    for i, r in enumerate(ok[:10], 1):
        cells = [str(r["tiling"].get(f)) for f in fields]
        lines.append(f"| {i} | " + " | ".join(cells) + f" | {r['time_us']:.2f} | "
                     f"{default['cycles'] / r['cycles']:.2f}x | {r['roofline_ratio']:.0%} | "
                     f"{busiest_pipe(r)} | {buffer_bytes(r):,} |")
    lines += _failed(rows, fields, default)
    return "\n".join(lines + ["", "Files: sweep.csv, sweep.id.json, sweep.json, sweep.png, "
                              "pareto.png.", ""])


SHOWN_FAILURES = 20


def _why_not(s: dict) -> str:
    other = s["points"] - s["ran"] - s["did_not_fit"] - s["not_allowed"]
    parts = [f"{s['did_not_fit']} did not fit"]
    if s["not_allowed"]:
        parts.append(f"{s['not_allowed']} had a value the field does not take")
    if other:
        parts.append(f"{other} failed otherwise")
    return ", ".join(parts)


def _failed(rows: list, fields: list, default: dict) -> list:
    failed = [r for r in rows if r["status"] != "ok"]
    if not failed:
        return []
    lines = ["", f"## Points that did not run ({len(failed)})", ""]
    lines += [f"- {_tiling(r['tiling'], fields)}: {r['status']}: {r['error'] or r['check']}"
              for r in failed[:SHOWN_FAILURES]]
    if len(failed) > SHOWN_FAILURES:
        lines.append(f"- ... and {len(failed) - SHOWN_FAILURES} more (every point is a row "
                     "of sweep.csv)")
    if any("out of event ids" in (r["error"] or "") for r in failed):
        counts = [f for f in default.get("effective_tiling") or {}
                  if "buffer" in f or "step" in f]
        lines += ["", "Out of event ids: a queue holds more buffers than its pipe pair has "
                  "event ids. The fields that set buffer counts here: "
                  f"{', '.join(counts) or 'none of the tiling'}; a derived one (not set by "
                  "you) follows from the fields swept."]
    return lines


def _tiling(tiling: dict, fields: list) -> str:
    return ", ".join(f"{f}={tiling.get(f)}" for f in fields)


def _moved(default: dict, best: dict) -> str:
    a, b = _limit(default), _limit(best)
    return f" ({a} stopped being the bottleneck)" if a != b and a != "-" else ""


def title(case, base: dict) -> str:
    shape = "x".join(map(str, base["shape"]))
    return f"{case.aclnn} on {base['chip']}, {base['dtype']} {shape}"


def axis(values: list) -> tuple[list, list | None]:
    """x positions for a field's values, and tick labels when the axis is categorical (few
    distinct values, or not numbers: buffer_num 1/2, true/false) rather than continuous."""
    distinct = sorted(set(values), key=lambda v: (str(type(v)), v))
    numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in distinct)
    if numeric and len(distinct) > 4:
        return [float(v) for v in values], None
    where = {v: i for i, v in enumerate(distinct)}
    return [float(where[v]) for v in values], [str(v) for v in distinct]


def plot_time(rows: list, fields: list, path: str, case=None, base=None, default=None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r["status"] == "ok"]
    best = min(ok, key=lambda r: r["cycles"]) if ok else None
    fig, axes = plt.subplots(1, len(fields), figsize=(4.2 * len(fields), 3.6), squeeze=False)
    for ax, f in zip(axes[0], fields, strict=True):
        marked = [r for r in (best, default) if r is not None]   # the default's star on top
        values = [r["tiling"][f] for r in ok] + \
            [(r.get("effective_tiling") or r["tiling"]).get(f) for r in marked]
        xs, labels = axis(values)
        ax.scatter(xs[:len(ok)], [r["time_us"] for r in ok], s=14, alpha=0.6, label="points")
        for x, r in zip(xs[len(ok):], marked, strict=True):
            name = "default" if r is default else "best"
            ax.scatter([x], [r["time_us"]], marker="*" if r is default else "D",
                       s=110 if r is default else 70, edgecolor="k",
                       zorder=4 if r is default else 3, label=name)
        _x_axis(ax, f, xs[:len(ok)], labels)
        ax.set_ylabel("time (us)")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{title(case, base)}: simulated time against each swept field"
                 if case is not None else "simulated time against each swept field")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _x_axis(ax, field: str, xs: list, labels) -> None:
    ax.set_xlabel(field)
    if labels is not None:
        ax.set_xticks(range(len(labels)), labels)
        ax.set_xlim(-0.5, len(labels) - 0.5)
    elif xs and min(xs) > 0 and max(xs) / min(xs) >= 16:
        ax.set_xscale("log", base=2)


def plot_pareto(rows: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r["status"] == "ok"]
    front = pareto_front(rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.scatter([buffer_bytes(r) / 1024 for r in ok], [r["time_us"] for r in ok], s=14,
               alpha=0.5, label="points")
    ax.plot([buffer_bytes(r) / 1024 for r in front], [r["time_us"] for r in front], "o-",
            color="C3", label="Pareto front")
    ax.set_xlabel("peak on-chip bytes live on one core (KiB)")
    ax.set_ylabel("time (us)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(store, case, base, rows, default, best, fields) -> None:
    data = {"op": case.name, "chip": base["chip"], "shape": base["shape"],
            "dtype": base["dtype"], "params": base["params"], "fields": fields,
            "default": default, "summary": summary(rows, default, fields), "rows": rows,
            "pipes": list(PIPES), "provenance": provenance.stamp([base["chip"]])}
    store.write_text("sweep.json", json.dumps(data, indent=1, default=str) + "\n")
    store.write_text("sweep.md", markdown(case, base, rows, default, best, fields))
    for name, draw in (("sweep.png", lambda p: plot_time(rows, fields, p, case, base, default)),
                       ("pareto.png", lambda p: plot_pareto(rows, p))):
        tmp = store.path(f".{name}.tmp.png")
        draw(tmp)
        os.replace(tmp, store.path(name))
