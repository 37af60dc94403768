"""aclnnForeachAddListV2 and aclnnForeachMulScalarV2: what torch_npu dispatches for
``torch.optim.SGD``'s foreach step on Atlas A2.

torch.optim.SGD defaults to its foreach implementation on NPU tensors (``_multi_tensor_sgd``;
``npu`` is in ``_get_foreach_kernels_supported_devices``). With momentum and weight decay, a
step (after the first) is:

    grads = torch._foreach_add(grads, params, alpha=weight_decay)   # aclnnForeachAddListV2
    torch._foreach_mul_(bufs, momentum)                             # aclnnForeachMulScalarV2
    torch._foreach_add_(bufs, grads, alpha=1 - dampening)           # aclnnForeachAddListV2
    torch._foreach_add_(params, bufs, alpha=-lr)                    # aclnnForeachAddListV2

op-plugin (``op_plugin/ops/opapi/ForeachAddKernelNpuOpApi.cpp``,
``ForeachMulScalarKernelOpApi.cpp``) sends each to the V2 aclnn operator in calls of at most 16
tensors (out-of-place add), 24 (in-place add) or 48 (in-place mul) on Ascend 910B and later; on
the Atlas training series (910) it falls back to ATen's per-tensor loop (aclnnAdd and aclnnMuls
per tensor), which these operators do not model.

Each operator checks its arguments (``args.py``), makes a non-contiguous tensor contiguous with
the Contiguous kernel, computes the tiling (``tiling.py``) and launches one kernel
(``kernel.py``): ForeachAddList or ForeachMulScalar. Outputs are keyed ``out[i]``, one per
tensor of the list (aclnn's output list ``out``); the Python API returns new arrays (an in-place
call, out = x1, moves the same bytes).
"""

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.foreach.args import (
    ADD_LIST,
    MUL_SCALAR,
    check_foreach_add_list,
    check_foreach_mul_scalar,
)
from npusim.ops.foreach.kernel import ForeachKernel
from npusim.ops.foreach.tiling import foreach_tiling

__all__ = ["foreach_add_list_v2", "foreach_mul_scalar_v2"]


def _run_foreach(chip, op, kind, lists: dict, scalar: float, tiling, name: str, options):
    first = next(iter(lists.values()))
    dtype = first[0].dtype
    t = foreach_tiling(chip, op, kind, tuple(a.size for a in first), dtype, tiling)
    run = OpRun(chip, **options)
    ins = tuple(tuple(to_gm(run, f"{key}[{i}]", a) for i, a in enumerate(arrays))
                for key, arrays in lists.items())
    outs = tuple(run.gm.tensor(f"out[{i}]", dtype, a.size) for i, a in enumerate(first))
    run.launch(ForeachKernel, block_dim=t.block_dim, name=name,
               args=dict(ins=ins, outs=outs, tiling=t, op=kind, scalar=scalar))
    return run.result({f"out[{i}]": (o, a.shape) for i, (o, a) in
                       enumerate(zip(outs, first, strict=True))}, tiling=t)


def foreach_add_list_v2(x1, x2, alpha=1.0, *, chip="atlas-a2", tiling=None, mode="timed",
                        numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnForeachAddListV2 on ``chip``: ``outputs["out[i]"] = x1[i] + alpha * x2[i]``
    for every tensor i of the lists (x1[i]'s shape and dtype)."""
    chip = resolve_chip(chip)
    a, b, value = check_foreach_add_list(chip, x1, x2, alpha)
    return _run_foreach(chip, ADD_LIST, "add_list", {"x1": a, "x2": b}, value, tiling,
                        "ForeachAddList", dict(mode=mode, numerics=numerics, trace=trace,
                                               sanitize=sanitize, jitter=jitter))


def foreach_mul_scalar_v2(x, scalar, *, chip="atlas-a2", tiling=None, mode="timed",
                          numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnForeachMulScalarV2 on ``chip``: ``outputs["out[i]"] = x[i] * scalar``."""
    chip = resolve_chip(chip)
    a, value = check_foreach_mul_scalar(chip, x, scalar)
    return _run_foreach(chip, MUL_SCALAR, "mul_scalar", {"x": a}, value, tiling,
                        "ForeachMulScalar", dict(mode=mode, numerics=numerics, trace=trace,
                                                 sanitize=sanitize, jitter=jitter))
