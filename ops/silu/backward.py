"""aclnnSiluBackward: gradInput = gradOutput * sigmoid(x) * (1 + x * (1 - sigmoid(x))).

The kernel follows the Ascend C SiluGrad (kernels.md §1(c)): the tensors are cut into 32-byte
blocks shared over the vector cores (the first ``big_core_num`` cores take one block more), each
core walks its share in UB tiles, double-buffered when it has more than two tiles, and computes
in fp32: cast in (fp16/bf16), Muls(-1), Exp, Adds(1), Duplicate(1), Div, Sub, Mul, Adds(1), Mul,
Mul, cast out with rounding to nearest even. The shipped TBE kernel of CANN has the same chain
and pipes per tile; its auto-scheduled tile sizes differ and are not modelled. The kernel pays
a TBE kernel's start-up (``launch.tbe_kernel_start_cycles``): CANN ships SiluGrad on 910 and
910B as the TBE DSL op (kernels.md §1(b)).

Kernels (``stats["kernels"]`` op_type, launch order): [Contiguous per strided input], SiluGrad.
"""

from dataclasses import dataclass

import numpy as np

from npusim.dsl import (
    Kernel,
    TBuf,
    TPosition,
    TQue,
    get_block_idx,
)
from npusim.dsl import vector as vec
from npusim.dtypes import name_of
from npusim.engine.sequence import OpRun
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError, TilingError
from npusim.ops.common import (
    PRODUCT_NAMES,
    as_array,
    ceil_div,
    check_dtype,
    check_same,
    override,
    overrides_of,
    product_name,
    require,
    resolve_chip,
)
from npusim.ops.common.blocks import copy_exact, core_slice, split_blocks
from npusim.ops.common.contiguous import to_gm

OP = "aclnnSiluBackward"
DTYPES = {"atlas-training": ("float16", "float32"),
          "atlas-a2": ("bfloat16", "float16", "float32")}
# UB is cut into this many tile-sized units (kernels.md §1(c)): for 16-bit inputs, 3 or 6 queue
# buffers of the input dtype plus five fp32 work tiles (two units each); for fp32, 3 or 6 queue
# buffers plus two fp32 work tiles. Keyed by (input bytes per element, buffer_num).
UB_UNITS = {(2, 1): 13, (2, 2): 16, (4, 1): 5, (4, 2): 8}
MULTI_TILE = 2  # a core with more tiles than this double-buffers


@dataclass(frozen=True, kw_only=True)
class SiluBackwardTiling:
    """Host tiling of SiluBackward. Users may override ``block_dim``, ``tile_length`` and
    ``buffer_num``; the split fields are recomputed from them."""

    total_length: int          # elements in each of gradOutput, self and gradInput
    block_dim: int             # vector cores used (AIVs on Atlas A2, cores on Atlas training)
    big_core_num: int          # the first cores, which take one 32-byte block more (tailBlockNum)
    big_core_length: int       # elements per big core (bigCoreDataNum)
    small_core_length: int     # elements per other core (smallCoreDataNum); the last core may
    #                            hold fewer when the size is not a whole number of blocks
    tile_length: int           # elements per UB tile (tileDataNum), whole 32-byte blocks
    buffer_num: int            # buffers per queue: 1 single, 2 double buffering

    @property
    def tiles_per_big_core(self) -> int:
        return ceil_div(self.big_core_length, self.tile_length) if self.tile_length else 0


def max_tile_length(chip, itemsize: int, buffer_num: int) -> int:
    """The largest tile (elements) that fits UB: (UB / 32 / units) * 32 / bytes."""
    return chip.ub_bytes // chip.block_bytes // UB_UNITS[itemsize, buffer_num] \
        * chip.block_bytes // itemsize


