"""One way to test an operator (tinygrad's helper_test_op): run it, then check every output
bit for bit against its golden and within a tolerance against PyTorch in float64.

    check_op(ops.silu_backward, golden.silu_backward, torch_silu_backward, (dy, x),
             chip="atlas-a2", rtol=1e-3)

``reference`` takes the inputs as float64 torch tensors and returns {name: tensor}; the golden
takes the numpy inputs and returns an array or {name: array}. An output passes the torch check
when ``|out - ref| <= rtol * |ref| + atol``, with ``atol`` (default ``rtol * floor`` times the
largest ``|ref|``, and never below the output dtype's smallest normal number) absorbing fp32
cancellation and underflow where the true value is near zero.
"""

import ml_dtypes
import numpy as np
import torch

from npusim.golden.atomic import AtomicSum

FLOOR = 1e-2  # default absolute floor, as a fraction of the largest reference magnitude


def to_torch(arr: np.ndarray) -> torch.Tensor:
    """float64 torch tensor of any numpy array npusim uses (bf16 included)."""
    return torch.from_numpy(np.asarray(arr).astype(np.float64))


def check_op(run, golden, reference, inputs: tuple, *, chip="atlas-a2", mode="timed",
             params: dict | None = None, rtol: float, atol: float | None = None,
             exact: bool = True, **run_options):
    """Run ``run(*inputs, chip=, mode=, **params)`` and check it; return the Result."""
    params = params or {}
    result = run(*inputs, chip=chip, mode=mode, **params, **run_options)
    want = golden(*inputs, **params)
    want = want if isinstance(want, dict) else {_only(result): want}
    if exact:
        for name, expected in want.items():
            if isinstance(expected, AtomicSum):   # summed by atomic adds: any landing order
                assert expected.within(result.outputs[name]).all(), f"{name}: beyond the " \
                    "summation-order bound of the golden"
                continue
            assert_bit_equal(result.outputs[name], expected, name)
    if reference is not None:
        refs = reference(*(to_torch(a) for a in inputs), **params)
        for name, ref in refs.items():
            assert_close(result.outputs[name], ref.detach().numpy(), rtol, atol, name)
    return result


def _only(result) -> str:
    (name,) = [n for n, v in result.outputs.items() if v is not None]
    return name


def assert_bit_equal(got: np.ndarray, want: np.ndarray, name: str = "output") -> None:
    """Same shape, dtype and bytes; on failure, where the first difference is."""
    want = np.asarray(want)
    assert got.shape == want.shape, f"{name}: shape {got.shape} != golden {want.shape}"
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} != golden {want.dtype}"
    item = got.dtype.itemsize
    rows = np.ascontiguousarray(got).reshape(-1).view(np.uint8).reshape(-1, item)
    want_rows = np.ascontiguousarray(want).reshape(-1).view(np.uint8).reshape(-1, item)
    bad = np.flatnonzero(np.any(rows != want_rows, axis=1))
    if bad.size == 0:
        return
    idx = np.unravel_index(bad[0], got.shape)
    raise AssertionError(f"{name}: {bad.size} elements differ from the golden; first at {idx}: "
                         f"{got[idx]!r} != {want[idx]!r}")


def assert_close(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float | None,
                 name: str = "output") -> None:
    g = np.asarray(got).astype(np.float64)
    assert g.shape == ref.shape, f"{name}: shape {g.shape} != reference {ref.shape}"
    if g.size == 0:
        return
    if atol is None:
        atol = rtol * FLOOR * float(np.max(np.abs(ref)))
    # Below the dtype's smallest normal the dtype cannot tell; and a result within rtol of it
    # comes from intermediates (exp, products) that already underflowed to zero in the dtype
    # (seen: silu fp32 at x = -100, exact 5.6e-38, computed 0).
    tiny = float(ml_dtypes.finfo(got.dtype).tiny)
    atol = max(atol, tiny / rtol if rtol > 0 else tiny)
    err = np.abs(g - ref)
    bound = rtol * np.abs(ref) + atol
    worst = np.unravel_index(np.argmax(err - bound), err.shape)
    assert np.all(err <= bound), (
        f"{name}: {int(np.sum(err > bound))} of {err.size} elements beyond rtol {rtol} "
        f"atol {atol:.3g}; worst at {worst}: {g[worst]!r} vs reference {ref[worst]!r}")
