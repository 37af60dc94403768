"""aclnnConvolutionBackward: gradInput, gradWeight and gradBias of a 1D/2D/3D convolution.

The operator runs as aclnn decomposes it (kernels.md §2(b)), as a sequence of kernels on one GM:
Contiguous copies of strided inputs; TransData+Cast of gradOutput and input to NC1HWC0 (per
group, channels padded to C0) in the cube's compute dtype and of the weight to dx's FRACTAL_Z
B matrix; the dx cube kernel (``ops/convolution/cube.py``) into an ND workspace, TransData back to
NCHW; the dw cube kernel into an fp32 workspace (atomic adds; when ``deterministic``, per-part
partials summed in a fixed order by vector cores: inside one mixed AIC/AIV kernel on Atlas A2,
``ops/convolution/dw_mixed.py``, a kernel of its own on coupled chips), TransData+Cast back to the
weight's layout and dtype;
the gradBias ReduceSum kernel (``ops/convolution/vector.py``). All of them are charged in the
timing.

Kernels in ``stats["kernels"]`` in launch order, by ``op_type`` (msprof's OP Type; ``name``
adds the tensor, e.g. ``TransData(gradOutput.5hd)``): [Contiguous per strided input],
TransData (gradOutput), then for gradInput TransData (weight), the dx kernel (Conv2DBackpropInput
for 1D/2D, Conv3DBackpropInputV2 for 3D; Conv2D / Conv3DV2 when ``transposed``), TransData
(gradInput); for gradWeight TransData (input), [MemSet of the fp32 workspace when a TBE dw
kernel adds atomically: the 2D one when ``dw_k_parts > 1``, the 3D one always; not
deterministic], the dw kernel (Conv2DBackpropFilter for 1D/2D; for 3D the TBE
Conv3DBackpropFilter or the Ascend C Conv3DBackpropFilterV2 as aclnn picks them,
``ops/convolution/route.py``; V2 also for a deterministic dw on Atlas A2: a MIX_AIC kernel whose
vector cores sum the partials; V2 zeroes its output itself),
[ReduceDwPartials when deterministic on a coupled chip (Atlas training: the TBE deterministic
binary's schedule is not public, so the sum stays a vector kernel of its own)], [with groups: a
MemSet and TransData(gradWeight.groups), the grouped fractal into one of all channels
(``ops/transdata/groups.py``)], TransData (gradWeight); for gradBias ReduceSum.

A grouped dw runs on enlarged groups as CANN's does (``ops/convolution/geometry.group_enlarge``):
its NC1HWC0 inputs hold several groups' channels per C0 block, not one group padded to C0. The dx
kernel keeps one group per layout group (CANN enlarges there too; not modelled), so when both
gradients of such a convolution are asked for, gradOutput is converted twice.

cubeMathType picks the cube's dtype (seed; kernels.md §2(a)): on Atlas A2 fp32 inputs run in
fp32 (0), HF32 (1 or 3, SetHF32Mode) or fp16 (2), bf16 in bf16 (2 is an error); on Atlas
training fp32 inputs run in fp16 (1 or 2; 0 and 3 are errors). Mixed input dtypes are promoted
(fp16 + bf16 -> fp32). Not modelled: the A2 matmul shortcuts (Bp2Mm), the pre/post Dilation
ops and the 1x1 dw trick of §2(b)3 (the general kernels compute the same results), the C04
layout, the D<->H swap, and the empty-tensor shortcuts beyond returning zero-filled workspaces
when N or C is 0.
"""

import numpy as np

from npusim.dtypes import name_of
from npusim.engine.sequence import OpRun
from npusim.ops.common import ceil_div, resolve_chip, round_up
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.memset import launch_memset
from npusim.ops.convolution.args import check_convolution_backward
from npusim.ops.convolution.cube import DwKernel, DxKernel
from npusim.ops.convolution.dw_mixed import DwMixedKernel, workspace_elements
from npusim.ops.convolution.geometry import dw_problem, dx_problem
from npusim.ops.convolution.route import aclnn_dw_v2
from npusim.ops.convolution.tiling import conv_tiling
from npusim.ops.convolution.tiling_fit import dw_block_grid, dw_l1_bytes, dx_l1_bytes
from npusim.ops.convolution.vector import BiasGradKernel, PartialSumKernel
from npusim.ops.transdata.groups import plan_dw_groups, ungrouped_shape
from npusim.ops.transdata.kernel import run_transdata
from npusim.ops.transdata.plan import plan_dw_out, plan_from_nd, plan_to_5hd, plan_weight_dx


