"""Performance predictions over a workload: each call timed on each chip, totals and why.

``predict`` turns every (call, chip) of a workload into a point, timing only, and runs them on
the sweep's executor (in-process, a process pool or a Dask cluster). Each row says the call's
time, its time x count and share of the chip's total, what bounds it and a sentence on why.
The bound is read from the run's critical path (``Result.critical_path``): the pipe or kind of
wait with the largest share of the path, with its percentage ("V 84%", "launch 73%", "GM
bandwidth 40%"); the sentence adds the next largest shares and the roofline reached.

Each timed row carries the error band of its kind (``npusim.studies.bands``: the worst error of
the validation rows of that operator on that chip model), and each chip's totals the band of its
total. A call whose operator npusim does not model yet, or that a chip does not support, is a
row saying so, never dropped. Predictions include what the simulator models and nothing else: the
host's launch time between kernels is not in them.
"""

from npusim.studies.bands import band, total_band
from npusim.studies.executor import run_points
from npusim.studies.workload import load_workload

CHIPS = ("atlas-training", "atlas-a2")


def predict(workload, chips=CHIPS, *, jobs: int = 1, scheduler=None,
            on_record=None) -> dict:
    """{"workload", "chips", "rows", "totals"}: a row per (call, chip), in call order."""
    from npusim.chip import load_chip

    wl = workload if hasattr(workload, "calls") else load_workload(workload)
    chips = [load_chip(c).name if not isinstance(c, str) or c.endswith(".toml") else c
             for c in chips]
    for c in chips:
        load_chip(c)
    pairs = [(call, chip) for call in wl.calls for chip in chips]
    todo = [i for i, (call, _) in enumerate(pairs) if call.modelled]
    points = [_point(*pairs[i]) for i in todo]
    records = run_points(points, jobs=jobs, scheduler=scheduler, on_record=on_record)
    rows = [_row(call, chip, None) for call, chip in pairs]
    for i, rec in zip(todo, records, strict=True):
        rows[i] = _row(*pairs[i], rec)
    totals = _totals(rows, chips)
    for r in rows:
        if r["status"] == "ok" and totals[r["chip"]]["total_us"]:
            r["share"] = r["total_us"] / totals[r["chip"]]["total_us"]
    return {"workload": wl, "chips": chips, "rows": rows, "totals": totals}


def _point(call, chip) -> dict:
    return {"op": call.op, "chip": chip, "shape": list(call.shape), "dtype": call.dtype_for(chip),
            "params": call.params, "tiling": call.tiling or None, "numerics": False,
            "check": False, "seed": 0, "explain": True}


def _row(call, chip, rec) -> dict:
    row = {"call": call.index, "note": call.note, "op": call.op,
           "shape": "x".join(map(str, call.shape)), "dtype": call.dtype_for(chip),
           "params": call.params,
           "count": call.count, "chip": chip, "share": 0.0, "band": None}
    if rec is None:
        return {**row, "status": "not modelled yet",
                "why": f"npusim does not model {call.op} yet"}
    if rec["status"] != "ok":
        return {**row, "status": "not supported" if "161002" in rec["error"] or
                "not supported" in rec["error"] else rec["status"], "why": rec["error"]}
    bound, sentence = classify(rec)
    return {**row, "status": "ok", "time_us": rec["time_us"], "band": band(call.op, chip),
            "total_us": rec["time_us"] * call.count, "bound": bound,
            "roofline_ratio": rec["roofline_ratio"], "roofline": rec["bound"],
            "bound_us": rec["bound_us"], "bytes": rec["bytes"], "flops": rec["flops"],
            "busiest": busiest(rec), "peak_bytes": rec["peak_bytes"], "why": sentence,
            "wall_s": rec["wall_s"]}


def busiest(rec: dict) -> tuple:
    busy = rec.get("busy") or {}
    if not busy:
        return ("-", 0.0)
    pipe = max(busy, key=busy.get)
    return (pipe, busy[pipe])


def classify(rec: dict) -> tuple[str, str]:
    """(bound: the largest share of the critical path with its percentage, one sentence on
    what limits the call)."""
    ratio, roof = rec["roofline_ratio"], "cube" if rec["bound"] == "compute" else "memory"
    reach = f"reaches {ratio:.0%} of its {roof} roofline ({rec['bound_us']:.1f} us)"
    shares = rec.get("path") or []
    if not shares:
        return "-", f"{reach}; no critical path recorded."
    (what, share), rest = shares[0], shares[1:]
    then = "; then " + ", ".join(f"{w} {s:.0%}" for w, s in rest) if rest else ""
    return f"{what} {share:.0%}", (f"critical path: {what} {share:.0%} of the time{then}; "
                                   f"{reach}.")


def _totals(rows: list, chips: list) -> dict:
    totals = {}
    both = {r["call"] for r in rows if r["status"] == "ok"}
    for chip in chips:
        ran = {r["call"] for r in rows if r["chip"] == chip and r["status"] == "ok"}
        both &= ran
    for chip in chips:
        mine = [r for r in rows if r["chip"] == chip and r["status"] == "ok"]
        totals[chip] = {"total_us": sum(r["total_us"] for r in mine), "calls": len(mine),
                        "common_us": sum(r["total_us"] for r in mine if r["call"] in both),
                        "missing": [r["call"] for r in rows if r["chip"] == chip
                                    and r["status"] != "ok"],
                        "band": total_band([(r["op"], r["total_us"]) for r in mine], chip)}
    totals["common_calls"] = sorted(both)
    return totals
