"""aclnnEmbeddingDenseBackward: out[i, :] = sum of grad rows whose index is i (kernels.md §4).

The kernels run as aclnn launches them, one after another on one stream:

- Atlas A2: Cast of the indices to int32 (unless already int32), Cast of a 16-bit grad to fp32,
  ZerosLike of the fp32 out (and of the scale counts), then per variant (``ops/
  embedding/tiling.py``): ``sorted`` / ``deterministic``: the Sort kernels (``ops/
  common/sort.py``) then the V2 sorted kernel (``ops/embedding/v2.py``); ``small_dim``: the
  small-dim kernel (``ops/embedding/small_dim.py``); with scaleGradByFreq the scale pass
  (``ops/embedding/scale.py``); last, a Cast of the fp32 result to out's dtype.
- Atlas training: Cast of indices other than int32/int64 to int32, Cast of a fp16 grad to fp32
  (assumed: the TIK kernel's fp32 path), ZerosLike of out, the V1 kernel (``ops/
  embedding_v1.py``), a Cast back to fp16.

DOUBLE indices are cast on the host (aclnn's Cast of DOUBLE runs on the AI CPU, which npusim
does not model); every other cast is a vector kernel. Which outputs are deterministic: the
``deterministic`` variant and v1 with scale write each output row from one core in a fixed
order (bit-identical under jitter); ``sorted``, ``small_dim`` and v1 without scale add partial
sums of one row from several cores with GM atomics in simulated-time order, so "out" is an
atomic output (the golden adds them in core order, as the functional mode does).

numerics=False is refused: the kernels read the indices into their control flow.

Kernels (``stats["kernels"]`` op_type, launch order): ZerosLike (out), [Contiguous], [Cast
(grad)], [Cast (indices)], then A2: [ZerosLike (counts) with scale], Sort (``sorted`` /
``deterministic``; several Sort kernels when the indices exceed one chunk) and
EmbeddingDenseGradV2, or EmbeddingDenseGradV2 alone (``small_dim``), [EmbeddingDenseGradV2Scale
with scale]; Atlas training: EmbeddingDenseGrad; last [Cast (out)] for a 16-bit grad. The
atomic-add kernels come after the ZerosLike of what they add into (``atomic_add_bytes``). On the
chip the scale pass and the counts' zeroing are inside EmbeddingDenseGradV2 (its tiling keys
and InitOutput), so a correlator adds those two rows to it.
"""

import numpy as np

from npusim.engine.sequence import OpRun
from npusim.errors import NumericsRequiredError, TilingError
from npusim.ops.common import ceil_div, resolve_chip
from npusim.ops.common.contiguous import to_gm
from npusim.ops.common.fill_cast import launch_cast, launch_zeros
from npusim.ops.common.sort import sort_keys
from npusim.ops.embedding.args import OP, cast_indices, check_embedding_dense_backward, index_kind
from npusim.ops.embedding.scale import ScaleKernel
from npusim.ops.embedding.small_dim import SmallDimKernel
from npusim.ops.embedding.tiling import embedding_tiling
from npusim.ops.embedding.v1 import V1Kernel, V1ScaleKernel
from npusim.ops.embedding.v2 import DeterministicKernel, SortedKernel

SYSTEM_WORKSPACE_BYTES = 16 << 20   # the 16 MB system workspace of the V2 tiling
V2_KERNELS = {"sorted": SortedKernel, "deterministic": DeterministicKernel}