def silu_backward_tiling(chip, total: int, dtype, overrides: dict | None = None):
    """The default tiling for ``total`` elements of ``dtype`` on ``chip``, with ``overrides``."""
    overrides = overrides_of(overrides, OP)
    item = np.dtype(dtype).itemsize
    blocks = ceil_div(total * item, chip.block_bytes)
    cores = max(1, min(chip.vector_core_count, ceil_div(total, 1024), blocks))
    split = split_blocks(total, item, cores, chip.block_bytes)
    single = max_tile_length(chip, item, 1)
    buffer_num = 1 if ceil_div(split["big_core_length"], single) <= MULTI_TILE else 2
    tiling = SiluBackwardTiling(total_length=total, tile_length=max_tile_length(chip, item,
                                buffer_num), buffer_num=buffer_num, **split)
    if not overrides:
        return tiling
    derived = {"total_length", "big_core_num", "big_core_length", "small_core_length"}
    for key in set(overrides) & derived:
        raise TilingError(f"{OP}: tiling {key} is derived from the shape and block_dim; "
                          "override block_dim, tile_length or buffer_num")
    tiling = override(tiling, overrides, OP)
    if "tile_length" not in overrides and tiling.buffer_num in (1, 2):   # derive, then validate
        tiling = override(tiling, {"tile_length": max_tile_length(chip, item,
                                                                  tiling.buffer_num)}, OP)
    _validate(chip, tiling, item, blocks)
    return override(tiling, split_blocks(total, item, tiling.block_dim, chip.block_bytes), OP)


def _validate(chip, t: SiluBackwardTiling, item: int, blocks: int) -> None:
    per_block = chip.block_bytes // item
    if t.buffer_num not in (1, 2):
        raise TilingError(f"{OP}: buffer_num = {t.buffer_num}: allowed 1 or 2")
    limit = min(chip.vector_core_count, max(blocks, 1))
    if not 1 <= t.block_dim <= limit:
        raise TilingError(f"{OP}: block_dim = {t.block_dim}: {chip.name} has "
                          f"{chip.vector_core_count} vector cores and the tensor "
                          f"{blocks} 32-byte blocks; allowed 1 to {limit}")
    fits = max_tile_length(chip, item, t.buffer_num)
    if t.tile_length <= 0 or t.tile_length % per_block:
        raise TilingError(f"{OP}: tile_length = {t.tile_length}: must be a positive multiple "
                          f"of {per_block} elements (32 bytes)")
    if t.tile_length > fits:
        need = t.tile_length * item * UB_UNITS[item, t.buffer_num]
        raise TilingError(f"{OP}: tile_length = {t.tile_length} with buffer_num = "
                          f"{t.buffer_num} needs {need} bytes of UB; {chip.name} has "
                          f"{chip.ub_bytes}: at most {fits} elements fit")


