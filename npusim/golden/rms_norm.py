"""RmsNorm's and RmsNormGrad's goldens: the kernels' fp32 chains in their order
(``ops/norm/kernel.py``, ``ops/norm/grad_kernel.py``), every step rounded to fp32.

Row sums are the vector unit's pairwise halving tree over a power-of-two padding, fp32 at every
level. RmsNorm: rstd = 1 / sqrt(fp32(sum(x^2) x fp32(1/cols)) + fp32(eps)); y = (x x rstd) x
gamma, cast to the output dtype to nearest even. RmsNormGrad: per row, xr = x x rstd, dgamma
partial += dy x xr (rows of a core in order), gy = dy x gamma, mean = sum(gy x xr) x fp32(1/cols),
dx = (gy - xr x mean) x rstd; dgamma = the cores' partials added in core order (``block_dim``
cores of ceil(rows / block_dim) rows, the last core the rest).
"""

import numpy as np

F32 = np.float32


def halving_rows(a: np.ndarray) -> np.ndarray:
    """Each row's sum by the halving tree, fp32 at every level."""
    a = np.asarray(a, F32)
    n = a.shape[-1]
    size = 1 << max(n - 1, 0).bit_length()
    a = np.concatenate([a, np.zeros((*a.shape[:-1], size - n), F32)], axis=-1)
    while size > 1:
        size //= 2
        a = (a[..., :size] + a[..., size:]).astype(F32)
    return a[..., 0]


def _rows(x, gamma) -> tuple:
    g = np.asarray(gamma)
    x = np.asarray(x)
    return x.reshape(-1, g.size).astype(F32), g.reshape(-1).astype(F32), g.size


def _cast(a: np.ndarray, dtype) -> np.ndarray:
    return a.astype(dtype)      # numpy and ml_dtypes round to nearest even


def rms_norm(x, gamma, *, epsilon=1e-6, **_ignored) -> dict:
    """{"yOut", "rstdOut"} as the RmsNorm kernel computes them."""
    xf, gf, cols = _rows(x, gamma)
    x = np.asarray(x)
    g_ndim = np.asarray(gamma).ndim
    with np.errstate(all="ignore"):
        s = halving_rows((xf * xf).astype(F32))
        m = (s * (F32(1.0) / F32(cols))).astype(F32)
        m = (m + F32(epsilon)).astype(F32)
        rstd = (F32(1.0) / np.sqrt(m).astype(F32)).astype(F32)
        y = ((xf * rstd[:, None]).astype(F32) * gf).astype(F32)
    rstd_shape = x.shape[:x.ndim - g_ndim] + (1,) * g_ndim
    return {"yOut": _cast(y, x.dtype).reshape(x.shape), "rstdOut": rstd.reshape(rstd_shape)}


def _core_spans(rows: int, block_dim: int) -> list:
    factor = -(-rows // block_dim)
    return [(c * factor, min(rows, (c + 1) * factor)) for c in range(block_dim)]


def rms_norm_grad(dy, x, rstd, gamma, *, block_dim=None, **_ignored) -> dict:
    """{"dxOut", "dgammaOut"}; ``block_dim`` is the run's (it fixes dgamma's order); None means
    min(rows, 48) cores with ceil(rows / cores) rows each."""
    xf, gf, cols = _rows(x, gamma)
    dyf = np.asarray(dy).reshape(-1, cols).astype(F32)
    r = np.asarray(rstd, F32).reshape(-1)[:, None]
    rows = xf.shape[0]
    with np.errstate(all="ignore"):
        xr = (xf * r).astype(F32)
        p = (dyf * xr).astype(F32)
        gy = (dyf * gf).astype(F32)
        mean = (halving_rows((gy * xr).astype(F32)) * (F32(1.0) / F32(cols))).astype(F32)
        dx = (((gy - (xr * mean[:, None]).astype(F32)).astype(F32)) * r).astype(F32)
        dgamma = _dgamma(p, rows, cols, block_dim)
    return {"dxOut": _cast(dx, np.asarray(x).dtype).reshape(np.asarray(x).shape),
            "dgammaOut": dgamma.reshape(np.asarray(gamma).shape)}


def _dgamma(p: np.ndarray, rows: int, cols: int, block_dim) -> np.ndarray:
    if rows == 0:
        return np.zeros(cols, F32)
    cores = block_dim or min(rows, 48)
    cores = -(-rows // -(-rows // cores))            # the cores the split uses
    total = None
    for lo, hi in _core_spans(rows, cores):
        acc = np.zeros(cols, F32)
        for i in range(lo, hi):
            acc = (acc + p[i]).astype(F32)
        total = acc if total is None else (total + acc).astype(F32)
    return total
