"""A prediction's summary: the chips compared like for like, and what the workload leaves out.

- ``common_calls``: the calls every chip runs; the totals, shares, time by kernel and by what
  limits it, and every chart compare the chips on these only;
- ``excluded``: each other call, why each chip that does not run it does not, and its time on
  the chips that do (never summed into the comparison);
- ``totals[chip]``: the common calls' time (``total_us``), its error band
  (``npusim.studies.validate.bands.total_band``), the conversions' time, the time in each
  format (``aclnn_us``, ``internal_us``) and how many calls ran their graph form
  (``graph_calls``), and the excluded calls' time apart (``excluded_us``);
- ``groups[chip]``: the common calls grouped by the largest share of their critical path
  (``npusim.studies.predict.calls.limit_group``), for a summary in a few lines;
- ``coverage``: the share of the step's FLOPs and bytes the modelled calls cover
  (``npusim.studies.predict.step_accounting``);
- ``backing``: per kind of call and chip, the validation rows behind its band;
- ``step``: per chip, the compared time by phase and by operator, and in both formats
  (``npusim.studies.predict.step``).
"""

from npusim.studies.predict.calls import ELSEWHERE, limit_group
from npusim.studies.predict.step import step_summary
from npusim.studies.predict.step_accounting import KINDS, count
from npusim.studies.validate.bands import total_band


def summarise(wl, chips: list, rows: list, specs: dict | None = None,
              products: dict | None = None) -> dict:
    """``products``: {chip: its product}, for the coverage of calls some products run."""
    common = common_calls(rows, chips)
    totals = {chip: chip_totals(rows, chip, common, (specs or {}).get(chip, chip))
              for chip in chips}
    for r in rows:
        if r["status"] == "ok" and r["call"] in common and totals[r["chip"]]["total_us"]:
            r["share"] = r["total_us"] / totals[r["chip"]]["total_us"]
    return {"common_calls": common, "totals": totals, "excluded": excluded(rows, chips, common),
            "groups": {chip: groups(rows, chip, common) for chip in chips},
            "coverage": coverage(wl, rows, (products or {}).get(chips[0]) if chips else None),
            "backing": backing(rows),
            "step": step_summary(rows, chips, common)}


def common_calls(rows: list, chips: list) -> list:
    """The calls every chip runs, or leaves out by the workload's design (``products``); one
    left out by design on every chip is not common."""
    ran, used = {}, {}
    for r in rows:
        ran.setdefault(r["call"], set())
        if r["status"] in ("ok", ELSEWHERE):
            ran[r["call"]].add(r["chip"])
        used[r["call"]] = used.get(r["call"], False) or r["status"] == "ok"
    return sorted(c for c, on in ran.items() if on >= set(chips) and used[c])


def chip_totals(rows: list, chip: str, common: list, spec=None) -> dict:
    mine = [r for r in rows if r["chip"] == chip and r["status"] == "ok"]
    same = [r for r in mine if r["call"] in common]
    by_kernel, by_limit = {}, {}
    for r in same:
        for name, us in r["by_kernel"].items():
            by_kernel[name] = by_kernel.get(name, 0.0) + us * r["count"]
        for what, us in r["by_limit"].items():
            by_limit[what] = by_limit.get(what, 0.0) + us * r["count"]
    return {"total_us": sum(r["total_us"] for r in same), "calls": len(same),
            "band": total_band([(r["op"], r["total_us"], r["kernel_us"]) for r in same],
                               spec or chip),
            "excluded_us": sum(r["total_us"] for r in mine if r["call"] not in common),
            "missing": [r["call"] for r in rows if r["chip"] == chip
                        and r["status"] not in ("ok", ELSEWHERE)],
            "conversion_us": sum(r["conversion_us"] * r["count"] for r in same),
            "aclnn_us": sum(r["aclnn_us"] * r["count"] for r in same),
            "internal_us": sum(r["internal_us"] * r["count"] for r in same),
            "graph_calls": sum(r["form"] == "5hd" for r in same),
            "by_kernel": dict(sorted(by_kernel.items(), key=lambda kv: -kv[1])),
            "by_limit": dict(sorted(by_limit.items(), key=lambda kv: -kv[1]))}


