"""A prediction's report: report.md, a standalone report.html (figures embedded), report.json
and report.csv, all written from the same blocks (``npusim.studies.predict.blocks``).

The first screen says what the prediction covers (the share of the step's FLOPs and bytes the
modelled calls cover, and what is not modelled), the formats, and the headline: each chip's
time on the calls all chips run, with its error band; the calls a chip does not run are named
apart with their time on the chips that run them. Then the comparison table (a column per chip
and batch), the at-a-glance figure (``npusim.studies.predict.figures``), where the time goes
(by kernel and by what limits it, from the critical path), how sure each band is (the
validation rows behind it), what is not modelled, the calls not compared, a table per chip,
the fidelity rule's flags (``npusim.studies.validate.fidelity``) and how the numbers are made.
"""

import base64
import csv
import html
import io
import json

from npusim.studies.predict import details, sections
from npusim.studies.predict.blocks import Num, one_unit
from npusim.studies.predict.figures import figures
from npusim.studies.predict.step import step_blocks, step_lines

CAPTIONS = {"layers.png": "Every call all chips run (the 40 longest in a larger workload), "
                          "sorted by time, the chips side by side, "
                          "each bar stacked by kernel",
            "totals.png": "Each chip's total on the calls all chips run, by kernel",
            "roofline.png": "Each call against the chip's roofline, labelled with its note"}


def blocks(result: dict) -> list:
    out = [*sections.title(result), *sections.scope(result), *sections.headline(result),
           *step_blocks(result)]
    out += [("figure", "layers.png", CAPTIONS["layers.png"]), *sections.comparison(result),
            ("h2", "The workload"), ("p", result["workload"].description)]
    out += [*details.by_kernel(result), ("figure", "totals.png", CAPTIONS["totals.png"]),
            *details.by_limit(result), *details.how_sure(result),
            *sections.not_modelled(result), *details.excluded_table(result)]
    for chip in result["chips"]:
        out += [*details.chip_table(result, chip), *details.kernel_table(result, chip)]
    out += [("figure", "roofline.png", CAPTIONS["roofline.png"]), *details.flags(result),
            *details.method(result)]
    return [one_unit(b) for b in out]


def notes(result: dict) -> list:
    """The fidelity rule's lines, one a flagged call and chip, as markdown bullets."""
    return [f"- {line}" for line in details.flag_lines(result)]


def text_lines(result: dict) -> list:
    """What the command prints: the scope, the formats and the headline, as plain lines."""
    lines = []
    for b in map(one_unit, [*sections.scope(result), *sections.headline(result)]):
        if b[0] == "ul":
            lines += [f"- {x}" for x in b[1]]
        elif b[0] == "table":
            lines += ["  ".join(b[2]), *("  ".join(str(c) for c in row) for row in b[3])]
        elif b[0] == "p":
            lines.append(b[1])
    return lines + step_lines(result)


def markdown(result: dict) -> str:
    out = []
    for b in blocks(result):
        kind = b[0]
        if kind in ("h1", "h2"):
            out += ["#" * int(kind[1]) + " " + b[1], ""]
        elif kind == "p":
            out += [b[1], ""]
        elif kind == "ul":
            out += [*(f"- {x}" for x in b[1]), ""]
        elif kind == "table":
            out += ["| " + " | ".join(b[2]) + " |", "|" + "---|" * len(b[2]),
                    *("| " + " | ".join(str(c).replace("|", "/") for c in r) + " |"
                      for r in b[3]), ""]
        else:
            out += [f"![{b[2]}]({b[1]})", ""]
    return "\n".join(out)


def _table_html(name, head, rows) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(_cell_html(c) for c in r) + "</tr>" for r in rows)
    return (f'<table data-name="{html.escape(name)}"><thead><tr>{cells}</tr></thead>'
            f"<tbody>{body}</tbody></table>")


def _cell_html(cell) -> str:
    """A cell: a number right-aligned, text left-aligned."""
    kind = ' class="num"' if isinstance(cell, Num) else ""
    return f"<td{kind}>{html.escape(str(cell))}</td>"


def _block_html(b, figs: dict) -> str:
    kind = b[0]
    if kind in ("h1", "h2", "p"):
        return f"<{kind}>{html.escape(b[1])}</{kind}>"
    if kind == "ul":
        return "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in b[1]) + "</ul>"
    if kind == "table":
        return _table_html(*b[1:])
    data = base64.b64encode(figs[b[1]]).decode()
    return (f'<figure><img alt="{html.escape(b[2])}" data-name="{html.escape(b[1])}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(b[2])}'
            "</figcaption></figure>")


def page(result: dict, figs: dict) -> str:
    """The standalone HTML: no link, script or image leaves the file."""
    style = ("body{font-family:sans-serif;max-width:1200px;margin:1.5em auto;color:#222}"
             "table{border-collapse:collapse;font-size:13px;margin:.5em 0}td,th{border:1px "
             "solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}"
             "td.num{text-align:right;white-space:nowrap}"
             "img{max-width:100%}h1{font-size:1.5em}")
    body = "".join(_block_html(b, figs) for b in blocks(result))
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>npusim prediction: {html.escape(result['workload'].name)}</title>"
            f"<link rel=\"icon\" href=\"data:,\"><style>{style}</style></head><body>{body}"
            "</body></html>\n")


def to_json(result: dict) -> str:
    wl = result["workload"]
    data = {"provenance": result.get("provenance"), "workload": wl.name,
            "description": wl.description, "batch": wl.batch,
            "batch_unit": wl.batch_unit, "formats": wl.formats, "chips": result["chips"],
            "chip_specs": result["chip_specs"], "common_calls": result["common_calls"],
            "totals": result["totals"], "excluded": result["excluded"],
            "groups": result["groups"], "coverage": result["coverage"],
            "backing": result["backing"], "rows": result["rows"],
            "tables": {b[1]: {"head": b[2], "rows": [[_plain(c) for c in r] for r in b[3]]}
                       for b in blocks(result) if b[0] == "table"},
            "text": [b[1] for b in blocks(result) if b[0] in ("p", "ul")]}
    return json.dumps(data, indent=1, default=str) + "\n"


def _plain(cell):
    return {"value": cell.value, "unit": cell.unit, "text": cell.text} \
        if isinstance(cell, Num) else cell


def to_csv(result: dict) -> str:
    """Every table cell the report shows, one a line: table, row (its first cells), column,
    the text shown, and for a number its value and unit."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["table", "row", "column", "text", "value", "unit"])
    for b in blocks(result):
        if b[0] != "table":
            continue
        for r in b[3]:
            key = " ".join(str(c) for c in r[:2])
            for head, cell in zip(b[2], r, strict=True):
                value, unit = (cell.value, cell.unit) if isinstance(cell, Num) else ("", "")
                w.writerow([b[1], key, head, str(cell), value, unit])
    return buf.getvalue()


def write_report(result: dict, out) -> list:
    """report.md, report.html, report.json, report.csv and the figures into ``out``."""
    figs = figures(result)
    for name, png in figs.items():
        with open(out.file(name), "wb") as f:
            f.write(png)
    texts = {"report.md": markdown(result), "report.html": page(result, figs),
             "report.json": to_json(result), "report.csv": to_csv(result)}
    for name, text in texts.items():
        with open(out.file(name), "w", encoding="utf-8") as f:
            f.write(text)
    return [*texts, *figs]
