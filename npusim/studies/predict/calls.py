"""One row of a prediction: a call on a chip, its time by kernel and by what limits it.

Each timed point's record lists the operator's kernels (``stats["kernels"]``: TransData,
Conv2DBackpropInput, MemSet, ...) with their cycles and the stream's gap before each, and each
kernel's critical path by what (``kernel_paths``: a pipe's work or a kind of wait, the
kernel's launch and gap included). A kernel's time is its cycles plus the gap before it; the
kernels' times sum to the call's simulated time.

Formats. A row has both: ``aclnn_us``, the call as its aclnn operator runs it (every kernel,
the TransData of activations between NCHW and NC1HWC0 included), and ``internal_us``, the call
in graph mode, activations kept in NC1HWC0: the time of its graph form's own run where it has
one (``npusim.studies.predict.graph``), else of its aclnn run. ``form`` says which ran for
the internal time (``5hd`` or ``aclnn``) and ``form_why`` why. The row's other fields (time,
kernels, what limits it) are those of the run in the workload's formats. ``conversion_us`` is
what the aclnn run's TransData of activations and gradients (``is_conversion``) took.
"""

from npusim.studies.validate.bands import band

PIPE_WORK = ("S", "MTE2", "MTE1", "M", "V", "MTE3", "FIX")


def is_conversion(kernel: dict) -> bool:
    """A TransData of an activation or its gradient (not of the weight or its gradient)."""
    return kernel["op_type"] == "TransData" and "weight" not in kernel["name"].lower()


def kernel_type(kernel: dict) -> str:
    """The kernel's type as the report groups it: its CANN op_type, a TransData split into
    the activations' (and their gradients') conversions and the weights'."""
    if kernel["op_type"] != "TransData":
        return kernel["op_type"]
    return "TransData (activations)" if is_conversion(kernel) else "TransData (weights)"


def call_label(call) -> str:
    """The call as a reader knows it: its note, else its op and shape."""
    return call.note or f"{call.op} {'x'.join(map(str, call.shape))}"


ELSEWHERE = "not on this product"


def call_row(call, chip: str, rec, formats: str = "aclnn", spec=None,
             elsewhere: bool = False, graph=None) -> dict:
    """The row of ``call`` on ``chip`` from its point's record (None: not modelled yet, or
    ``elsewhere``: the workload runs the call on other products only); ``spec``: what the chip
    was loaded by (a name or TOML path), which its band checks; ``graph``: {"record": its
    graph form's record or None, "why"} (``npusim.studies.predict.graph``)."""
    row = {"call": call.index, "note": call.note, "label": call_label(call), "op": call.op,
           "shape": "x".join(map(str, call.shape)), "dtype": call.dtype_for(chip),
           "params": call.params, "count": call.count, "chip": chip, "share": None,
           "band": None, "phase": call.phase}
    if elsewhere:
        return {**row, "status": ELSEWHERE, "why": "the workload runs it on "
                f"{', '.join(call.products)} only (this product runs other calls instead)"}
    if rec is None:
        return {**row, "status": "not modelled yet",
                "why": f"npusim does not model {call.op} yet"}
    if rec["status"] != "ok":
        refused = "161002" in rec["error"] or "not supported" in rec["error"]
        return {**row, "status": "not supported" if refused else rec["status"],
                "why": rec["error"]}
    graph = graph or {"record": None, "why": ""}
    rec5 = graph["record"]
    aclnn = timed(rec, call.count)
    internal = timed(rec5, call.count) if rec5 else aclnn
    mine_rec = rec5 if formats == "internal" and rec5 else rec
    times = internal if formats == "internal" else aclnn
    mine = [(k["op_type"], k["us"]) for k in times["kernels"]]
    return {**row, **times, "status": "ok", "kernel_us": mine,
            "aclnn_us": aclnn["time_us"], "internal_us": internal["time_us"],
            "conversion_us": aclnn["conversion_us"], "form": "5hd" if rec5 else "aclnn",
            "form_why": graph["why"],
            "band": band(call.op, spec or chip, kernels=mine), "roofline": mine_rec["bound"],
            "bound_us": mine_rec["bound_us"],
            "bytes": rec["bytes"], "flops": rec["flops"], "busiest": busiest(mine_rec),
            "peak_bytes": mine_rec["peak_bytes"],
            "wall_s": rec["wall_s"] + (rec5["wall_s"] if rec5 else 0.0)}


