"""Graph mode's formats for a prediction: which calls run their graph form on NC1HWC0, as their
own study points, and why the others keep their aclnn run.

A framework in graph mode keeps activations and their gradients in NC1HWC0 between layers and
runs no TransData of them. ``formats = "internal"`` predicts that: a call whose operator has a
graph form (``npusim/cases/five_hd.py``: the convolutions, batch norm and their gradients, the
training series' mask pool pair, the elementwise operators on activations) runs it as a point of
its own, simulated (and cached by the study-point cache) like any other; its time is that run's
kernels. It records its critical path only in a workload of the internal formats, whose rows say
what limits the graph form: in the aclnn formats a row shows the graph form's time alone. A call
keeps its aclnn run when its operator has no graph form (the pooling operators, whose CANN
kernels read NCHW; the GEMMs, the loss and the optimizer on ND or flat tensors), when the graph
form does not take this call (``FiveHD.applies``), or when its aclnn run converts no activation
and the graph form would do the same work (A2's BatchNormV3 on NCHW, an elementwise operator
whose C is a multiple of C0): then the two formats share one run, and no second point is
simulated.

Not modelled: the TransData a graph would run around an operator whose kernel reads NCHW (A2's
max pool and the global average pool, and the stem convolution's input images, which arrive
NCHW), and the effect on the L2 of the conversions left out.
"""

from npusim.studies.predict.calls import is_conversion

NCHW_KERNELS = {
    "max_pool2d_with_indices": "MaxPool3DWithArgmaxV2 reads NCDHW (D = 1)",
    "max_pool2d_with_indices_backward": "MaxPool3DGradWithArgmax reads NCDHW (D = 1)",
    "adaptive_avg_pool2d": "ReduceMean reads ND (N x C rows of H x W)",
    "adaptive_avg_pool2d_backward": "Fill and Mul read ND",
    "matmul": "the GEMM runs on ND (its TransData to and from FRACTAL_NZ on the training "
              "series are the GEMM's own formats, not NC1HWC0's, and stay)",
}


def plan(call, chip: str, rec, point: dict, explain: bool = True) -> tuple:
    """(the graph form's point or None, why the call runs as it does in graph mode).
    ``explain``: the point records its critical path (a workload in the aclnn formats shows
    only the graph form's time, so it does not)."""
    from npusim.cases import find_case

    if rec is None or rec["status"] != "ok":
        return None, ""
    case = find_case(call.op)
    if case.five_hd is None:
        return None, ("no graph form: " + NCHW_KERNELS[call.op] if call.op in NCHW_KERNELS
                      else f"no graph form: {call.op} runs on ND or flat tensors")
    dtype = call.dtype_for(chip)
    params = case.parse_params(call.params)
    why_not = case.five_hd.applies(call.shape, dtype, params)
    if why_not:
        return None, f"graph form not for this call: {why_not}"
    converts = any(is_conversion(k) for k in rec["kernels"])
    if not (converts or case.five_hd.pads(call.shape, dtype, params)):
        return None, "its aclnn run converts no activation: the same kernels in graph mode"
    return {**point, "form": "5hd", "explain": explain}, f"graph form: {case.five_hd.kernels}"


def run_graph_forms(pairs: list, todo: list, records: list, points: list, run,
                    explain: bool = True) -> dict:
    """{index into pairs: {"record": the graph form's record or None, "why"}} for every call
    that ran; ``run(points)`` runs the graph forms' points (the study's executor);
    ``explain``: whether they record their critical paths (``plan``)."""
    forms, extra, where = {}, [], []
    for i, rec, point in zip(todo, records, points, strict=True):
        call, chip = pairs[i]
        graph_point, why = plan(call, chip, rec, point, explain)
        forms[i] = {"record": None, "why": why}
        if graph_point is not None:
            extra.append(graph_point)
            where.append(i)
    for i, rec in zip(where, run(extra) if extra else [], strict=True):
        if rec["status"] == "ok":
            forms[i]["record"] = rec
        else:
            forms[i]["why"] = f"its graph form did not run ({rec['status']}: {rec['error']})"
    return forms
