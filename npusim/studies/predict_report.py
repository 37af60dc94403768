"""A prediction's report: report.md, a standalone report.html (figures embedded) and
report.json, from ``predict``'s table.

The report gives each chip's predicted total with its error band and the speedup of one over
the other (on the calls both run), a table per chip (time and its error band,
``npusim.studies.bands``, time x count, share of the total, bound, achieved against the
roofline, busiest pipe, peak buffer use), a stacked bar of the totals, a roofline plot with
each call as a point, one sentence per call on what limits it (with the fidelity rule's
flag, ``npusim.studies.fidelity``, on a call predicted closer to a peak than any measurement backs),
and why a call did not run.
"""

import base64
import html
import io
import json

from npusim.chip import load_chip
from npusim.studies.bands import band_cell
from npusim.studies.fidelity import check


def _us(x: float) -> str:
    return f"{x / 1000:.2f} ms" if x >= 1000 else f"{x:.1f} us"


def _n(k: int, word: str) -> str:
    return f"{k} {word}{'' if k == 1 else 's'}"


def headline(result: dict) -> list:
    """A line per chip (its total; under it, the total's error band), then the speedup."""
    chips, totals = result["chips"], result["totals"]
    lines = []
    for c in chips:
        lines.append(f"- **{c}**: {_us(totals[c]['total_us'])} over "
                     f"{_n(totals[c]['calls'], 'call')}"
                     + (f" ({_n(len(totals[c]['missing']), 'call')} not run, see below)"
                        if totals[c]["missing"] else ""))
        if totals[c]["calls"]:
            lines.append(f"  - error band: {totals[c]['band']['text']}")
    if len(chips) == 2 and all(totals[c]["common_us"] for c in chips):
        a, b = chips
        ratio = totals[a]["common_us"] / totals[b]["common_us"]
        fast, slow = (b, a) if ratio >= 1 else (a, b)
        lines.append(f"- **{fast}** is {max(ratio, 1 / ratio):.2f}x as fast as {slow} on the "
                     f"{len(totals['common_calls'])} calls both run.")
    return lines


def call_table(result: dict, chip: str) -> tuple[list, list]:
    head = ["call", "op", "shape", "dtype", "count", "time", "band", "x count", "share",
            "bound", "of roofline", "busiest pipe", "peak buffer"]
    rows = []
    for r in result["rows"]:
        if r["chip"] != chip:
            continue
        if r["status"] != "ok":
            rows.append([str(r["call"]), r["op"], r["shape"], r["dtype"], str(r["count"]),
                         r["status"], "-", "-", "-", "-", "-", "-", "-"])
            continue
        pipe, share = r["busiest"]
        peak = max((r["peak_bytes"] or {}).items(), key=lambda kv: kv[1], default=("-", 0))
        rows.append([str(r["call"]), r["op"], r["shape"], r["dtype"], str(r["count"]),
                     _us(r["time_us"]), band_cell(r["band"]), _us(r["total_us"]),
                     f"{r['share']:.1%}", r["bound"],
                     f"{r['roofline_ratio']:.0%}", f"{pipe} {share:.0%}",
                     f"{peak[0]} {peak[1] / 1024:.0f} KiB"])
    return head, rows


def notes(result: dict) -> list:
    lines = []
    for r in result["rows"]:
        label = f"call {r['call']} ({r['op']} {r['shape']}{', ' + r['note'] if r['note'] else ''})"
        if r["status"] == "ok":
            flag = check(r["chip"], r["roofline"], r["roofline_ratio"], r["bytes"])
            lines.append(f"- {r['chip']}, {label}: {r['why']}"
                         + (f" Fidelity: {flag}." if flag else ""))
        else:
            lines.append(f"- {r['chip']}, {label}: {r['status']}: {r['why']}")
    return lines


