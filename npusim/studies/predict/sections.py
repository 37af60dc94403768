"""The first screen of a prediction report: what is modelled, the formats, the headline (the
chips on the calls all of them run), the calls left out of the comparison, and the comparison
table with a column per chip and batch."""

from npusim.face import provenance
from npusim.studies.predict.blocks import (
    Num,
    call_list,
    column,
    count_num,
    n,
    pct,
    share,
    time_num,
    us,
)
from npusim.studies.validate.bands import band_cell, ratio_band


def title(result: dict) -> list:
    wl = result["workload"]
    unit = f" ({wl.batch_unit})" if wl.batch_unit else ""
    batch = f", batch {wl.batch}{unit}" if wl.batch is not None else ""
    made = [("p", f"Made by {provenance.line(result['provenance'])}.")] \
        if result.get("provenance") else []
    return [("h1", f"Prediction: {wl.name}{batch}, formats {wl.formats}"), *made]


def scope(result: dict) -> list:
    """What the prediction covers and what it leaves out, in two lines, then the formats."""
    cov, wl = result["coverage"], result["workload"]
    ops = ", ".join(sorted({c.op for c in wl.calls}))
    calls = f"Modelled: {n(len(wl.calls), 'call')} ({ops})"
    if not wl.unmodelled:
        return [("ul", [f"{calls}; the workload lists no layer it leaves out (no "
                        "[[unmodelled]] entries): if it lists every layer of the step, the "
                        "step is modelled whole.", *fast_line(result)]),
                ("p", formats_line(result))]
    kinds = {}
    for u in cov["unmodelled"]:
        kinds.setdefault(u["kind"], [0.0, 0.0])
        kinds[u["kind"]][0] += u["flops"]
        kinds[u["kind"]][1] += u["bytes"]
    lines = [f"{calls}: {share(cov['flops_share'] or 0.0)} of the step's FLOPs and "
             f"{share(cov['bytes_share'] or 0.0)} of its bytes (counted from the shapes; see "
             "What is not modelled).",
             "Not modelled: " + "; ".join(
                 f"{k.replace('_', ' ')} {share(f / cov['step_flops'])} of FLOPs, "
                 f"{share(b / cov['step_bytes'])} of bytes" for k, (f, b) in kinds.items()) + "."]
    return [("ul", lines + fast_line(result)), ("p", formats_line(result))]


def fast_line(result: dict) -> list:
    """A fast run (``--fast``) says so: its times are an approximation."""
    if not result.get("fast"):
        return []
    return ["Fast run (--fast): where a kernel's steady tile loop repeats, the repeated periods "
            "were left out and each pipe advanced over them by the periods it ran, their "
            "transfers waiting for L2 and HBM as they were then, so these times approximate a "
            "whole run's; npusim bench --group fast measures how far apart the two are "
            "(docs/guide/demo-and-bench.md, Fast runs)."]


def formats_line(result: dict) -> str:
    chips, totals = result["chips"], result["totals"]
    ok = [r for r in result["rows"] if r["status"] == "ok"]
    if not any(r["conversion_us"] or r["form"] == "5hd" for r in ok):
        return (f"Formats: {result['formats']}; no call of this workload converts "
                "activations between formats (no TransData kernel in its runs), so the "
                "formats do not change its times.")
    graph = ", ".join(f"{us(totals[c]['internal_us'])} with {n(totals[c]['graph_calls'], 'call')}"
                      f" run on NC1HWC0 on {c}" for c in chips)
    if result["formats"] == "internal":
        aclnn = ", ".join(f"{us(totals[c]['aclnn_us'])} on {c}" for c in chips)
        return ("Formats: internal (graph mode: activations and their gradients stay in "
                "NC1HWC0 between layers): each call with a graph form runs it on NC1HWC0 tensors "
                "as its own simulated point, with no TransData of activations; the others run "
                "as aclnn does (each call's form is in the tables per chip). The compared calls "
                f"take {graph}; as aclnn runs them, {aclnn}.")
    cost = ", ".join(f"{us(totals[c]['conversion_us'])} "
                     f"({_share(totals[c]['conversion_us'], totals[c]['total_us'])} of the "
                     f"compared time) on {c}" for c in chips)
    return ("Formats: aclnn (each call converts NCHW to the chip's formats and back, as the "
            f"aclnn operator does): the activations' and gradients' TransData kernels take "
            f"{cost}; in graph mode, activations kept in NC1HWC0 (formats = \"internal\"), "
            f"the compared calls take {graph}.")


def _share(part: float, whole: float) -> str:
    return share(part / whole) if whole else "-"


