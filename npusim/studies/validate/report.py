"""The validation table and the msprof correlation as text, Markdown, CSV, JSON and a plot.

``table_rows`` and ``text_lines`` make the validation table ``npusim validate`` prints;
``write_validation`` writes validation.md, validation.csv, validation.json and validation.png
into an ``OutputDir``. ``scatter`` draws predicted against measured times on log-log axes with
the y = x line and each point's own band as a bar: a validation row's tolerance (rows npusim
does not model drawn hollow), or for a correlated CSV row npusim's error band on that operator
and chip (``scatter_plot``).
"""

import csv
import json

from npusim.face import provenance
from npusim.face.report import aligned
from npusim.studies.validate import ranking
from npusim.studies.validate.bands import band
from npusim.studies.validate.scatter_plot import Point, scatter

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
                    f"{x['error']:+.1%}" if ok else x["status"], f"+-{r.tolerance:.0%}",
                    _within(x) if ok else "-"])
    return out


def _within(x: dict) -> str:
    """yes or NO; "group" for a row counted with its group (the group's line says)."""
    if x["row"].group:
        return "group"
    return "yes" if x["within"] else "NO"


def summary_lines(result: dict) -> list:
    """The figures: over the counted entries, then over every entry (the rows not modelled
    included); a group counts once, against the mean of its rows' measurements."""
    text = (f"counted: {result['ran']} entries ran, {result['within']} within tolerance; "
            f"mean absolute error {result['mae']:.1%}")
    if result.get("missed"):
        text += f"; outside: {', '.join(result['missed'])}"
    lines = [text]
    every = result.get("all")
    if every and result.get("not_modelled"):
        lines.append(f"all rows: {every['ran']} entries ran (the not modelled rows too), "
                     f"{every['within']} within tolerance; mean absolute error "
                     f"{every['mae']:.1%}")
    groups = [e for e in result.get("entries", []) if len(e["ids"]) > 1]
    lines += [f"entry {e['entry']}: {' and '.join(e['ids'])} are one npusim prediction, "
              f"counted once against the mean of their measurements: {e['error']:+.1%} "
              f"({'within' if e['within'] else 'OUTSIDE'} +-{e['tolerance']:.0%})"
              for e in groups]
    return lines


def _block(result: dict, rows: list) -> list:
    cols = (0, 1, 4, 5, 6, 7, 8, 9)
    cells = [[c[0], x["row"].model, *c[2:]] for c, x in zip(table_rows({"rows": rows}), rows,
                                                              strict=True)]
    return aligned([["row", "model", *(HEAD[i] for i in cols[2:])]]
                   + [[c[i] for i in cols] for c in cells], range(2, len(cols)))


def text_lines(result: dict) -> list:
    """The table as aligned text: the counted rows, then the rows measuring what npusim does
    not have (with their error and why), then the figures and the ranking pairs."""
    counted = [x for x in result["rows"] if x["row"].counted]
    apart = [x for x in result["rows"] if not x["row"].counted]
    lines = _block(result, counted) if counted else []
    if apart:
        lines += ["not modelled: what these rows measured npusim does not have; each is run "
                  "as the nearest case npusim has and shown with its error:"]
        lines += [f"  {line}" for line in _block(result, apart)]
        lines += [f"  {x['id']}: {x['row'].not_modelled}" for x in apart]
    lines += summary_lines(result)
    lines += [f"  {x['id']}: {x['why']}" for x in result["rows"] if x["status"] != "ok"]
    return lines + ranking.lines(result.get("pairs", []))


