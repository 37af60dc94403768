"""The validation table and the msprof correlation as text, Markdown, CSV, JSON and a plot.

``table_rows`` and ``text_lines`` make the validation table ``npusim validate`` prints;
``write_validation`` writes validation.md, validation.csv, validation.json and validation.png
into an ``OutputDir``. ``scatter`` draws predicted against measured times on log-log axes with
the y = x line and, for the validation table, each row's own tolerance as a bar through its
point (rows npusim does not model drawn hollow); ``npusim correlate`` uses it with a +-20% band.
"""

import csv
import json

from npusim.face.report import aligned

BAND = 0.2   # the plot's band: the +-20% aimed at for device-timed kernels

HEAD = ("row", "chip (model)", "measured", "timed", "measured us", "predicted us", "op us",
        "error", "tolerance", "within")


def _us(x) -> str:
    return "-" if x is None else f"{x:,.1f}"


def table_rows(result: dict) -> list:
    """One list of text cells per row (HEAD's columns)."""
    out = []
    for x in result["rows"]:
        r = x["row"]
        ok = x["status"] == "ok"
        out.append([r.id, f"{r.chip} ({r.model})", r.measurement, r.timed,
                    _us(x["measured_us"]), _us(x["predicted_us"]), _us(x["op_us"]),
                    f"{x['error']:+.1%}" if ok else x["status"],
                    f"+-{r.tolerance:.0%}" if r.counted else "not modelled",
                    _within(x) if ok else "-"])
    return out


def _within(x: dict) -> str:
    if not x["row"].counted:
        return "not counted"
    return "yes" if x["within"] else "NO"


def summary(result: dict) -> str:
    text = (f"{result['ran']} counted rows ran, {result['within']} within tolerance; mean "
            f"absolute error {result['mae']:.1%}")
    if result.get("missed"):
        text += f"; outside: {', '.join(result['missed'])}"
    if result.get("not_modelled"):
        text += f"; not modelled (not counted): {', '.join(result['not_modelled'])}"
    return text


def text_lines(result: dict) -> list:
    """The table as aligned text: the short columns, then each row's measurement."""
    cols = (0, 1, 4, 5, 6, 7, 8, 9)
    cells = [[c[0], x["row"].model, *c[2:]] for c, x in zip(table_rows(result),
                                                              result["rows"], strict=True)]
    rows = [["row", "model", *(HEAD[i] for i in cols[2:])]] + [[c[i] for i in cols]
                                                                 for c in cells]
    lines = aligned(rows, range(2, len(cols)))
    lines.append(summary(result))
    lines += [f"  {x['id']}: {x['why']}" for x in result["rows"] if x["status"] != "ok"]
    return lines


def markdown(result: dict) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * 4 + "---:|" * 6]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |"
              for cells in table_rows(result)]
    lines += ["", summary(result) + ".", "", "Sources and notes:", ""]
    lines += [f"- **{x['row'].id}**: {x['row'].source}, <{x['row'].url}>. {x['row'].note}"
              + (f" ({x['status']}: {x['why']})" if x["status"] != "ok" else "")
              for x in result["rows"]]
    return "\n".join(lines) + "\n"


def records(result: dict) -> list:
    """The rows as JSON-ready dicts."""
    out = []
    for x in result["rows"]:
        r = x["row"]
        out.append({"id": r.id, "measurement": r.measurement, "source": r.source,
                    "url": r.url, "chip": r.chip, "model": r.model, "timed": r.timed,
                    "value": r.value, "unit": r.unit, "op": r.op, "shape": list(r.shape),
                    "dtype": r.dtype, "params": r.params, "compare": r.compare,
                    "kernel": r.kernel, "tiling": r.tiling, "tolerance": r.tolerance,
                    "counted": r.counted, "not_modelled": r.not_modelled, "status": x["status"],
                    "measured_us": x["measured_us"], "predicted_us": x["predicted_us"],
                    "op_us": x["op_us"], "error": x["error"], "within": x["within"],
                    "why": x["why"]})
    return out