def markdown(result: dict, figures: dict) -> str:
    wl = result["workload"]
    out = [f"# Prediction: {wl.name}", "", wl.description, "", "## Totals", "",
           *headline(result), ""]
    for chip in result["chips"]:
        head, rows = call_table(result, chip)
        out += [f"## {chip}", "", "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in rows), ""]
    out += ["## What limits each call", "", *notes(result), "", "## Figures", ""]
    out += [f"![{name}]({name})" for name in figures]
    out += ["", "Times are simulated device time (npusim's model); the host's launch time "
            "between kernels is not included. A band is the worst error of the validation "
            "table's rows of the same operator on the same chip model (npusim validate), not "
            "a statistical interval; \"no row\": no row covers that kind.", ""]
    return "\n".join(out)


def _table_html(head, rows) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def page(result: dict, figures: dict) -> str:
    """The standalone HTML: no link, script or image leaves the file."""
    wl = result["workload"]
    parts = [f"<h1>Prediction: {html.escape(wl.name)}</h1>",
             f"<p>{html.escape(wl.description)}</p>", "<h2>Totals</h2><ul>"]
    parts += [f"<li>{html.escape(line.strip()[2:].replace('**', ''))}</li>"
              for line in headline(result)]
    parts.append("</ul>")
    for chip in result["chips"]:
        parts += [f"<h2>{html.escape(chip)}</h2>", _table_html(*call_table(result, chip))]
    parts += ["<h2>What limits each call</h2><ul>"]
    parts += [f"<li>{html.escape(line[2:])}</li>" for line in notes(result)]
    parts += ["</ul><h2>Figures</h2>"]
    for name, png in figures.items():
        data = base64.b64encode(png).decode()
        parts.append(f'<figure><img alt="{html.escape(name)}" '
                     f'src="data:image/png;base64,{data}"><figcaption>{html.escape(name)}'
                     "</figcaption></figure>")
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}"
             "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
             "padding:3px 6px;text-align:right}img{max-width:100%}")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>npusim prediction: {html.escape(wl.name)}</title><style>{style}</style>"
            "</head><body>" + "".join(parts) + "</body></html>\n")


def figures(result: dict) -> dict:
    """{file name: PNG bytes}: the stacked totals and the roofline plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    for name, draw in (("totals.png", _stacked), ("roofline.png", _roofline)):
        fig = draw(plt, result)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        out[name] = buf.getvalue()
    return out


def _stacked(plt, result):
    chips = result["chips"]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.8 * len(chips)))
    calls = sorted({r["call"] for r in result["rows"]})
    cmap = plt.get_cmap("tab20")
    for y, chip in enumerate(chips):
        left = 0.0
        for k, call in enumerate(calls):
            r = next(r for r in result["rows"] if r["chip"] == chip and r["call"] == call)
            if r["status"] != "ok":
                continue
            ax.barh(y, r["total_us"] / 1000, left=left, color=cmap(k % 20),
                    label=f"{call} {r['op']}" if y == 0 else None)
            left += r["total_us"] / 1000
    ax.set_yticks(range(len(chips)), chips)
    ax.set_xlabel("predicted time of the step (ms), stacked by call")
    if len(calls) <= 12 and ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def _roofline(plt, result):
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for k, chip in enumerate(result["chips"]):
        c = load_chip(chip)
        peak, bw = c.peak_flops("float16") / 1e12, c.hbm_bytes_per_s / 1e12
        xs = [2.0 ** e for e in range(-4, 12)]
        ax.plot(xs, [min(peak, bw * x) for x in xs], color=f"C{k}", lw=1,
                label=f"{chip} roofline (fp16 cube, {c.memory_kind})")
        for r in result["rows"]:
            if r["chip"] == chip and r["status"] == "ok" and r["bytes"] and r["flops"]:
                ax.scatter(r["flops"] / r["bytes"], r["flops"] / r["time_us"] / 1e6,
                           color=f"C{k}", s=16)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop / GM byte)")
    ax.set_ylabel("achieved TFLOPS")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def to_json(result: dict) -> str:
    wl = result["workload"]
    data = {"workload": wl.name, "description": wl.description, "chips": result["chips"],
            "totals": result["totals"], "rows": result["rows"]}
    return json.dumps(data, indent=1, default=str) + "\n"


def write_report(result: dict, out) -> list:
    """report.md, report.html, report.json and the figures into ``out`` (an OutputDir)."""
    figs = figures(result)
    for name, png in figs.items():
        with open(out.file(name), "wb") as f:
            f.write(png)
    with open(out.file("report.md"), "w") as f:
        f.write(markdown(result, figs))
    with open(out.file("report.html"), "w") as f:
        f.write(page(result, figs))
    with open(out.file("report.json"), "w") as f:
        f.write(to_json(result))
    return ["report.md", "report.html", "report.json", *figs]
