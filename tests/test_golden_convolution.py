"""The convolution golden's GEMM: the matmul-based group_gemm gives the bits of the plain loop
(each K group's products summed in float64 in increasing K, rounded to fp32, added in order)
on every kind of data: ordinary values, wide exponent spreads where float64 sums round,
subnormals, zeros, infinities and NaN."""

import ml_dtypes
import numpy as np
import pytest

from npusim.golden.convolution import group_gemm

F32 = np.float32


def loop_gemm(a, b, k0, acc):
    """The definition: the loop the golden used before it used a matmul."""
    for g0 in range(0, a.shape[1], k0):
        part = a[:, g0, None] * b[g0]
        for j in range(g0 + 1, min(g0 + k0, a.shape[1])):
            part = part + a[:, j, None] * b[j]
        acc = (acc + part.astype(F32)).astype(F32)
    return acc


def _data(rng, shape, dtype, kind):
    x = rng.standard_normal(shape)
    if kind == "spread":      # magnitudes over the dtype's whole range: sums that round
        x = x * np.exp2(rng.integers(-30, 30, shape))
    if kind == "special":
        x.flat[rng.integers(0, x.size, 12)] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-7] * 2
    if kind == "sparse":
        x[rng.random(shape) < 0.7] = 0.0
    with np.errstate(over="ignore"):
        return x.astype(dtype).astype(np.float64)


@pytest.mark.parametrize("kind", ["normal", "spread", "special", "sparse"])
@pytest.mark.parametrize("dtype, k0, bits", [(np.float16, 16, 11), (ml_dtypes.bfloat16, 16, 8),
                                             (np.float32, 8, 24)], ids=["fp16", "bf16", "fp32"])
def test_matmul_groups_give_the_loops_bits(dtype, k0, bits, kind):
    rng = np.random.default_rng(7)
    for m, k, n in ((37, 70, 23), (5, 16, 64), (64, 3, 9)):
        a, b = _data(rng, (m, k), dtype, kind), _data(rng, (k, n), dtype, kind)
        acc = rng.standard_normal((m, n)).astype(F32)
        with np.errstate(invalid="ignore", over="ignore"):
            want = loop_gemm(a, b, k0, acc.copy())
            got = group_gemm(a, b, k0, acc.copy(), bits)
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), (m, k, n)