def markdown(result: dict) -> str:
    lines = ["| " + " | ".join(HEAD) + " |", "|" + "---|" * 4 + "---:|" * 6]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in cells) + " |"
              for cells, x in zip(table_rows(result), result["rows"], strict=True)
              if x["row"].counted]
    apart = [(c, x) for c, x in zip(table_rows(result), result["rows"], strict=True)
             if not x["row"].counted]
    if apart:
        lines += ["", "Not modelled (npusim does not have what these rows measured; each run "
                  "as the nearest case npusim has):", "",
                  "| " + " | ".join(HEAD) + " | why |", "|" + "---|" * 4 + "---:|" * 6 + "---|"]
        lines += ["| " + " | ".join(c.replace("|", "/") for c in [*cells, x["row"].not_modelled])
                  + " |" for cells, x in apart]
    lines += ["", *(f"{line}." for line in summary_lines(result))]
    pairs = ranking.lines(result.get("pairs", []))
    lines += ["", *(f"- {line}" for line in pairs)] if pairs else []
    lines += ["", "Sources and notes:", ""]
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
                    "counted": r.counted, "not_modelled": r.not_modelled, "group": r.group,
                    "kernels": list(r.kernels), "calibrated": r.calibrated,
                    "status": x["status"],
                    "measured_us": x["measured_us"], "predicted_us": x["predicted_us"],
                    "op_us": x["op_us"], "error": x["error"], "within": x["within"],
                    "why": x["why"]})
    return out


def write_validation(result: dict, out) -> list:
    """validation.md, .csv, .json and .png into ``out`` (an OutputDir); the names written."""
    with open(out.file("validation.md"), "w", encoding="utf-8") as f:
        f.write("# npusim against published measurements\n\n"
                f"Made by {provenance.line(_stamp(result))}.\n\n" + markdown(result))
    data = records(result)
    with open(out.file("validation.csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(data[0]))
        writer.writeheader()
        writer.writerows({**d, "shape": "x".join(map(str, d["shape"])),
                          "params": json.dumps(d["params"]),
                          "tiling": json.dumps(d["tiling"])} for d in data)
    with open(out.file("validation.json"), "w", encoding="utf-8") as f:
        figs = ("mae", "ran", "within", "missed", "not_modelled", "all", "entries", "pairs",
                "pairs_missed")
        json.dump({"provenance": _stamp(result), "rows": data,
                   **{k: result[k] for k in figs if k in result}},
                  f, indent=1)
        f.write("\n")
    plot_validation(result, out.file("validation.png"))
    return ["validation.md", "validation.csv", "validation.json", "validation.png"]


def _stamp(result: dict) -> dict:
    return provenance.stamp(dict.fromkeys(x["row"].model for x in result["rows"]))


def plot_validation(result: dict, path) -> str:
    """validation.png: the rows that ran, predicted against measured, each with its own
    tolerance (also docs/modelling/validation.png, drawn by plots/make_plots.py)."""
    ok = [x for x in result["rows"] if x["status"] == "ok"]
    points = [Point(x["measured_us"], x["predicted_us"], i + 1, x["id"] + (
        f" (±{x['row'].tolerance:.0%})" if x["row"].counted else " (not modelled)"),
        x["row"].tolerance if x["row"].counted else None, not x["row"].counted)
        for i, x in enumerate(ok)]
    return scatter(points, path, "npusim against published measurements",
                   "the row's tolerance", "the row's place in the table")


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


def correlate_points(result: dict) -> list:
    """A Point per modelled CSV row, numbered by its line, barred by its operator's band."""
    points = []
    for r in result["rows"]:
        if r["status"] != "ok":
            continue
        b = band(r["op"], result.get("chip_spec") or result["chip"])
        name = r["op_type"] + (
            f" (band ±{b['band']:.0%})" if b["rows"] else " (no validation row)")
        points.append(Point(r["measured_us"], r["predicted_us"], r["line"], name, b["band"]))
    return points


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
    scatter(correlate_points(result), out.file("correlate.png"),
            f"npusim against msprof ({result['chip']})",
            "npusim's error band on that operator and chip", "the CSV's line")
    return ["correlate.md", "correlate.csv", "correlate.json", "correlate.png"]