class SiluGradKernel(Kernel):
    """One vector core's share: tiles of gradOutput and self in, gradInput out."""

    def init(self, dy, x, dx, tiling: SiluBackwardTiling):
        t = tiling
        start, self.length = core_slice(t, get_block_idx())
        self.dy_gm, self.x_gm, self.dx_gm = dy[start], x[start], dx[start]
        self.tiling, self.dtype = t, dy.dtype
        tile_bytes = t.tile_length * self.dtype.itemsize
        self.in_dy = TQue(TPosition.VECIN, t.buffer_num, name="inQueueDy")
        self.in_x = TQue(TPosition.VECIN, t.buffer_num, name="inQueueX")
        self.out_dx = TQue(TPosition.VECOUT, t.buffer_num, name="outQueueDx")
        for que in (self.in_dy, self.in_x, self.out_dx):
            self.pipe.init_buffer(que, t.buffer_num, tile_bytes)
        self.wide = self.dtype.itemsize == 2     # fp16/bf16 compute through fp32
        self.calc = TBuf(TPosition.VECCALC, name="calcBuf")
        self.pipe.init_buffer(self.calc, (5 if self.wide else 2) * t.tile_length * 4)

    def process(self):
        n = self.tiling.tile_length
        for i in range(ceil_div(self.length, n)):
            count = min(n, self.length - i * n)
            self.copy_in(i * n, count)
            self.compute(count)
            self.copy_out(i * n, count)

    def copy_in(self, offset: int, count: int):
        dy, x = self.in_dy.alloc_tensor(self.dtype), self.in_x.alloc_tensor(self.dtype)
        copy_exact(dy, self.dy_gm[offset], count)
        copy_exact(x, self.x_gm[offset], count)
        self.in_dy.enque(dy)
        self.in_x.enque(x)

    def compute(self, count: int):
        dy, x = self.in_dy.deque(), self.in_x.deque()
        dx = self.out_dx.alloc_tensor(self.dtype)
        work, n = self.calc.get("float32"), self.tiling.tile_length
        t1, t2 = work[0], work[n]
        if self.wide:
            dyf, xf, res = work[2 * n], work[3 * n], work[4 * n]
            vec.cast(dyf, dy, "none", count)
            vec.cast(xf, x, "none", count)
            self.chain(res, dyf, xf, t1, t2, count)
            vec.cast(dx, res, "rint", count)
        else:
            self.chain(dx, dy, x, t1, t2, count)
        self.out_dx.enque(dx)
        self.in_dy.free_tensor(dy)
        self.in_x.free_tensor(x)

    @staticmethod
    def chain(out, dy, x, t1, t2, n):
        """out = dy * sig * (1 + x * (1 - sig)), sig = 1 / (1 + exp(-x)), all in fp32."""
        vec.muls(t1, x, -1.0, n)
        vec.exp(t1, t1, n)
        vec.adds(t1, t1, 1.0, n)
        vec.duplicate(t2, 1.0, n)
        vec.div(t1, t2, t1, n)          # t1 = sig
        vec.sub(t2, t2, t1, n)          # t2 = 1 - sig
        vec.mul(t2, t2, x, n)
        vec.adds(t2, t2, 1.0, n)
        vec.mul(t2, t1, t2, n)
        vec.mul(out, dy, t2, n)

    def copy_out(self, offset: int, count: int):
        dx = self.out_dx.deque()
        copy_exact(self.dx_gm[offset], dx, count)
        self.out_dx.free_tensor(dx)


def check_silu_backward(chip, grad_output, self_, grad_input=None, *, has_output=False):
    """The seed's argument rules; returns the input arrays."""
    tensors = {"gradOutput": grad_output, "self": self_}
    if has_output:
        tensors["gradInput"] = grad_input
    require(OP, **tensors)
    if chip.product not in DTYPES:   # the seed lists no other product (Atlas inference: none)
        supported = ", ".join(f"{p} ({PRODUCT_NAMES.get(p, p)})" for p in DTYPES)
        raise ParamError(f"{OP}: not supported on {chip.name} ({product_name(chip)}); supported "
                         f"products: {supported}", code=ACLNN_ERR_PARAM_INVALID)
    arrays = {name: as_array(OP, name, value) for name, value in tensors.items()}
    for name, arr in arrays.items():
        check_dtype(OP, name, arr, DTYPES, chip)
    check_same(OP, "the dtypes", **{n: name_of(a.dtype) for n, a in arrays.items()})
    check_same(OP, "the shapes", **{n: tuple(a.shape) for n, a in arrays.items()})
    return arrays["gradOutput"], arrays["self"]


def silu_backward(grad_output, self_, *, chip="atlas-a2", tiling=None, mode="timed",
                  numerics=True, trace=True, sanitize=True, jitter=None):
    """Run aclnnSiluBackward on ``chip``; ``outputs["gradInput"]`` has the input's shape."""
    chip = resolve_chip(chip)
    dy, x = check_silu_backward(chip, grad_output, self_)
    t = silu_backward_tiling(chip, dy.size, dy.dtype, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    dy_gm, x_gm = to_gm(run, "gradOutput", dy), to_gm(run, "self", x)
    dx_gm = run.gm.tensor("gradInput", dy.dtype, dy.size)
    if dy.size:
        run.launch(SiluGradKernel, block_dim=t.block_dim, name="SiluGrad", impl="tbe",
                   args=dict(dy=dy_gm, x=x_gm, dx=dx_gm, tiling=t))
    return run.result({"gradInput": (dx_gm, dy.shape)}, tiling=t)
