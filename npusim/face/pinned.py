"""The operator cases whose cycles and output hashes ``tests/test_pinned_cycles.py`` pins.

They live here, not in the test, because ``npusim bench --group fast`` also runs them (whole,
then fast) to state a fast run's error on the pinned cases. Each is an operator of
``npusim.cases`` at a shape, dtype and parameters, on a chip, with the run options it is pinned
with; its inputs are the case's own, seeded with 0. The micro-kernels' pins stay in the test
(they have no steady loops, so a fast run is the whole run).
"""

from dataclasses import dataclass, field

A2, TR = "atlas-a2", "atlas-training"


@dataclass(frozen=True)
class PinnedOp:
    """One pinned operator case."""

    op: str
    shape: tuple
    chip: str
    dtype: str = "float16"
    params: dict = field(default_factory=dict)
    tiling: dict | None = None
    options: dict = field(default_factory=dict)   # numerics, sanitize, trace as pinned

    def point(self) -> dict:
        """The case as a timing-only study point (``npusim.studies.executor.run_point``)."""
        return {"op": self.op, "chip": self.chip, "shape": list(self.shape),
                "dtype": self.dtype, "params": dict(self.params), "tiling": self.tiling,
                "numerics": False, "check": False, "seed": 0, "explain": False}


_CONV = "convolution_backward"
_ATOMIC = {"weight": "32x3", "output_mask": "0,1,0"}

PINNED_OPS = {
    "silu-a2-fp16-4096": PinnedOp("silu_backward", (4096,), A2),
    "silu-a2-fp16-100003": PinnedOp("silu_backward", (100003,), A2),
    "silu-a2-fp32-64x1024": PinnedOp("silu_backward", (64, 1024), A2, "float32"),
    "silu-a2-bf16-33333": PinnedOp("silu_backward", (33333,), A2, "bfloat16"),
    "silu-a2-fp16-100003-bare": PinnedOp("silu_backward", (100003,), A2,
                                         options={"sanitize": False, "trace": False}),
    "silu-a2-fp16-100003-timing": PinnedOp("silu_backward", (100003,), A2,
                                           options={"numerics": False}),
    "conv-a2-2x32x14x14-1x1-timing": PinnedOp(_CONV, (2, 32, 14, 14), A2,
                                              params={"weight": "64x1", "padding": "0"},
                                              options={"numerics": False}),
    "silu-tr-fp16-65536": PinnedOp("silu_backward", (65536,), TR),
    "silu-tr-fp32-5000": PinnedOp("silu_backward", (5000,), TR, "float32"),
    "conv-a2-1x16x8x8-3x3": PinnedOp(_CONV, (1, 16, 8, 8), A2, params={"weight": "16x3"}),
    "conv-tr-1x16x8x8-3x3": PinnedOp(_CONV, (1, 16, 8, 8), TR, params={"weight": "16x3"}),
    "conv-a2-2x32x14x14-1x1": PinnedOp(_CONV, (2, 32, 14, 14), A2,
                                       params={"weight": "64x1", "padding": "0"}),
    "conv-tr-2x32x14x14-s2": PinnedOp(_CONV, (2, 32, 14, 14), TR,
                                      params={"weight": "32x3", "stride": "2"}),
    "conv-a2-atomic-dw": PinnedOp(_CONV, (2, 32, 16, 16), A2, params=_ATOMIC,
                                  tiling={"dw_k_parts": 2}),
    "conv-tr-atomic-dw": PinnedOp(_CONV, (2, 32, 16, 16), TR, params=_ATOMIC,
                                  tiling={"dw_k_parts": 2}),
    "ce-a2-64x1000": PinnedOp("cross_entropy_loss_grad", (64, 1000), A2, "float32"),
    "ce-a2-48x2000-none": PinnedOp("cross_entropy_loss_grad", (48, 2000), A2,
                                   params={"reduction": "none"}),
    "emb-a2-uniform": PinnedOp("embedding_dense_backward", (256, 64), A2, "float32",
                               params={"num_weights": "500"}),
    "emb-a2-zipf": PinnedOp("embedding_dense_backward", (256, 64), A2, "float32",
                            params={"num_weights": "500", "indices": "zipf"}),
    "emb-tr-uniform": PinnedOp("embedding_dense_backward", (256, 64), TR, "float32",
                               params={"num_weights": "500"}),
    "emb-tr-zipf": PinnedOp("embedding_dense_backward", (256, 64), TR, "float32",
                            params={"num_weights": "500", "indices": "zipf"}),
    "moe-a2-64x512": PinnedOp("moe_token_permute_grad", (64, 512), A2, "float32"),
}