def embedding_dense_backward(grad, indices, *, num_weights, padding_idx=-1,
                             scale_grad_by_freq=False, chip="atlas-a2", tiling=None,
                             mode="timed", numerics=True, trace=True, sanitize=True,
                             jitter=None, variant=None):
    """Run aclnnEmbeddingDenseBackward on ``chip``; ``outputs["out"]`` is
    (num_weights, grad.shape[-1]) in grad's dtype. ``variant`` is shorthand for
    ``tiling={"variant": ...}`` (sorted, deterministic, small_dim on Atlas A2; v1)."""
    chip = resolve_chip(chip)
    tiling = with_variant(tiling, variant)
    spec = check_embedding_dense_backward(chip, grad, indices, num_weights, padding_idx,
                                          scale_grad_by_freq)
    if not numerics:
        raise NumericsRequiredError(f"{OP}: numerics=False is not possible: the kernels read "
                                    "the indices into their control flow (which rows go "
                                    "where)")
    kind = index_kind(chip, spec.indices.dtype)
    t = embedding_tiling(chip, rows=spec.rows, dim=spec.dim, num_weights=spec.num_weights,
                         scale=spec.scale, index_bytes=np.dtype(kind).itemsize,
                         overrides=tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    out_gm = _Plan(run, spec, t, kind).execute()
    workspace = SYSTEM_WORKSPACE_BYTES + (spec.num_weights * 4 if spec.scale else 0) \
        if chip.separated else 0
    return run.result({"out": (out_gm, (spec.num_weights, spec.dim))}, tiling=t,
                      workspace_bytes=workspace)


def with_variant(tiling, variant):
    """The tiling overrides with ``variant`` added; a different variant in both is an error."""
    if variant is None:
        return tiling
    if tiling is not None and not isinstance(tiling, dict):
        raise TilingError(f"{OP}: tiling overrides must be a dict of field: value, "
                          f"got {type(tiling).__name__}")
    merged = dict(tiling or {})
    if merged.get("variant", variant) != variant:
        raise TilingError(f"{OP}: variant = {variant!r} and tiling variant = "
                          f"{merged['variant']!r} disagree; give one")
    merged["variant"] = variant
    return merged


class _Plan:
    """The kernel sequence of one call."""

    def __init__(self, run, spec, t, kind: str):
        self.run, self.spec, self.t, self.kind = run, spec, t, kind
        self.chip = run.chip

    def execute(self):
        spec, t, run = self.spec, self.t, self.run
        out_count = spec.num_weights * spec.dim
        out32 = run.gm.tensor("out.fp32" if spec.grad.dtype != np.float32 else "out",
                              np.float32, out_count)
        if out_count:
            launch_zeros(run, out32, out_count, "ZerosLike(out)")
        if spec.rows and spec.dim:
            grad32, idx = self.grad_fp32(), self.indices()
            counts = self.counts() if t.scale and t.variant != "v1" else None
            self.main(grad32, idx, out32, counts)
            if counts is not None:
                self.scale(out32, counts)
        if spec.grad.dtype == np.float32:
            return out32
        out = run.gm.tensor("out", spec.grad.dtype, out_count)
        if out_count:
            launch_cast(run, out32, out, out_count, "Cast(out)")
        return out

    def grad_fp32(self):
        run, g = self.run, self.spec.grad
        gm = to_gm(run, "grad", g)
        if g.dtype == np.float32:
            return gm
        out = run.gm.tensor("grad.fp32", np.float32, g.size)
        launch_cast(run, gm, out, g.size, "Cast(grad)")
        return out

    def indices(self):
        run, idx = self.run, self.spec.indices
        if idx.dtype == np.float64:      # AI CPU Cast: not a vector kernel
            idx = cast_indices(idx, self.kind)
        elif idx.dtype == np.bool_:
            idx = idx.view(np.uint8)
        gm = to_gm(run, "indices", idx)
        if idx.dtype == np.dtype(self.kind):
            return gm
        out = run.gm.tensor(f"indices.{self.kind}", self.kind, idx.size)
        launch_cast(run, gm, out, idx.size, "Cast(indices)")
        return out

    def counts(self):
        gm = self.run.gm.tensor("workspace.counts", np.float32, self.spec.num_weights)
        launch_zeros(self.run, gm, self.spec.num_weights, "ZerosLike(counts)")
        return gm

    def main(self, grad, idx, out, counts):
        t, run, pad = self.t, self.run, self.spec.padding_idx
        if t.variant == "v1":
            kernel = V1ScaleKernel if t.scale else V1Kernel
            run.launch(kernel, block_dim=t.block_dim, name="EmbeddingDenseGrad",
                       args=dict(grad=grad, indices=idx, out=out, tiling=t, padding_idx=pad))
            return
        if t.variant == "small_dim":
            run.launch(SmallDimKernel, block_dim=t.block_dim, name="EmbeddingDenseGradV2",
                       args=dict(grad=grad, indices=idx, out=out, counts=counts, tiling=t,
                                 padding_idx=pad))
            return
        sorted_idx = run.gm.tensor("sortedIndices", np.int32, t.rows)
        pos = run.gm.tensor("posIdx", np.int32, t.rows)
        sort_keys(run, idx, sorted_idx, pos, t.rows, chunk=t.sort_chunk, window=t.merge_window)
        run.launch(V2_KERNELS[t.variant], block_dim=t.block_dim, name="EmbeddingDenseGradV2",
                   args=dict(grad=grad, sorted_indices=sorted_idx, pos_idx=pos, out=out,
                             counts=counts, tiling=t, padding_idx=pad))

    def scale(self, out, counts):
        t = self.t
        per = ceil_div(t.num_weights, t.scale_block_dim)
        cores = ceil_div(t.num_weights, per)
        self.run.launch(ScaleKernel, block_dim=cores, name="EmbeddingDenseGradV2Scale",
                        args=dict(out=out, counts=counts, num_weights=t.num_weights,
                                  dim=t.dim, dim_chunk=t.dim_chunk, per_core=per))
