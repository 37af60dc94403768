"""aclnnRelu, aclnnThresholdBackward and aclnnAdd on the elementwise template.

Each operator checks its arguments (``args.py``), makes a non-contiguous input contiguous with
the Contiguous kernel (``l0op::Contiguous``, as the op_api does), computes the template's tiling
and launches its CANN kernel(s):

- ``relu``: Relu.
- ``threshold_backward``: ReluGrad when the threshold is 0, else ThresholdGradV2D (the op_api's
  choice for floating dtypes).
- ``add``: Add when alpha is 1; Axpy (other scaled by alpha, then added) for fp16 and fp32 when
  alpha is not 1; for bf16 (not in Axpy's list) Mul of other by alpha (alpha converted to bf16,
  as ``ConvertToTensor`` does), then Add, two kernels.
- ``muls``: Mul by the scalar in self's dtype (fp16, fp32); Muls through fp32 (bf16). What
  torch_npu runs per tensor for ``torch.optim.SGD``'s momentum on the Atlas training series.

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input], then the
above. The output is written contiguous (aclnn's ViewCopy into a strided ``out`` is not
modelled: the Python API returns a new array).
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.ops.common import resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.elementwise.args import check_add, check_muls, check_relu, check_threshold_backward
from npusim.ops.elementwise.computes import Add, Axpy, Muls, MulsBf16, Relu, ThresholdGrad
from npusim.ops.elementwise.template import elementwise_tiling, launch_elementwise

RELU, THRESHOLD, ADD, MULS = "aclnnRelu", "aclnnThresholdBackward", "aclnnAdd", "aclnnMuls"
AXPY_DTYPES = ("float16", "float32")   # aclnn_add.cpp's AXPY_DTYPE_SUPPORT_LIST (floats)


def _run(chip, mode, numerics, trace, sanitize, jitter) -> OpRun:
    return OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                 jitter=jitter)


def relu(self_, *, chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
         sanitize=True, jitter=None):
    """Run aclnnRelu on ``chip``; ``outputs["out"]`` has self's shape and dtype."""
    chip = resolve_chip(chip)
    x = check_relu(chip, self_)
    compute = Relu()
    t = elementwise_tiling(chip, RELU, compute, x.size, x.dtype, tiling)
    run = _run(chip, mode, numerics, trace, sanitize, jitter)
    x_gm = to_gm(run, "self", x)
    out_gm = run.gm.tensor("out", x.dtype, x.size)
    launch_elementwise(run, compute, (x_gm,), out_gm, t)
    return run.result({"out": (out_gm, x.shape)}, tiling=t)


def threshold_backward(grad_output, self_, threshold=0.0, *, chip="atlas-a2", tiling=None,
                       mode="timed", numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnThresholdBackward on ``chip``: ``outputs["gradInput"]`` is gradOutput where
    self > threshold, else 0 (ReLU's gradient when threshold is 0)."""
    chip = resolve_chip(chip)
    dy, x, thr = check_threshold_backward(chip, grad_output, self_, threshold)
    compute = ThresholdGrad(threshold=thr)
    t = elementwise_tiling(chip, THRESHOLD, compute, dy.size, dy.dtype, tiling)
    run = _run(chip, mode, numerics, trace, sanitize, jitter)
    dy_gm, x_gm = to_gm(run, "gradOutput", dy), to_gm(run, "self", x)
    out_gm = run.gm.tensor("gradInput", dy.dtype, dy.size)
    launch_elementwise(run, compute, (dy_gm, x_gm), out_gm, t)
    return run.result({"gradInput": (out_gm, dy.shape)}, tiling=t)


def add_plan(dtype, alpha: float) -> list:
    """The computes aclnnAdd launches, in order: [Add], [Axpy] or [Mul, Add]."""
    if alpha == 1:
        return [Add()]
    name = np.dtype(dtype).name
    if name in AXPY_DTYPES:
        return [Axpy(alpha=alpha)]
    return [Muls(alpha=float(np.asarray(alpha, np.float32).astype(dtype))), Add()]


def add(self_, other, alpha=1, *, chip="atlas-a2", tiling=None, mode="timed", numerics=True,
        trace=True, sanitize=True, jitter=None):
    """Run aclnnAdd on ``chip``: ``outputs["out"]`` = self + alpha * other (equal shapes)."""
    chip = resolve_chip(chip)
    a, b, alpha = check_add(chip, self_, other, alpha)
    plan = add_plan(a.dtype, alpha)
    t = elementwise_tiling(chip, ADD, plan[-1], a.size, a.dtype, tiling)
    run = _run(chip, mode, numerics, trace, sanitize, jitter)
    a_gm, b_gm = to_gm(run, "self", a), to_gm(run, "other", b)
    out_gm = run.gm.tensor("out", a.dtype, a.size)
    if len(plan) == 2:    # bf16, alpha != 1: Mul(other, alpha) into a workspace, then Add
        scaled = run.gm.tensor("other*alpha", a.dtype, a.size)
        mul_t = elementwise_tiling(chip, ADD, plan[0], a.size, a.dtype, tiling)
        launch_elementwise(run, plan[0], (b_gm,), scaled, mul_t)
        b_gm = scaled
    launch_elementwise(run, plan[-1], (a_gm, b_gm), out_gm, t)
    workspace = a.nbytes if len(plan) == 2 else 0
    return run.result({"out": (out_gm, a.shape)}, tiling=t, workspace_bytes=workspace)


def muls(self_, other, *, chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
         sanitize=True, jitter=None):
    """Run aclnnMuls on ``chip``: ``outputs["out"]`` = self * other (a scalar)."""
    chip = resolve_chip(chip)
    x, value = check_muls(chip, self_, other)
    if np.dtype(x.dtype).name == "bfloat16":
        compute = MulsBf16(alpha=float(np.float32(value)))
    else:
        compute = Muls(alpha=float(np.asarray(value, np.float64).astype(x.dtype)))
    t = elementwise_tiling(chip, MULS, compute, x.size, x.dtype, tiling)
    run = _run(chip, mode, numerics, trace, sanitize, jitter)
    x_gm = to_gm(run, "self", x)
    out_gm = run.gm.tensor("out", x.dtype, x.size)
    launch_elementwise(run, compute, (x_gm,), out_gm, t)
    return run.result({"out": (out_gm, x.shape)}, tiling=t)
