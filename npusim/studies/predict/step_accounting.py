"""What a workload leaves out, in FLOPs and bytes counted from the shapes (accounting, not timing).

A workload's ``[[unmodelled]]`` entries describe the layers of the step npusim does not run (a
``kind``, a ``shape``, ``params``, a ``dtype`` and a ``count``); ``KINDS`` says, per kind, how
its backward pass's (or update's) FLOPs and GM bytes are counted. The modelled calls' figures
are the ones npusim's roofline counts for each call (``case.flops`` and each tensor in and out
once). The shares a report gives are modelled / (modelled + unmodelled), each of FLOPs and
bytes. These are counts of arithmetic and of tensor traffic at the interface of each layer:
they do not say how long the unmodelled layers take (no timing is inferred from them), and
fused kernels on real hardware can move fewer bytes than counted here.
"""

from dataclasses import dataclass
from math import prod

from npusim.errors import NpusimError

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "int32": 4, "int64": 8}


@dataclass(frozen=True)
class Kind:
    """How one kind of layer is counted: ``shape`` names the dimensions it takes, ``how`` says
    in words what the FLOPs and bytes are; ``count`` gives (flops, bytes) for one call."""

    shape: str
    how: str
    count: object


def _elementwise(flops_each: int, tensors: int):
    def count(dims, params, b):
        n = prod(dims)
        return flops_each * n, tensors * n * b
    return count


def _max_pool(dims, params, b):
    n, c, h, w = dims
    k, s, p = (int(params.get(x, d)) for x, d in (("kernel", 3), ("stride", 2), ("padding", 1)))
    outs = n * c * ((h + 2 * p - k) // s + 1) * ((w + 2 * p - k) // s + 1)
    return outs, outs * b + outs * 4 + prod(dims) * b


def _avg_pool(dims, params, b):
    n, c = dims[0], dims[1]
    return prod(dims), n * c * b + prod(dims) * b


def _linear(dims, params, b):
    m, k = dims
    n = int(params["out"])
    bias = str(params.get("bias", "true")) == "true"
    flops = 4 * m * k * n + (m * n if bias else 0)
    return flops, (m * n + 2 * m * k + 2 * n * k + (n if bias else 0)) * b


def _attention(dims, params, b):
    batch, s, heads, d = dims
    causal = 0.5 if str(params.get("causal", "false")) == "true" else 1.0
    return int(10 * batch * heads * s * s * d * causal), 8 * batch * s * heads * d * b


def _attention_forward(dims, params, b):
    batch, s, heads, d = dims
    causal = 0.5 if str(params.get("causal", "false")) == "true" else 1.0
    return int(4 * batch * heads * s * s * d * causal), 4 * batch * s * heads * d * b


def _sgd(dims, params, b):
    return 6 * prod(dims), 5 * prod(dims) * b


KINDS = {
    "batch_norm_backward": Kind("NxCxHxW", "10 flops an element (dbeta = sum dy, dgamma = sum "
                                "dy*xhat with xhat recomputed, dx = gamma/sigma*(dy - dbeta/M - "
                                "xhat*dgamma/M)); reads x and dy, writes dx", _elementwise(10, 3)),
    "relu_backward": Kind("any", "1 flop an element (dx = dy where y > 0); reads dy and y, "
                          "writes dx", _elementwise(1, 3)),
    "add_backward": Kind("any", "1 flop an element (the residual's two gradients summed); "
                         "reads both, writes the sum", _elementwise(1, 3)),
    "rms_norm_backward": Kind("TxH", "8 flops an element (dgamma and dx through the saved "
                              "1/rms); reads x and dy, writes dx", _elementwise(8, 3)),
    "max_pool_backward": Kind("NxCxHxW (the pool's input)", "1 flop an output gradient (added "
                              "at its argmax); reads dy and the int32 argmax, writes dx",
                              _max_pool),
    "avg_pool_backward": Kind("NxCxHxW (the pool's input)", "1 flop an input element (dy/HW "
                              "broadcast); reads dy, writes dx", _avg_pool),
    "linear_backward": Kind("MxK (out = N)", "4*M*K*N flops (dX = dY W, dW = dY^T X) plus M*N "
                            "for the bias; reads dY, X and W, writes dX, dW (and db)",
                            _linear),
    "attention_backward": Kind("BxSxHxD", "10*B*H*S^2*D flops (dQ, dK, dV, dP and the scores "
                               "recomputed, as flash attention does; half when causal); reads "
                               "Q, K, V, O, dO, writes dQ, dK, dV (the SxS scores stay on chip)",
                               _attention),
    "attention_forward": Kind("BxSxHxD", "4*B*H*S^2*D flops (the scores Q K^T and P V; "
                              "half when causal); reads Q, K, V, writes O and the softmax's "
                              "log-sum-exp (the SxS scores stay on chip)", _attention_forward),
    "softmax_backward": Kind("TxE", "4 flops an element (dx = y * (dy - sum(dy * y))); reads "
                             "y and dy, writes dx", _elementwise(4, 3)),
    "sgd_momentum": Kind("P (parameters)", "6 flops a parameter (weight decay, momentum, "
                         "update); reads w, g and m, writes w and m", _sgd),
}


def kind_names() -> str:
    return ", ".join(KINDS)


def check_entry(where: str, kind: str, dims: tuple, params: dict) -> None:
    """An NpusimError naming ``where`` when the entry cannot be counted."""
    if kind not in KINDS:
        raise NpusimError(f"{where}: unknown kind {kind!r}; kinds: {kind_names()}")
    want = KINDS[kind].shape.split(" ")[0].count("x") + 1
    if KINDS[kind].shape != "any" and len(dims) != want:
        raise NpusimError(f"{where}: {kind} takes a shape {KINDS[kind].shape}, got "
                          f"{'x'.join(map(str, dims))}")
    if kind == "linear_backward" and not str(params.get("out", "")).isdigit():
        raise NpusimError(f"{where}: linear_backward needs params.out, the output features")


def count(kind: str, dims: tuple, params: dict, dtype: str) -> tuple:
    """(flops, bytes) of one call of an unmodelled layer."""
    flops, nbytes = KINDS[kind].count(tuple(dims), params, DTYPE_BYTES[dtype])
    return float(flops), int(nbytes)
