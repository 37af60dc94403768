"""The rest of a prediction report: where the time goes (by kernel, by what limits it), how sure
each number is (the validation rows behind it), the calls left out of the comparison, and a
table per chip."""

from npusim.studies.predict.blocks import Num, call_list, column, n, pct, time_num, us
from npusim.studies.validate.bands import band_cell
from npusim.studies.validate.fidelity import check


def by_kernel(result: dict) -> list:
    """The compared calls' time by kernel type, a column pair per chip."""
    head, rows = _share_table(result, "by_kernel", "kernel")
    return [("h2", "Where the time goes"),
            ("p", "By kernel (the operator's kernels as msprof names them, from each run's "
                  "stats; a kernel's time includes the stream's gap before it; TransData "
                  "(activations) converts the activations and their gradients, TransData "
                  "(weights) the weight and its gradient), over the "
                  f"{n(len(result['common_calls']), 'call')} all chips run:"),
            ("table", "by_kernel", head, rows)]


def _share_table(result: dict, key: str, first: str) -> tuple:
    """(head, rows): each name under ``totals[chip][key]``, its time and share per chip."""
    chips, totals = result["chips"], result["totals"]
    names = list(dict.fromkeys(k for c in chips for k in totals[c][key]))
    head = [first, *(f"{column(c, result['batch'])} {w}" for c in chips
                     for w in ("time", "share"))]
    rows = [[name, *(x for c in chips for x in _pair(totals[c][key].get(name, 0.0),
                                                      totals[c]["total_us"]))]
            for name in names]
    return head, rows


def _pair(x: float, whole: float) -> list:
    return [time_num(x), pct(x / whole if whole else 0.0)]


def by_limit(result: dict) -> list:
    """The compared calls' critical paths, summed: each pipe's work and each kind of wait."""
    chips, totals = result["chips"], result["totals"]
    head, rows = _share_table(result, "by_limit", "on the critical path")
    lines = [f"{c}: " + "; ".join(f"{g['limit']} holds {call_list(g['calls'])} "
                                  f"({us(g['us'])}, {g['us'] / totals[c]['total_us']:.0%})"
                                  for g in result["groups"][c]) for c in chips
             if totals[c]["total_us"]]
    return [("p", "By what limits it: each call's critical path (npusim run --explain), its "
                  "steps' time by the pipe whose work it was or the kind of wait, summed over "
                  "the calls x count:"),
            ("table", "by_limit", head, rows),
            ("p", "Each call by the largest share of its path (launch and gaps: the kernels' "
                  "start-up and the stream's gaps between an operator's kernels):"),
            ("ul", lines)]


def how_sure(result: dict) -> list:
    head = ["op", "chip", "band", "validation row", "measurement", "source", "error"]
    rows = []
    for b in result["backing"]:
        if not b["rows"]:
            rows.append([b["op"], b["chip"], b["text"], "-", "-", "-", "-"])
        for i, v in enumerate(b["rows"]):      # the band's words once per kind and chip
            rows.append([b["op"], b["chip"], b["text"] if i == 0 else "", v["id"],
                         v["measurement"], v["source"],
                         Num(v["error"], "fraction", f"{v['error']:+.1%}")])
    return [("h2", "How sure: the measurements behind each band"),
            ("p", "A call's band is the worst error npusim has shown on the validation "
                  "table's rows of the same operator on the same shipped chip model that ran "
                  "the call's kernels, none of them calibrated on (npusim validate); not a "
                  "statistical interval. A band from fewer than 3 rows says so. A total's "
                  "band weights each call's backed time by its band. Rows per kind of call "
                  "and chip:"),
            ("table", "backing", head, rows)]


def excluded_table(result: dict) -> list:
    if not result["excluded"]:
        return []
    chips = result["chips"]
    head = ["call", "layer", "op", *(column(c, result["batch"]) for c in chips), "why not"]
    rows = [[str(e["call"]), e["label"], e["op"],
             *(time_num(e["ran_us"][c]) if c in e["ran_us"] else "not run" for c in chips),
             "; ".join(f"{c}: {why}" for c, why in e["not_run"].items())]
            for e in result["excluded"]]
    return [("h2", "Calls not compared"),
            ("p", "Not every chip runs these; their time (x count) on the chips that do is "
                  "shown here and counted in no total above."),
            ("table", "excluded", head, rows)]