def headline(result: dict) -> list:
    """The headline table: each chip's time on the calls all chips run, its band ("no band"
    first where no validation row backs it), and how it compares with the slowest, with the
    band of that ratio; then the sentence, and the calls left out."""
    chips, totals, common = result["chips"], result["totals"], result["common_calls"]
    slowest = max(chips, key=lambda c: totals[c]["total_us"], default=None)
    head = ["chip", "calls compared", "predicted time", "error band", "speed-up vs slowest"]
    rows = [[column(c, result["batch"]), str(len(common)), time_num(totals[c]["total_us"]),
             totals[c]["band"]["text"] or "no band", _speedup_cell(totals, slowest, c)]
            for c in chips]
    blocks = [("h2", f"Headline: the {n(len(common), 'call')} all chips run"),
              ("table", "headline", head, rows)]
    if len(chips) >= 2 and common and all(totals[c]["total_us"] for c in chips):
        fast = min(chips, key=lambda c: totals[c]["total_us"])
        others = ", ".join(f"{slowest_word(totals, fast, c)} {c} "
                           f"({speedup_band(totals, fast, c)})" for c in chips if c != fast)
        blocks.append(("p", f"{fast} is the fastest on the {n(len(common), 'call')} every chip "
                            f"runs: {others}."))
    if not common:
        blocks.append(("p", "No call runs on every chip, so there is nothing to compare like "
                            "for like: each chip's own calls are in the step section and the "
                            "tables per chip."))
    if result["excluded"]:
        blocks.append(("p", "Left out of the comparison (a chip does not run them): "
                       + "; ".join(_excluded_line(e) for e in result["excluded"]) + "."))
    return blocks


def _speedup_cell(totals: dict, slowest, chip: str):
    if slowest is None or not totals[chip]["total_us"]:
        return "-"
    ratio = totals[slowest]["total_us"] / totals[chip]["total_us"]
    text = f"{ratio:.2f}x"
    if chip != slowest:
        text += f" ({speedup_band(totals, chip, slowest)})"
    return Num(round(ratio, 3), "x", text)


def speedup_band(totals: dict, fast: str, slow: str) -> str:
    """'band 1.40-2.40x' for slow's time over fast's, each total anywhere in its band; 'no
    band' where either total is not wholly backed by validation rows."""
    span = ratio_band(totals[fast]["band"], totals[slow]["band"])
    if span is None:
        return "no band: not every call's time on both chips is backed by validation rows"
    ratio = totals[slow]["total_us"] / totals[fast]["total_us"]
    return f"band {ratio * span[0]:.2f}-{ratio * span[1]:.2f}x"


def slowest_word(totals: dict, fast: str, other: str) -> str:
    return f"{totals[other]['total_us'] / totals[fast]['total_us']:.2f}x as fast as"


def _excluded_line(e: dict) -> str:
    if not e["ran_us"]:
        return f"call {e['call']} ({e['label']}), run on no chip"
    where = ", ".join(f"{us(t)} on {c}" for c, t in e["ran_us"].items())
    why = ", ".join(c for c in e["not_run"])
    return f"call {e['call']} ({e['label']}), not run on {why}; it takes {where}"


def comparison(result: dict) -> list:
    """A row per call, a column per chip (and batch): time x count with its band."""
    chips, common = result["chips"], result["common_calls"]
    head = ["call", "layer", "op", "count", *(column(c, result["batch"]) for c in chips),
            "band per chip"]
    rows = []
    for call in result["workload"].calls:
        mine = {r["chip"]: r for r in result["rows"] if r["call"] == call.index}
        cells = [time_num(mine[c]["total_us"]) if mine[c]["status"] == "ok" else
                 mine[c]["status"] for c in chips]
        bands = "; ".join(f"{c} {_band(mine[c])}" for c in chips if mine[c]["status"] == "ok")
        mark = "" if call.index in common else " (not compared)"
        rows.append([str(call.index), mine[chips[0]]["label"] + mark, call.op, str(call.count),
                     *cells, bands])
    return [("h2", "Every call, time x count per chip"), ("table", "comparison", head, rows)]


def _band(row: dict) -> str:
    return band_cell(row["band"]) if row["status"] == "ok" else "-"


def not_modelled(result: dict) -> list:
    cov = result["coverage"]
    head = ["layer", "kind", "shape", "dtype", "count", "FLOPs", "bytes", "share of FLOPs",
            "share of bytes", "how counted"]
    rows = [["modelled calls (all)", "-", "-", "-", "-", count_num(cov["modelled_flops"], "FLOP"),
             count_num(cov["modelled_bytes"], "B"), pct(cov["flops_share"] or 0.0),
             pct(cov["bytes_share"] or 0.0), "as npusim's roofline counts each call: "
             "case.flops and every tensor in and out once"]]
    for u in cov["unmodelled"]:
        rows.append([u["note"], u["kind"], u["shape"], u["dtype"], str(u["count"]),
                     count_num(u["flops"], "FLOP"), count_num(u["bytes"], "B"),
                     pct(u["flops"] / cov["step_flops"] if cov["step_flops"] else 0.0),
                     pct(u["bytes"] / cov["step_bytes"] if cov["step_bytes"] else 0.0),
                     u["how"]])
    blocks = [("h2", "What is not modelled"), ("table", "not_modelled", head, rows)]
    if cov["uncounted_calls"]:
        blocks.append(("p", f"Not counted ({call_list(cov['uncounted_calls'])}): no chip ran "
                            "them, so their FLOPs and bytes are unknown here."))
    return blocks