def convolution_backward(grad_output, input, weight, *, bias_sizes, stride, padding,  # noqa: A002
                         dilation, transposed=False, output_padding=None, groups=1,
                         output_mask=(True, True, True), cube_math_type=1, chip="atlas-a2",
                         tiling=None, mode="timed", numerics=True, trace=True, sanitize=True,
                         jitter=None):
    """Run aclnnConvolutionBackward on ``chip``; outputs gradInput, gradWeight, gradBias (None
    for those ``output_mask`` does not ask for). ``output_padding=None`` is zeros, one per
    spatial dimension (the aclnn API, which has no default, requires it)."""
    chip = resolve_chip(chip)
    if output_padding is None:   # zeros, one per spatial dimension of the input
        output_padding = (0,) * max(np.ndim(input) - 2, 0) if input is not None else None
    spec = check_convolution_backward(
        chip, grad_output, input, weight, bias_sizes=bias_sizes, stride=stride,
        padding=padding, dilation=dilation, transposed=transposed,
        output_padding=output_padding, groups=groups, output_mask=output_mask,
        cube_math_type=cube_math_type)
    work = not spec.empty
    dx = dx_problem(spec.n, groups, spec.cin, spec.cout, spec.axes, transposed) \
        if spec.mask[0] and work else None
    dw = dw_problem(spec.n, groups, spec.cin, spec.cout, spec.axes, transposed, enlarge=True) \
        if spec.mask[1] and work else None
    cd = np.dtype(spec.compute_dtype)
    c0 = 32 // cd.itemsize
    t = conv_tiling(chip, dx, dw, c0, cd.itemsize, spec.cout, tiling,
                    dw_v2=dw is not None and aclnn_dw_v2(spec, chip))
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    ctx = _Ctx(run, spec, t, cd, c0)
    ctx.gm_inputs()
    out = {"gradInput": ctx.grad_input(dx) if spec.mask[0] else None,
           "gradWeight": ctx.grad_weight(dw) if spec.mask[1] else None,
           "gradBias": ctx.grad_bias() if spec.mask[2] else None}
    return run.result(out, tiling=t, workspace_bytes=ctx.workspace)


