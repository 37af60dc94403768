"""SwiGlu's and SwiGluGrad's goldens: the kernels' chains in their order (``ops/swiglu/
kernel.py``, ``ops/swiglu/grad_kernel.py``), each step rounded to fp32 (Exp is the exact
exponential rounded once, as ``isa/vector.py`` defines it); fp16/bf16 go through fp32 and back
to nearest even. fp32: sig = 1 / (1 + exp(-A)); out = sig x A x B. fp16/bf16: out = A / (1 +
exp(-A)) x B. Grad: N = sig x A x L; M = (sig x (1 - sig) x A + sig) x B x L (fp32) or x L x B
(fp16/bf16)."""

import numpy as np

F32 = np.float32


def _halves(x, dim):
    x = np.asarray(x)
    d = dim % x.ndim
    a, b = np.split(x, 2, axis=d)
    return x, d, a.astype(F32), b.astype(F32)


def _exp(v):
    with np.errstate(over="ignore"):
        return np.exp(v.astype(np.float64)).astype(F32)


def _denominator(a):
    return (_exp((a * F32(-1)).astype(F32)) + F32(1)).astype(F32)


def swi_glu(x, *, dim=-1, **_ignored) -> np.ndarray:
    """out in x's dtype, x's shape with ``dim`` halved."""
    x, _, a, b = _halves(x, dim)
    with np.errstate(all="ignore"):
        den = _denominator(a)
        if x.dtype.itemsize == 2:
            c = (a / den).astype(F32)
        else:
            c = ((F32(1) / den).astype(F32) * a).astype(F32)
        c = (c * b).astype(F32)
    return c.astype(x.dtype)


def swi_glu_grad(y_grad, x, *, dim=-1, **_ignored) -> np.ndarray:
    """The grad of x (both halves), in x's dtype and shape."""
    x, d, a, b = _halves(x, dim)
    lg = np.asarray(y_grad).astype(F32)
    with np.errstate(all="ignore"):
        sig = (F32(1) / _denominator(a)).astype(F32)
        n = ((sig * a).astype(F32) * lg).astype(F32)
        t = ((sig * F32(-1)).astype(F32) + F32(1)).astype(F32)
        m = ((sig * t).astype(F32) * a).astype(F32)
        m = ((m * F32(1)).astype(F32) + sig).astype(F32)
        first, second = (lg, b) if x.dtype.itemsize == 2 else (b, lg)
        m = ((m * first).astype(F32) * second).astype(F32)
    return np.concatenate([m, n], axis=d).astype(x.dtype)
