"""aclnnFlashAttentionScoreGrad on Atlas A2: MemSet of the fp32 dQ, dK, dV workspaces, one mix
kernel (the cube's ``fag_cube.py``, the vector cores' ``fag_vector.py``) adding every block's
gradients into them atomically, and the post kernel (dQ and dK times scale, then Cast; dV Cast),
as CANN's FAG runs on A2 (its pre, S1S2 and post kernels).

The softmax is recomputed from the forward's softmaxMax and softmaxSum: P = exp(S * scale - max)
/ sum; dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO * O)), dQ = scale dS K, dK = scale
dS^T Q. dQ rows of a task come from one core in key-block order (deterministic); dK and dV
rows from the tasks of every core that sees the key block, in the order the atomic adds land.

Modelled: what the forward models (``forward.py``), with D a multiple of 64. Not modelled:
dpse, dropout, GQA, softmaxIn, CANN's deterministic mode.
"""

import numpy as np

from npusim.dsl import Kernel, get_block_idx, get_sub_block_idx, is_aiv
from npusim.dsl import vector as vec
from npusim.dtypes import dtype_of
from npusim.engine.sequence import OpRun
from npusim.ops.attention.args import OP_GRAD, check_attention, check_stats
from npusim.ops.attention.fa_vector import FaVector
from npusim.ops.attention.fag_cube import FagCube
from npusim.ops.attention.fag_vector import FagVector
from npusim.ops.attention.forward import slot_elements
from npusim.ops.attention.tiling import flash_attention_tiling
from npusim.ops.common import resolve_chip
from npusim.ops.common.fill_cast import CastKernel, core_split
from npusim.ops.common.memset import launch_memset

GRADS = (("dqOut", "dq"), ("dkOut", "dk"), ("dvOut", "dv"))


class FlashAttentionGradKernel(FagCube, FagVector, Kernel):
    """FlashAttentionScoreGrad: the AIC runs ``process_cube``, each AIV ``process_vector``."""

    core_type = "mix"
    apply_mask = FaVector.apply_mask

    def init(self, gm: dict, tiling, scale, dtype):
        self.t, self.scale, self.dtype = tiling, scale, dtype_of(dtype)
        for name, tensor in gm.items():
            setattr(self, f"{name}_gm" if not name.endswith("_ws") else name, tensor)
        self.slots = slot_elements(tiling)
        if is_aiv():
            self.core = get_block_idx() // 2
            self.init_vector(get_sub_block_idx())
        else:
            self.core = get_block_idx()
            self.init_cube()

    def slot_at(self, kind: str, slot: int) -> int:
        return (2 * self.core + slot) * self.slots[kind]

    def process(self):
        if is_aiv():
            self.process_vector()
        else:
            self.process_cube()


class PostKernel(CastKernel):
    """FAG's post: out = Cast(ws x scale) (Muls skipped for dV, scale 1)."""

    def init(self, src, dst, total: int, per_core: int, tile: int, scale: float):
        super().init(src, dst, total, per_core, tile)
        self.scale = scale

    def compute(self, n: int):
        src = self.in_que.deque()
        if self.scale != 1.0:
            vec.muls(src, src, self.scale, n)
        dst = self.out_que.alloc_tensor(self.dst.dtype)
        vec.cast(dst, src, self.mode, n)
        self.out_que.enque(dst)
        self.in_que.free_tensor(src)


def flash_attention_score_grad(query, key, value, dy, softmax_max, softmax_sum, attention_in,
                               *, atten_mask=None, head_num, scale_value=1.0, keep_prob=1.0,
                               input_layout="BSND", sparse_mode=0, pre_tokens=2147483647,
                               next_tokens=2147483647, inner_precise=0, chip="atlas-a2",
                               tiling=None, mode="timed", numerics=True, trace=True,
                               sanitize=True, jitter=None):
    """Run aclnnFlashAttentionScoreGrad on ``chip``: ``outputs`` dqOut, dkOut, dvOut (the
    shapes and dtype of query, key, value)."""
    chip = resolve_chip(chip)
    a = check_attention(chip, query, key, value, atten_mask, head_num, scale_value, keep_prob,
                        input_layout, sparse_mode, op=OP_GRAD)
    dy, o, smax, ssum = check_stats(OP_GRAD, a, dy, attention_in, softmax_max, softmax_sum)
    t = flash_attention_tiling(OP_GRAD, chip, a.dims, a.layout, a.causal, a.shift, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    gm, dt, e = run.gm, a.q.dtype, slot_elements(t)
    tensors = {name: gm.tensor(label, arr.dtype, arr.size, arr.reshape(-1)) for name, label, arr
               in (("q", "query", a.q), ("k", "key", a.k), ("v", "value", a.v), ("dy", "dy", dy),
                   ("o", "attentionIn", o), ("max", "softmaxMax", smax),
                   ("sum", "softmaxSum", ssum))}
    tensors["mask"] = (gm.tensor("attenMask", "uint8", a.mask.size, a.mask.reshape(-1))
                       if a.mask is not None else None)
    for kind, ws_dt in (("s", "float32"), ("dp", "float32"), ("p", dt), ("ds", dt)):
        size = e["s"] if kind in ("s", "dp") else e["p"]
        tensors[f"{kind}_ws"] = gm.tensor(f"ws.{kind}", ws_dt, 2 * t.block_dim * size)
    sizes = {"dq": a.q.size, "dk": a.k.size, "dv": a.v.size}
    for name, size in sizes.items():
        tensors[f"{name}_ws"] = gm.tensor(f"ws.{name}", "float32", size)
        launch_memset(run, tensors[f"{name}_ws"], size)
    run.launch(FlashAttentionGradKernel, block_dim=t.block_dim, name="FlashAttentionScoreGrad",
               args=dict(gm=tensors, tiling=t, scale=a.scale, dtype=dt.name))
    outs = {}
    for out_name, name in GRADS:
        out = gm.tensor(out_name, dt, sizes[name])
        launch_post(run, tensors[f"{name}_ws"], out, sizes[name],
                    a.scale if name != "dv" else 1.0)
        outs[out_name] = (out, (a.q, a.k, a.v)[("dq", "dk", "dv").index(name)].shape)
    ws_bytes = 4 * sum(sizes.values()) + 2 * t.block_dim * e["s"] * 2 * (4 + dt.itemsize)
    return run.result(outs, tiling=t, workspace_bytes=ws_bytes)


def launch_post(run, src, dst, total: int, scale: float) -> None:
    cores, per = core_split(total, 4, run.chip.vector_core_count)
    tile = min(run.chip.ub_bytes // 16 // 32 * 32, -(-per // 32) * 32)
    run.launch(PostKernel, block_dim=cores, name=f"FlashAttentionScoreGradPost({dst.label})",
               args=dict(src=src, dst=dst, total=total, per_core=per, tile=tile,
                         scale=float(np.float32(scale))))