class _Ctx:
    """One call's kernels on one OpRun: the GM tensors and the order the kernels run in."""

    def __init__(self, run, spec, t, cd, c0):
        self.run, self.spec, self.t, self.cd, self.c0 = run, spec, t, cd, c0
        self.workspace = 0
        self.dy5 = {}   # gradOutput in NC1HWC0 by the real groups per layout group

    def tensor(self, name, dtype, count):
        self.workspace += count * np.dtype(dtype).itemsize
        return self.run.gm.tensor(name, dtype, count)

    def gm_inputs(self):
        s = self.spec
        self.dy = to_gm(self.run, "gradOutput", s.grad_output)
        self.x = to_gm(self.run, "input", s.input) if s.mask[0] or s.mask[1] else None
        self.w = to_gm(self.run, "weight", s.weight) if s.mask[0] else None

    def to_5hd(self, name, gm, shape5, enlarge=1):
        """``gm`` in NC1HWC0 per group, or per enlarged group of ``enlarge`` real groups."""
        n, c, d, h, w = shape5
        g = ceil_div(self.spec.groups, enlarge)
        per = enlarge * (c // self.spec.groups)
        out = self.tensor(name, self.cd, n * g * d * ceil_div(per, self.c0) * h * w * self.c0)
        plan = plan_to_5hd(self.run.chip, f"TransData({name})", shape5, g, self.c0,
                           gm.dtype, self.cd, per_group=per)
        run_transdata(self.run, plan, gm, out)
        return out

    def grad_output_5hd(self, enlarge=1):
        """gradOutput in NC1HWC0, once per layout: dx's per group, dw's per enlarged group
        (the same tensor when groups are not enlarged)."""
        if enlarge not in self.dy5:
            name = "gradOutput.5hd" + (".dw" if self.dy5 else "")
            self.dy5[enlarge] = self.to_5hd(name, self.dy, self.spec.dy5_shape, enlarge)
        return self.dy5[enlarge]

    def grad_input(self, p):
        s, t, run = self.spec, self.t, self.run
        shape = s.input.shape
        if p is None:
            return (self.run.gm.tensor("gradInput", s.dx_dtype, 0), shape)
        dy5 = self.grad_output_5hd()
        wb = self.weight_b(p)
        n16 = round_up(p.nc, 16)
        hw = p.out_dhw[1] * p.out_dhw[2]
        nd = self.tensor("gradInput.nd", s.dx_dtype, p.n * p.groups * p.out_dhw[0] * hw * n16)
        l1_a, l1_b = dx_l1_bytes(p, t, self.c0, self.cd.itemsize)
        dx_type = op_types(s, t, run.chip)[0]
        run.launch(DxKernel, block_dim=t.dx_block_dim, name=dx_type, impl=impl_of(dx_type),
                   args=dict(dy5=dy5, wb=wb, out=nd, prob=p, tiling=t, cd=self.cd,
                             out_dtype=np.dtype(s.dx_dtype), l1_a=l1_a, l1_b=l1_b,
                             hf32=s.hf32))
        dx = run.gm.tensor("gradInput", s.dx_dtype, int(np.prod(shape)))
        plan = plan_from_nd(run.chip, "TransData(gradInput)",
                            (p.n, p.groups, p.out_dhw[0], hw, n16), s.cin, p.groups,
                            np.dtype(s.dx_dtype), np.dtype(s.dx_dtype))
        run_transdata(run, plan, nd, dx)
        return (dx, shape)

    def weight_b(self, p):
        s, g = self.spec, self.spec.groups
        k1, n1 = ceil_div(p.kc, self.c0), ceil_div(p.nc, 16)
        kvol = int(np.prod(p.kdhw))
        wb = self.tensor("weight.fz", self.cd, g * kvol * k1 * n1 * 16 * self.c0)
        plan = plan_weight_dx(self.run.chip, "TransData(weight)", s.w5_shape, g, p.kc, p.nc,
                              s.transposed, self.c0, self.w.dtype, self.cd)
        run_transdata(self.run, plan, self.w, wb)
        return wb

    def grad_weight(self, p):
        s, t, run = self.spec, self.t, self.run
        shape = s.weight.shape
        dw = run.gm.tensor("gradWeight", s.dw_dtype, int(np.prod(shape)))
        if p is None:
            return (dw, shape)
        dy5 = self.grad_output_5hd(p.enlarge)
        x5 = self.to_5hd("input.5hd", self.x, s.x5_shape, p.enlarge)
        grad5, feat5 = (x5, dy5) if s.transposed else (dy5, x5)
        kh, kw = p.kdhw[1:]
        mr, ncols = ceil_div(p.gc, self.c0) * self.c0, ceil_div(p.fc, self.c0) * kh * kw * self.c0
        per = p.groups * p.kdhw[0] * mr * ncols
        slots = t.dw_k_parts if t.deterministic else 1
        if slots > 1 and run.chip.separated:   # A2: summed inside the mixed dw kernel
            ws = self.dw_mixed(p, grad5, feat5, per)
            slots = 1
        else:
            ws = self.tensor("gradWeight.fz", "float32", slots * per)
            self.dw_cube(p, grad5, feat5, ws, per)
        if slots > 1:
            total = self.tensor("gradWeight.sum", "float32", per)
            tile = 4096
            run.launch(PartialSumKernel, name="ReduceDwPartials",
                       block_dim=max(1, min(run.chip.vector_core_count, ceil_div(per, tile))),
                       args=dict(src=ws, dst=total, parts=slots, total=per, tile=tile))
            ws = total
        ws_shape, enlarge = (p.groups, p.kdhw[0], mr, ncols), p.enlarge
        if s.groups > 1:   # one fractal of all channels, each group a diagonal block of it
            ws = self.ungroup(ws, ws_shape, enlarge)
            ws_shape, enlarge = (1, *ungrouped_shape(s.w5_shape, s.groups, self.c0)), s.groups
        plan = plan_dw_out(run.chip, "TransData(gradWeight)", ws_shape, s.w5_shape, s.groups,
                           self.c0, np.dtype("float32"), np.dtype(s.dw_dtype), enlarge=enlarge)
        run_transdata(run, plan, ws, dw)
        return (dw, shape)

    def ungroup(self, ws, ws_shape, enlarge):
        """A grouped gradWeight's fractal into one fractal of all channels, as aclnn does
        before the conversion to the weight's layout: a MemSet, then the TransData that adds
        each group's diagonal block (``ops/transdata/groups.py``)."""
        s, run = self.spec, self.run
        count = int(np.prod(ungrouped_shape(s.w5_shape, s.groups, self.c0)))
        u = self.tensor("gradWeight.fz_ungrouped", "float32", count)
        launch_memset(run, u, count)
        plan = plan_dw_groups(run.chip, "TransData(gradWeight.groups)", ws_shape, s.w5_shape,
                              s.groups, self.c0, enlarge)
        run_transdata(run, plan, ws, u)
        return u

    def dw_args(self, p, grad5, feat5, per):
        """The dw kernel's arguments but its workspaces; the kernel's op type."""
        s, t, run = self.spec, self.t, self.run
        dw_type = op_types(s, t, run.chip)[1]
        zero_out = per if t.dw_v2 and run.chip.has_inter_core_sync \
            else 0    # the V2 kernel zeroes its output itself, then SyncAll
        l1_a, l1_b = dw_l1_bytes(p, t, self.c0, self.cd.itemsize)
        return dict(grad5=grad5, feat5=feat5, prob=p, tiling=t, cd=self.cd, l1_a=l1_a,
                    l1_b=l1_b, hf32=s.hf32, blocks=dw_block_grid(p, t, self.c0),
                    zero_out=zero_out), dw_type

    def dw_cube(self, p, grad5, feat5, ws, per):
        """The cube-only dw kernel into ``ws``, after a MemSet when the TBE kernel adds: the
        2-D one when it splits K, the 3-D one always (CANN declares its output atomic)."""
        t, run = self.t, self.run
        args, dw_type = self.dw_args(p, grad5, feat5, per)
        adds = t.dw_k_parts > 1 or dw_type == "Conv3DBackpropFilter"
        if adds and not t.deterministic and not args["zero_out"]:
            launch_memset(run, ws, per)
        run.launch(DwKernel, block_dim=t.dw_block_dim, name=dw_type, impl=impl_of(dw_type),
                   args=args | dict(ws=ws))

    def dw_mixed(self, p, grad5, feat5, per):
        """The deterministic A2 dw as one mixed kernel (``ops/convolution/dw_mixed.py``):
        partials in ping-pong slots, summed by the vector cores; returns the fp32 output."""
        t = self.t
        out = self.tensor("gradWeight.fz", "float32", per)
        ws = self.tensor("gradWeight.partials", "float32",
                         workspace_elements(t, t.dw_block_dim))
        args, dw_type = self.dw_args(p, grad5, feat5, per)
        self.run.launch(DwMixedKernel, block_dim=t.dw_block_dim, name=dw_type,
                        args=args | dict(ws=ws, out=out))
        return out

    def grad_bias(self):
        s, t, run = self.spec, self.t, self.run
        db = run.gm.tensor("gradBias", s.grad_output.dtype, s.cout)
        positions = int(np.prod(s.dy5_shape[2:]))
        if s.n and s.cout and positions:
            run.launch(BiasGradKernel, block_dim=min(t.bias_block_dim, s.cout), name="ReduceSum",
                       args=dict(dy=self.dy, db=db, n=s.n, channels=s.cout,
                                 positions=positions, tile=bias_tile(t, positions)))
        return (db, (s.cout,))


def op_types(spec, t, chip) -> tuple[str, str]:
    """(dx, dw) kernels' op types as CANN names them (kernels.md §2(b)): 1D runs as 2D; 3D dx
    runs the Ascend C V2 kernel; dw runs Conv3DBackpropFilterV2 when ``t.dw_v2`` (aclnn's
    choice, ``ops/convolution/route.py``; always for a deterministic dw on A2), else the TBE
    Conv3DBackpropFilter (3D) or Conv2DBackpropFilter; the dx of a transposed convolution is a
    forward convolution."""
    three_d = spec.input.ndim == 5
    if spec.transposed:
        dx = "Conv3DV2" if three_d else "Conv2D"
    else:
        dx = "Conv3DBackpropInputV2" if three_d else "Conv2DBackpropInput"
    if t.dw_v2:
        return dx, "Conv3DBackpropFilterV2"
    return dx, ("Conv3DBackpropFilter" if three_d else "Conv2DBackpropFilter")


def impl_of(op_type: str) -> str:
    """How CANN builds a convolution kernel: the V2 kernels in Ascend C, the others with TBE
    (kernels.md §2(b): the legacy Conv2D* and Conv3DBackpropFilter ops)."""
    return "ascendc" if op_type.endswith("V2") else "tbe"


def bias_tile(t, positions: int) -> int:
    """The gradBias accumulator's lanes: the tiling's tile, or fewer for short channels."""
    return min(t.bias_tile, round_up(positions, 64))


def golden_options(result, grad_output, input, weight, cube_math_type) -> dict:  # noqa: A002
    """What a run chose that the golden (``npusim.golden.convolution_backward``) must round
    like: the cube's dtype for the chip and cube_math_type (HF32 on atlas-a2, fp16 on atlas
    training), the dw K split, the bias tile, and whether gradWeight's parts land atomically."""
    from npusim.ops.convolution.args import compute_dtype, promote

    chip, t = result.chip, result.tiling
    cd, hf32 = compute_dtype(chip, promote(*(name_of(a.dtype) for a in
                                             (grad_output, input, weight))), cube_math_type)
    return {"compute_dtype": cd, "hf32_bits": chip.hf32_mantissa_bits if hf32 else 0,
            "dw_k_parts": t.dw_k_parts,
            "bias_tile": bias_tile(t, int(np.prod(grad_output.shape[2:]))),
            "atomic": t.dw_k_parts > 1 and not t.deterministic}


def dtype_name(arr) -> str:
    return name_of(arr.dtype)
