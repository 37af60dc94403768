"""SiluBackward's golden: the kernel's fp32 chain, each step rounded to fp32 as the vector unit
stores it (Exp is the exact exponential rounded once, as ``isa/vector.py`` defines it)."""

import numpy as np


def silu_backward(grad_output: np.ndarray, self_: np.ndarray) -> np.ndarray:
    """gradInput in the inputs' dtype, computed as kernels.md §1(c) orders it."""
    f32 = np.float32
    dy = np.asarray(grad_output).astype(f32)
    x = np.asarray(self_).astype(f32)
    t1 = (x * f32(-1)).astype(f32)
    with np.errstate(over="ignore"):   # exp(-x) beyond fp32 is inf, as on the chip
        t1 = np.exp(t1.astype(np.float64)).astype(f32)
    t1 = (t1 + f32(1)).astype(f32)
    sig = (f32(1) / t1).astype(f32)
    t2 = (f32(1) - sig).astype(f32)
    t2 = (t2 * x).astype(f32)
    t2 = (t2 + f32(1)).astype(f32)
    t2 = (sig * t2).astype(f32)
    out = (dy * t2).astype(f32)
    return out.astype(np.asarray(grad_output).dtype)
