"""The step as a whole: its time by phase (forward, backward, optimizer) and by operator, and
in both formats side by side.

Computed over the calls every chip runs (``summary.common_calls``), from the same rows the
headline sums. Formats: the step "as aclnn runs it" sums each call's aclnn run; "with
activations kept in NC1HWC0" (``formats = "internal"``, graph mode) sums each call's graph
form, simulated as a point of its own on NC1HWC0 tensors where the call has one, else its aclnn
run (``npusim.studies.predict.graph``). The phases and operators are in the workload's formats.
"""

from npusim.studies.predict.blocks import column, n, pct, time_num, us
from npusim.studies.validate.steps import formats_us, rows_elsewhere, step_errors
from npusim.studies.validate.steps import lines as row_lines


def step_summary(rows: list, chips: list, common: list) -> dict:
    """{chip: {"phases": {phase: us}, "ops": {op: us}, "aclnn_us", "internal_us", "own"}}: on
    the calls every chip runs, or, where there is none (an MoE layer's operators are Atlas A2
    only), on each chip's own calls (``own``)."""
    out = {}
    for chip in chips:
        mine = [r for r in rows if r["chip"] == chip and r["status"] == "ok"
                and (r["call"] in common or not common)]
        phases, ops = {}, {}
        for r in mine:
            phase = r.get("phase") or "step"
            phases[phase] = phases.get(phase, 0.0) + r["total_us"]
            ops[r["op"]] = ops.get(r["op"], 0.0) + r["total_us"]
        out[chip] = {"phases": phases, "ops": dict(sorted(ops.items(), key=lambda kv: -kv[1])),
                     "aclnn_us": formats_us(mine, "aclnn"),
                     "internal_us": formats_us(mine, "internal"),
                     "graph_calls": sum(r["form"] == "5hd" for r in mine),
                     "own": not common, "calls": len(mine)}
    return out


def has_phases(workload) -> bool:
    return any(c.phase for c in workload.calls)


def step_blocks(result: dict) -> list:
    """The report's step section: phases, both formats, operators; nothing for a workload
    whose calls name no phase and convert no activation."""
    chips, step = result["chips"], result["step"]
    phased = has_phases(result["workload"])
    converts = any(step[c]["aclnn_us"] != step[c]["internal_us"] for c in chips)
    if not (phased or converts):
        return []
    blocks = [("h2", "The step: by phase, in both formats, by operator")]
    if not result["common_calls"]:
        blocks.append(("p", "No call runs on every chip, so each chip's column is the calls it "
                            "runs itself (" + ", ".join(f"{step[c]['calls']} on {c}"
                                                        for c in chips) + "), not a comparison."))
    if phased:
        blocks.append(_share_table(result, "phases", "phase", PHASE_ORDER))
    if converts:
        blocks.append(_formats_table(result))
    blocks.append(_share_table(result, "ops", "operator", None))
    return blocks + measured_blocks(result)


def measured_blocks(result: dict) -> list:
    """The whole-step rows of this workload (``npusim.studies.validate.steps``): each one's
    error at this batch, and the batches of the others."""
    found, other = step_errors(result), rows_elsewhere(result)
    if not (found or other):
        return []
    out = [("h2", "The step against published whole-step measurements")]
    if found:
        out.append(("ul", row_lines(found)))
    if other:
        batches = sorted({r.batch for r in other})
        out.append(("p", f"{len(other)} more rows measure this workload at batch "
                         f"{', '.join(map(str, batches))}: npusim predict "
                         f"{result['workload'].name} --batch N prints them (npusim validate "
                         "--steps runs every row)."))
    out.append(("p", "Published step times include what npusim does not predict: the host's "
                     "launches and the gaps between kernels, the input pipeline, the "
                     "framework's fusions and, with 8 cards, the all-reduce "
                     "(npusim/studies/validate/steps.toml says per row)."))
    return out


PHASE_ORDER = ("forward", "backward", "optimizer", "step")


def _share_table(result: dict, key: str, what: str, order) -> tuple:
    chips, step = result["chips"], result["step"]
    every = {k: max(step[c][key].get(k, 0.0) for c in chips) for c in chips for k in step[c][key]}
    names = [k for k in (order or sorted(every, key=lambda k: -every[k])) if k in every]
    head = [what]
    for c in chips:
        head += [column(c, result["batch"]), f"share on {c}"]
    rows = []
    for name in names:
        row = [name]
        for c in chips:
            t, whole = step[c][key].get(name, 0.0), sum(step[c][key].values())
            row += [time_num(t), pct(t / whole if whole else 0.0)]
        rows.append(row)
    return ("table", f"step_{key}", head, rows)


def _formats_table(result: dict) -> tuple:
    chips, step = result["chips"], result["step"]
    head = ["formats", *(column(c, result["batch"]) for c in chips)]
    rows = [["aclnn: each call converts NCHW to NC1HWC0 and back (single-operator mode)",
             *(time_num(step[c]["aclnn_us"]) for c in chips)],
            ["internal: activations and gradients stay in NC1HWC0 (graph mode: each call's "
             "graph form on NC1HWC0 where it has one)",
             *(time_num(step[c]["internal_us"]) for c in chips)],
            ["calls run in their graph form", *(str(step[c]["graph_calls"]) for c in chips)]]
    return ("table", "step_formats", head, rows)


def step_lines(result: dict) -> list:
    """The step's phases and both formats in a line per chip, for the command's output."""
    if "step" not in result or not has_phases(result["workload"]):
        return []
    lines = []
    for chip in result["chips"]:
        s = result["step"][chip]
        whole = sum(s["phases"].values())
        if not whole:
            continue
        parts = ", ".join(f"{p} {us(s['phases'][p])} ({s['phases'][p] / whole:.0%})"
                          for p in PHASE_ORDER if p in s["phases"])
        own = f" (its own {s['calls']} calls: none runs on every chip)" if s["own"] else ""
        lines.append(f"{chip}: step{own} {us(whole)} = {parts}; formats aclnn "
                     f"{us(s['aclnn_us'])}, internal {us(s['internal_us'])} "
                     f"({n(s['graph_calls'], 'call')} in their graph form on NC1HWC0)")
    return lines + row_lines(step_errors(result))