def excluded(rows: list, chips: list, common: list) -> list:
    """[{call, label, op, not_run: {chip: why}, ran_us: {chip: time x count}}]."""
    out = {}
    for r in rows:
        if r["call"] in common or r["status"] == ELSEWHERE:
            continue
        e = out.setdefault(r["call"], {"call": r["call"], "label": r["label"], "op": r["op"],
                                       "not_run": {}, "ran_us": {}})
        if r["status"] == "ok":
            e["ran_us"][r["chip"]] = r["total_us"]
        else:
            e["not_run"][r["chip"]] = f"{r['status']}: {r['why']}"
    return list(out.values())


def groups(rows: list, chip: str, common: list) -> list:
    """[{limit, calls, us}], largest time first: the common calls by the family of the largest
    share of their critical path."""
    out = {}
    for r in rows:
        if r["chip"] != chip or r["status"] != "ok" or r["call"] not in common:
            continue
        top = max(r["by_limit"].items(), key=lambda kv: kv[1])[0] if r["by_limit"] else "-"
        g = out.setdefault(limit_group(top), {"limit": limit_group(top), "calls": [], "us": 0.0})
        g["calls"].append(r["call"])
        g["us"] += r["total_us"]
    return sorted(out.values(), key=lambda g: -g["us"])


def coverage(wl, rows: list, product: str | None = None) -> dict:
    """The modelled calls' FLOPs and bytes (as the roofline counts them, from the first chip
    that ran each; x count) against the unmodelled layers' (from their shapes). A call the
    workload runs on some products only counts when ``product`` (the first chip's) is one."""
    flops = nbytes = 0.0
    counted, uncounted = [], []
    for call in wl.calls:
        if product and not call.runs_on(product):
            continue
        ran = next((r for r in rows if r["call"] == call.index and r["status"] == "ok"), None)
        if ran is None:
            uncounted.append(call.index)
            continue
        counted.append(call.index)
        flops += ran["flops"] * call.count
        nbytes += ran["bytes"] * call.count
    extra = [_unmodelled(u) for u in wl.unmodelled]
    all_flops = flops + sum(u["flops"] for u in extra)
    all_bytes = nbytes + sum(u["bytes"] for u in extra)
    return {"modelled_flops": flops, "modelled_bytes": nbytes, "counted_calls": counted,
            "uncounted_calls": uncounted, "unmodelled": extra,
            "flops_share": flops / all_flops if all_flops else None,
            "bytes_share": nbytes / all_bytes if all_bytes else None,
            "step_flops": all_flops, "step_bytes": all_bytes}


def _unmodelled(u) -> dict:
    flops, nbytes = count(u.kind, u.shape, u.params, u.dtype)
    return {"index": u.index, "kind": u.kind, "note": u.note or u.kind,
            "shape": "x".join(map(str, u.shape)), "dtype": u.dtype, "count": u.count,
            "flops": flops * u.count, "bytes": nbytes * u.count, "how": KINDS[u.kind].how}


def backing(rows: list) -> list:
    """[{op, chip, text, rows: [{id, source, measurement, error}]}]: the measurements behind
    each band the report uses."""
    from npusim.studies.validate.study import default_status, default_table

    table = {r.id: r for r in default_table()}
    errors = default_status()["errors"]
    seen, out = set(), []
    for r in rows:
        if r["status"] != "ok" or (r["op"], r["chip"], r["band"]["text"]) in seen:
            continue
        seen.add((r["op"], r["chip"], r["band"]["text"]))
        ids = r["band"]["ids"]
        out.append({"op": r["op"], "chip": r["chip"], "text": r["band"]["text"],
                    "rows": [{"id": i, "source": table[i].source,
                              "measurement": table[i].measurement,
                              "error": float(errors[i])} for i in ids]})
    return out