def write_validation(result: dict, out) -> list:
    """validation.md, .csv, .json and .png into ``out`` (an OutputDir); the names written."""
    with open(out.file("validation.md"), "w", encoding="utf-8") as f:
        f.write("# npusim against published measurements\n\n" + markdown(result))
    data = records(result)
    with open(out.file("validation.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(data[0]))
        writer.writeheader()
        writer.writerows({**d, "shape": "x".join(map(str, d["shape"])),
                          "params": json.dumps(d["params"]),
                          "tiling": json.dumps(d["tiling"])} for d in data)
    with open(out.file("validation.json"), "w", encoding="utf-8") as f:
        json.dump({"rows": data, **{k: result[k] for k in ("mae", "ran", "within", "missed",
                                                           "not_modelled") if k in result}},
                  f, indent=1)
        f.write("\n")
    plot_validation(result, out.file("validation.png"))
    return ["validation.md", "validation.csv", "validation.json", "validation.png"]


def plot_validation(result: dict, path) -> str:
    """validation.png: the rows that ran, predicted against measured, each with its own
    tolerance (also docs/modelling/validation.png, drawn by plots/make_plots.py)."""
    ok = [x for x in result["rows"] if x["status"] == "ok"]
    points = [(x["measured_us"], x["predicted_us"], x["id"]) for x in ok]
    bands = [x["row"].tolerance if x["row"].counted else None for x in ok]
    return scatter(points, path, "npusim against published measurements", tolerances=bands)


def scatter(points: list, path, title: str, tolerances=None) -> str:
    """Predicted against measured (us), log-log, each point labelled; y = x and +-BAND, or,
    with ``tolerances`` (one per point; None: not modelled), each point's own band as a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from npusim.face.plot import _save

    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    values = [v for m, p, _ in points for v in (m, p) if v and v > 0] or [1.0, 10.0]
    lo, hi = min(values) / 2, max(values) * 2
    line = [lo, hi]
    ax.plot(line, line, color="black", lw=1, label="predicted = measured")
    if tolerances is None:
        ax.fill_between(line, [v * (1 - BAND) for v in line], [v * (1 + BAND) for v in line],
                        color="C2", alpha=0.15, label=f"+-{BAND:.0%}")
    for i, (m, p, label) in enumerate(points):   # numbered points, named in the legend
        tol = tolerances[i] if tolerances is not None else BAND
        colour = f"C{i % 10}"
        if tolerances is not None and tol is not None:   # the row's own band, at its x
            ax.plot([m, m], [m * (1 - tol), m * (1 + tol)], color=colour, lw=3, alpha=0.3,
                    solid_capstyle="butt")
        hollow = tolerances is not None and tol is None
        ax.scatter([m], [p], s=24, zorder=3, marker="os^Dv"[i // 10 % 5],
                   facecolors="none" if hollow else colour, edgecolors=colour,
                   label=f"{i + 1}: {label}" + (" (not modelled)" if hollow else
                                                f" (+-{tol:.0%})" if tolerances else ""))
        ax.annotate(str(i + 1), (m, p), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured on hardware (us)")
    ax.set_ylabel("predicted by npusim (us)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, path)


# --- npusim correlate ------------------------------------------------------------------------

CORRELATE_HEAD = ("line", "OP Type", "Op Name", "npusim call", "measured us", "predicted us",
                  "error", "compared with")


def correlate_rows(result: dict) -> list:
    """Text cells per modelled CSV row (CORRELATE_HEAD's columns)."""
    return [[str(r["line"]), r["op_type"], r["name"] or "-", r["call"],
             _us(r["measured_us"]), _us(r["predicted_us"]), f"{r['error']:+.1%}",
             r["compared"] + (f"; {r['note']}" if r["note"] else "")]
            for r in result["rows"] if r["status"] == "ok"]


def correlate_summary(result: dict) -> list:
    lines = [f"{result['ran']} row{'s' if result['ran'] > 1 else ''} run on "
             f"{result['chip']}: mean absolute error "
             f"{result['mae']:.1%}, mean error {result['mean_error']:+.1%}"
             if result["ran"] else f"no row of {result['path']} is one npusim models"]
    skipped = [r for r in result["rows"] if r["status"] != "ok"]
    if skipped:
        lines.append(f"{len(skipped)} row{'s' if len(skipped) > 1 else ''} not run:")
        lines += [f"  line {r['line']} {r['op_type'] or '-'}: {r['status']}: {r['why']}"
                  for r in skipped]
    return lines


def correlate_text(result: dict) -> list:
    rows = [list(CORRELATE_HEAD)] + correlate_rows(result)
    lines = aligned(rows, range(4, 7)) if len(rows) > 1 else []
    return lines + correlate_summary(result)


def write_correlation(result: dict, out) -> list:
    """correlate.md, .csv, .json and .png into ``out``; the names written."""
    table = ["| " + " | ".join(CORRELATE_HEAD) + " |", "|" + "---|" * 4 + "---:|" * 3 + "---|"]
    table += ["| " + " | ".join(c.replace("|", "/") for c in r) + " |"
              for r in correlate_rows(result)]
    with open(out.file("correlate.md"), "w", encoding="utf-8") as f:
        f.write(f"# npusim against {result['path']} ({result['chip']})\n\n"
                + "\n".join(table + [""] + correlate_summary(result)) + "\n")
    fields = ("line", "op_type", "name", "status", "call", "measured_us", "predicted_us",
              "error", "compared", "note", "why")
    with open(out.file("correlate.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        writer.writerows({k: r.get(k, "") for k in fields} for r in result["rows"])
    with open(out.file("correlate.json"), "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, default=str)
        f.write("\n")
    points = [(r["measured_us"], r["predicted_us"], f"{r['line']} {r['op_type']}")
              for r in result["rows"] if r["status"] == "ok"]
    scatter(points, out.file("correlate.png"), f"npusim against msprof ({result['chip']})")
    return ["correlate.md", "correlate.csv", "correlate.json", "correlate.png"]