def chip_table(result: dict, chip: str) -> list:
    head = ["call", "layer", "shape", "dtype", "count", "time", "band", "x count", "share",
            "bound", "of roofline", "top kernel", "busiest pipe", "peak buffer"]
    rows = []
    for r in (r for r in result["rows"] if r["chip"] == chip):
        if r["status"] != "ok":
            rows.append([str(r["call"]), r["label"], r["shape"], r["dtype"], str(r["count"]),
                         r["status"], *["-"] * 8])
            continue
        pipe, busy = r["busiest"]
        peak = max((r["peak_bytes"] or {}).items(), key=lambda kv: kv[1], default=("-", 0))
        top = max(r["by_kernel"].items(), key=lambda kv: kv[1], default=("-", 0.0))
        rows.append([str(r["call"]), r["label"], r["shape"], r["dtype"], str(r["count"]),
                     time_num(r["time_us"]), band_cell(r["band"]), time_num(r["total_us"]),
                     pct(r["share"]) if r["share"] is not None else "not compared", r["bound"],
                     pct(r["roofline_ratio"]), f"{top[0]} {top[1] / r['time_us']:.0%}",
                     f"{pipe} {busy:.0%}", f"{peak[0]} {peak[1] / 1024:.0f} KiB"])
    return [("h2", f"{column(chip, result['batch'])}, call by call"),
            ("table", f"calls_{chip}", head, rows)]


def kernel_table(result: dict, chip: str) -> list:
    """Each call's time (x count) on ``chip`` by kernel type, a column per type; then, in the
    other format, its time x count, and which form ran in graph mode and why (its graph form
    on NC1HWC0, or its aclnn run: ``npusim.studies.predict.graph``)."""
    mine = [r for r in result["rows"] if r["chip"] == chip and r["status"] == "ok"]
    names = list(dict.fromkeys(k for r in mine for k in r["by_kernel"]))
    if not mine:
        return []
    internal = result["formats"] == "internal"
    head = ["call", "layer", *names, "x count",
            "as aclnn runs it, x count" if internal else "of which conversions",
            *([] if internal else ["in graph mode, x count"]), "graph mode runs"]
    rows = []
    for r in mine:
        other = ([time_num(r["aclnn_us"] * r["count"])] if internal else
                 [time_num(r["conversion_us"] * r["count"]),
                  time_num(r["internal_us"] * r["count"])])
        rows.append([str(r["call"]), r["label"],
                     *(time_num(r["by_kernel"][k] * r["count"]) if k in r["by_kernel"] else "-"
                       for k in names), time_num(r["total_us"]), *other,
                     f"{r['form']}: {r['form_why']}"])
    return [("p", f"{chip}: each call's time x count by kernel (formats {result['formats']}), "
                  "and in the other formats"),
            ("table", f"kernels_{chip}", head, rows)]


def flag_lines(result: dict) -> list:
    """A line per call the fidelity rule flags (or backs) on a chip."""
    lines = []
    for r in result["rows"]:
        if r["status"] != "ok":
            continue
        flag = check(r["chip"], r["roofline"], r["roofline_ratio"], r["bytes"])
        if flag:
            label = r.get("label") or r.get("note") or r["op"]
            lines.append(f"{r['chip']}, call {r['call']} ({label}): Fidelity: {flag}.")
    return lines


def flags(result: dict) -> list:
    lines = flag_lines(result)
    return [("h2", "Fidelity flags"), ("ul", lines)] if lines else []


def method(result: dict) -> list:
    graph = any(r["status"] == "ok" and r["form"] == "5hd" for r in result["rows"])
    how = ("Graph mode (formats internal, and the step's second format): a call whose "
           "operator has a graph form (the convolutions, batch norm, their gradients, the "
           "elementwise operators on activations) runs it on NC1HWC0 tensors as its own "
           "timing-only run, without the TransData of activations and gradients; a call "
           "without one, or whose aclnn run converts nothing, keeps its aclnn run (the last "
           "column of each chip's kernel table says which and why). " if graph else "")
    return [("h2", "How these numbers are made"),
            ("p", "Times are simulated device time from npusim's discrete-event runs, one "
                  "timing-only run per call and chip; a call's time is the sum of its "
                  "kernels' (each with the stream's gap before it); the host's launch time "
                  "between operators is not included. " + how + "FLOP and byte shares are "
                  "accounting from the shapes, not timing.")]
