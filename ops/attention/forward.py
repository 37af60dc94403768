"""aclnnFlashAttentionScore on Atlas A2: one mix kernel (MIX_AIC_1_2), the cube core's bmm1 and
bmm2 (``fa_cube.py``) and its two vector cores' online softmax (``fa_vector.py``), exchanging
S, P and O through a ping-pong GM workspace and cross-core flags, as CANN's FlashAttentionScore
does on A2 (its S1S2 template, ``flash_attention_score_s1s2_bn2gs1.h``).

attentionOut = softmax(scale_value * Q K^T, masked) V per (batch, head), q's dtype;
softmaxMax, softmaxSum: each query row's max of the scaled scores and sum of their exp,
[B, N, S1, 8] fp32 (the value in 8 lanes, as CANN stores them for the backward).

Modelled: fp16 and bf16, BSND and BNSD, no mask or the compressed causal mask (sparse modes 2
and 3); the rest is refused (``args.py``). Not modelled: softmaxOut (CANN leaves it empty on
this path), pse, dropout, GQA, the tail-row (invalid line) handling.
"""

from npusim.dsl import Kernel, get_block_idx, get_sub_block_idx, is_aiv
from npusim.dtypes import dtype_of
from npusim.engine.sequence import OpRun
from npusim.ops.attention.args import OP, check_attention
from npusim.ops.attention.fa_cube import FaCube
from npusim.ops.attention.fa_vector import FaVector
from npusim.ops.attention.tiling import FlashAttentionTiling, flash_attention_tiling
from npusim.ops.common import resolve_chip

SLOTS = {"s": 3, "p": 2, "o": 2}     # a cube core's workspace slots of each kind (fa_cube.py)


def slot_elements(t: FlashAttentionTiling) -> dict:
    """Elements of one S, P and O slot of a cube core's workspace."""
    return {"s": t.s1_base * t.s2_base, "p": t.s1_base * t.s2_base, "o": t.s1_base * t.d}


def workspace_bytes(t: FlashAttentionTiling, itemsize: int) -> int:
    e = slot_elements(t)
    return t.block_dim * (4 * SLOTS["s"] * e["s"] + itemsize * SLOTS["p"] * e["p"]
                          + 4 * SLOTS["o"] * e["o"])


class FlashAttentionKernel(FaCube, FaVector, Kernel):
    """FlashAttentionScore: the AIC runs ``process_cube``, each AIV ``process_vector``."""

    core_type = "mix"

    def init(self, q, k, v, mask, out, smax, ssum, s_ws, p_ws, o_ws, tiling, scale, dtype):
        self.t, self.scale, self.dtype = tiling, scale, dtype_of(dtype)
        self.q_gm, self.k_gm, self.v_gm, self.mask_gm = q, k, v, mask
        self.out_gm, self.max_gm, self.sum_gm = out, smax, ssum
        self.s_ws, self.p_ws, self.o_ws = s_ws, p_ws, o_ws
        self.slots = slot_elements(tiling)
        if is_aiv():
            self.core = get_block_idx() // 2
            self.init_vector(get_sub_block_idx())
        else:
            self.core = get_block_idx()
            self.init_cube()

    def slot_at(self, kind: str, slot: int) -> int:
        """Element offset of this core's ``kind`` slot ``slot`` in its workspace tensor."""
        return (SLOTS[kind] * self.core + slot) * self.slots[kind]

    def process(self):
        if is_aiv():
            self.process_vector()
        else:
            self.process_cube()


def flash_attention_score(query, key, value, atten_mask=None, *, head_num, scale_value=1.0,
                          keep_prob=1.0, input_layout="BSND", sparse_mode=0,
                          pre_tokens=2147483647, next_tokens=2147483647, inner_precise=0,
                          chip="atlas-a2", tiling=None, mode="timed", numerics=True, trace=True,
                          sanitize=True, jitter=None):
    """Run aclnnFlashAttentionScore on ``chip``: ``outputs`` attentionOut (q's shape and
    dtype), softmaxMax and softmaxSum ([B, N, S1, 8] fp32). ``pre_tokens``, ``next_tokens``
    and ``inner_precise`` take no effect in the modelled modes (sparse modes 2 and 3 ignore
    the tokens, as the document says)."""
    chip = resolve_chip(chip)
    a = check_attention(chip, query, key, value, atten_mask, head_num, scale_value, keep_prob,
                        input_layout, sparse_mode)
    b, n, s1, s2, d = a.dims
    t = flash_attention_tiling(OP, chip, a.dims, a.layout, a.causal, a.shift, tiling)
    run = OpRun(chip, mode=mode, numerics=numerics, trace=trace, sanitize=sanitize,
                jitter=jitter)
    gm = run.gm
    dt = a.q.dtype
    q = gm.tensor("query", dt, a.q.size, a.q.reshape(-1))
    k = gm.tensor("key", dt, a.k.size, a.k.reshape(-1))
    v = gm.tensor("value", dt, a.v.size, a.v.reshape(-1))
    mask = (gm.tensor("attenMask", "uint8", a.mask.size, a.mask.reshape(-1))
            if a.mask is not None else None)
    out = gm.tensor("attentionOut", dt, a.q.size)
    smax = gm.tensor("softmaxMax", "float32", b * n * s1 * 8)
    ssum = gm.tensor("softmaxSum", "float32", b * n * s1 * 8)
    e = slot_elements(t)
    ws = {f"{kind}_ws": gm.tensor(f"ws.{kind.upper()}", "float32" if kind != "p" else dt,
                                  SLOTS[kind] * t.block_dim * e[kind])
          for kind in ("s", "p", "o")}
    run.launch(FlashAttentionKernel, block_dim=t.block_dim, name="FlashAttentionScore",
               args=dict(q=q, k=k, v=v, mask=mask, out=out, smax=smax, ssum=ssum, **ws,
                         tiling=t, scale=a.scale, dtype=dt.name))
    stats = (b, n, s1, 8)
    return run.result({"attentionOut": (out, a.q.shape), "softmaxMax": (smax, stats),
                       "softmaxSum": (ssum, stats)}, tiling=t,
                      workspace_bytes=workspace_bytes(t, dt.itemsize))