def kernels(rec: dict) -> list:
    """[{name, op_type, type, us, conversion, path_us}] of the record's kernels (one call)."""
    us_per_cycle = rec["time_us"] / rec["cycles"] if rec["cycles"] else 0.0
    paths = rec.get("kernel_paths") or [{} for _ in rec["kernels"]]
    out = []
    for k, path in zip(rec["kernels"], paths, strict=True):
        out.append({"name": k["name"], "op_type": k["op_type"], "type": kernel_type(k),
                    "us": (k["cycles"] + k.get("wait_cycles", 0)) * us_per_cycle,
                    "conversion": is_conversion(k),
                    "path_us": {w: c * us_per_cycle for w, c in path.items()}})
    return out


def timed(rec: dict, count: int) -> dict:
    """One run's times: one call's (``time_us``: every kernel), by kernel type and by what
    limits it, x count, and what its conversions of activations take."""
    ks = kernels(rec)
    by_kernel, by_limit = {}, {}
    for k in ks:
        by_kernel[k["type"]] = by_kernel.get(k["type"], 0.0) + k["us"]
        for what, us in k["path_us"].items():
            by_limit[what] = by_limit.get(what, 0.0) + us
    time_us = sum(k["us"] for k in ks)
    bound, sentence = classify(by_limit, time_us, rec)
    return {"time_us": time_us, "total_us": time_us * count, "run_us": rec["time_us"],
            "conversion_us": sum(k["us"] for k in ks if k["conversion"]),
            "kernels": [{k2: v for k2, v in k.items() if k2 != "path_us"} for k in ks],
            "by_kernel": by_kernel, "by_limit": by_limit, "bound": bound, "why": sentence,
            "roofline_ratio": rec["bound_us"] / time_us if time_us else 0.0}


def busiest(rec: dict) -> tuple:
    busy = rec.get("busy") or {}
    if not busy:
        return ("-", 0.0)
    pipe = max(busy, key=busy.get)
    return (pipe, busy[pipe])


def classify(by_limit: dict, time_us: float, rec: dict) -> tuple[str, str]:
    """(bound: the largest share of the critical path with its percentage, one sentence on
    what limits the call)."""
    roof = "cube" if rec["bound"] == "compute" else "memory"
    ratio = rec["bound_us"] / time_us if time_us else 0.0
    reach = f"reaches {ratio:.0%} of its {roof} roofline ({rec['bound_us']:.1f} us)"
    shares = sorted(by_limit.items(), key=lambda kv: -kv[1])[:3]
    if not shares or not time_us:
        return "-", f"{reach}; no critical path recorded."
    (what, us), rest = shares[0], shares[1:]
    then = "; then " + ", ".join(f"{w} {u / time_us:.0%}" for w, u in rest) if rest else ""
    return f"{what} {us / time_us:.0%}", (f"critical path: {what} {us / time_us:.0%} of the "
                                          f"time{then}; {reach}.")


def classify_record(rec: dict) -> tuple[str, str]:
    """``classify`` of a whole record from its critical path's largest shares (``path``), as
    the sweep words what limits a point."""
    by_limit = {what: share * rec["time_us"] for what, share in rec.get("path") or []}
    return classify(by_limit, rec["time_us"], rec)


def limit_group(what: str) -> str:
    """A critical path share's family, for the condensed summary: a pipe's work, the kernels'
    launch and the stream's gaps, GM bandwidth, or the other waits."""
    if what in PIPE_WORK:
        return f"{what} work"
    if what in ("launch", "stream gap", "rounding"):
        return "launch and gaps"
    return what
