"""What a sweep writes at the end: sweep.json, sweep.md, sweep.png and pareto.png.

``sweep.md`` names the ten fastest points, where the operator's default tiling ranks among them,
how much faster the best is than the default, and which pipe was the bottleneck (the busiest) in
each. ``sweep.png`` plots time against each swept field; ``pareto.png`` time against the peak
on-chip bytes one core has live at once (the sum over its buffers), the Pareto front marked.
"""

import json
import os

from npusim.studies.executor import PIPES


def bottleneck(record: dict) -> str:
    busy = record.get("busy") or {}
    if not busy:
        return "-"
    pipe = max(busy, key=busy.get)
    return f"{pipe} ({busy[pipe]:.0%})"


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


def summary(rows: list, default: dict) -> dict:
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["cycles"])
    out = {"points": len(rows), "ran": len(ok),
           "did_not_fit": sum(r["status"] == "does not fit" for r in rows),
           "default_us": default["time_us"], "default_bottleneck": bottleneck(default)}
    if ok:
        best = ok[0]
        out.update(best_us=best["time_us"], best_tiling=best["tiling"],
                   speedup=default["cycles"] / best["cycles"],
                   default_rank=1 + sum(r["cycles"] < default["cycles"] for r in ok),
                   best_bottleneck=bottleneck(best))
    return out


def markdown(case, base: dict, rows: list, default: dict, best, fields: list) -> str:
    s = summary(rows, default)
    shape = "x".join(map(str, base["shape"]))
    lines = [f"# Sweep of {case.aclnn} on {base['chip']}", "",
             f"{base['dtype']}, shape {shape}, params {base['params'] or 'default'}; "
             f"{s['points']} points over {', '.join(fields)}: {s['ran']} ran, "
             f"{s['did_not_fit']} did not fit.", ""]
    if "best_us" not in s:
        return "\n".join(lines + ["No point ran.", ""])
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: r["cycles"])
    lines += [f"- The default tiling ({_tiling(default['effective_tiling'], fields)}) takes "
              f"{s['default_us']:.2f} us and ranks {s['default_rank']} of {s['ran'] + 1}.",
              f"- The best ({_tiling(s['best_tiling'], fields)}) takes {s['best_us']:.2f} us: "
              f"{s['speedup']:.2f}x the default's speed.",
              f"- Bottleneck: {s['default_bottleneck']} with the default, "
              f"{s['best_bottleneck']} with the best" + _moved(default, ok[0]) + ".",
              f"- Check of the best: {best['check'] if best else 'not asked for'}.", "",
              "## The ten fastest", "",
              "| rank | " + " | ".join(fields) + " | time (us) | vs default | of roofline | "
              "busiest pipe | peak on-chip bytes |",
              "|---:|" + "---:|" * len(fields) + "---:|---:|---:|---|---:|"]
    for i, r in enumerate(ok[:10], 1):
        cells = [str(r["tiling"].get(f)) for f in fields]
        lines.append(f"| {i} | " + " | ".join(cells) + f" | {r['time_us']:.2f} | "
                     f"{default['cycles'] / r['cycles']:.2f}x | {r['roofline_ratio']:.0%} | "
                     f"{bottleneck(r)} | {buffer_bytes(r):,} |")
    failed = [r for r in rows if r["status"] != "ok"]
    if failed:
        lines += ["", f"## Points that did not run ({len(failed)})", ""]
        lines += [f"- {_tiling(r['tiling'], fields)}: {r['status']}: {r['error'] or r['check']}"
                  for r in failed[:20]]
    return "\n".join(lines + ["", "Files: sweep.csv, sweep.id.json, sweep.json, sweep.png, "
                              "pareto.png.", ""])


def _tiling(tiling: dict, fields: list) -> str:
    return ", ".join(f"{f}={tiling.get(f)}" for f in fields)


def _moved(default: dict, best: dict) -> str:
    a, b = bottleneck(default).split(" ")[0], bottleneck(best).split(" ")[0]
    return f" ({a} stopped being the bottleneck)" if a != b and a != "-" else ""


def plot_time(rows: list, fields: list, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r["status"] == "ok"]
    fig, axes = plt.subplots(1, len(fields), figsize=(4.2 * len(fields), 3.4), squeeze=False)
    for ax, f in zip(axes[0], fields, strict=True):
        xs = [float(r["tiling"][f]) for r in ok]
        ax.scatter(xs, [r["time_us"] for r in ok], s=14, alpha=0.7)
        ax.set_xlabel(f)
        ax.set_ylabel("time (us)")
        if xs and min(xs) > 0 and max(xs) / min(xs) >= 16:
            ax.set_xscale("log", base=2)
        ax.grid(alpha=0.3)
    fig.suptitle("simulated time against each swept field")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
            "default": default, "summary": summary(rows, default), "rows": rows,
            "pipes": list(PIPES)}
    store.write_text("sweep.json", json.dumps(data, indent=1, default=str) + "\n")
    store.write_text("sweep.md", markdown(case, base, rows, default, best, fields))
    for name, draw in (("sweep.png", lambda p: plot_time(rows, fields, p)),
                       ("pareto.png", lambda p: plot_pareto(rows, p))):
        tmp = store.path(f".{name}.tmp.png")
        draw(tmp)
        os.replace(tmp, store.path(name))
