"""EmbeddingDenseBackward's golden: the kernels' summation order, in numpy.

Each variant is replayed at the level of grad rows: a UB accumulator starts at +0 and adds rows
in fp32 in the kernel's order; each flush adds the accumulator into out in fp32. Flushes of one
core land in program order; flushes of different cores into one row land, on the chip, in
simulated-time order; here in core order (core 0 first), which is also the functional mode's
order. So the golden is bit-exact for the deterministic variant and v1 with scale, and for the
others whenever no output row gets partial sums from two cores (or in functional mode). With
scale, A2 multiplies each row by the fp32 reciprocal of its count after the sums; Atlas training
(v1) multiplies each grad row by it before adding. A 16-bit result is rounded once at the end
(round to nearest even), as the final Cast kernel does.
"""

import ml_dtypes
import numpy as np

from npusim.golden.atomic import U32, AtomicSum
from npusim.ops.embedding.args import cast_indices
from npusim.ops.embedding.tiling import embedding_tiling

F32 = np.float32
SINGLE_WRITER = {("deterministic", False), ("deterministic", True), ("v1", True)}


def embedding_dense_backward(grad, indices, *, num_weights, padding_idx=-1,
                             scale_grad_by_freq=False, chip="atlas-a2", tiling=None,
                             variant=None, atomic=False):
    """out (num_weights, D) in grad's dtype, summed in the order ``tiling`` (a tiling, or the
    overrides dict for the default one, with ``variant`` as the op takes it) makes the kernels
    sum. With ``atomic``, an output whose partial sums meet from several cores comes back as
    an ``AtomicSum`` carrying the summation-order bound (what ``npusim run`` checks)."""
    from npusim.chip import load_chip
    from npusim.ops.embedding.dense_backward import with_variant

    chip = load_chip(chip)
    grad = np.asarray(grad)
    g = grad.reshape(int(np.prod(grad.shape[:-1])), grad.shape[-1]).astype(F32)
    idx = cast_indices(np.asarray(indices).reshape(-1), "int64")
    pad = max(int(padding_idx), -1)
    tiling = tiling if tiling is not None and not isinstance(tiling, dict) else \
        with_variant(tiling, variant)
    t = tiling if tiling is not None and not isinstance(tiling, dict) else embedding_tiling(
        chip, rows=g.shape[0], dim=g.shape[1], num_weights=num_weights,
        scale=bool(scale_grad_by_freq), overrides=tiling)
    counts = np.bincount(idx[idx != pad], minlength=num_weights).astype(F32) \
        if g.shape[0] else np.zeros(num_weights, F32)
    recip = np.where(counts > 0, F32(1) / np.maximum(counts, F32(1)), F32(1)).astype(F32)
    if t.variant == "v1" and scale_grad_by_freq:
        parts = [(int(idx[r]), (g[r] * recip[idx[r]]).astype(F32))
                 for r in np.flatnonzero(idx != pad)]
    else:
        parts = list(FLUSHES[t.variant](g, idx, pad, t))
    out = np.zeros((num_weights, g.shape[1]), F32)
    for i, part in parts:
        out[i] = (out[i] + part).astype(F32)
    scaled = scale_grad_by_freq and t.variant != "v1"
    if scaled:
        out = (out * recip[:, None]).astype(F32)
    value = out.astype(grad.dtype, copy=False)
    if not atomic or (t.variant, bool(scale_grad_by_freq)) in SINGLE_WRITER:
        return value
    return AtomicSum(value, _order_bound(parts, num_weights, value, recip if scaled else None))


def _order_bound(parts, num_weights: int, value, recip) -> np.ndarray:
    """How far another landing order of the partial sums may put each row (see
    ``npusim/golden/atomic.py``): 2 (P - 1) u S for a row of P partials whose magnitudes sum to
    at most S (per row: the largest over its elements), times the row's scale plus one fp32
    rounding of the scaling, plus the final cast's last place. Shape (num_weights, 1)."""
    rows = np.fromiter((i for i, _ in parts), np.int64, len(parts))
    n = np.bincount(rows, minlength=num_weights)
    top = np.zeros(num_weights)
    if len(parts):             # per row: its partials' magnitudes summed in order, the largest
        order = np.argsort(rows, kind="stable")
        rows = rows[order]
        mags = np.abs(np.stack([parts[k][1] for k in order]).astype(np.float64))
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        sums = np.add.reduceat(mags, starts, axis=0)
        # a column with NaN or inf is compared as NaN / inf (any order gives it), so it sets
        # no bound for the row's finite columns
        top[rows[starts]] = sums.max(axis=1, initial=0.0, where=np.isfinite(sums))
    # the largest finite magnitude per row, exactly, without a float64 copy of the output
    finite = np.isfinite(value)
    big = np.maximum(value.max(axis=1, initial=0, where=finite),
                     -value.min(axis=1, initial=0, where=finite)).astype(np.float64)
    bound = 2.0 * np.maximum(n - 1, 0) * U32 * top
    if recip is not None:
        bound = bound * recip + 2.0 * U32 * big
    if value.dtype.itemsize < 4:
        fin = ml_dtypes.finfo(value.dtype)
        bound = bound + big * float(fin.eps) + float(fin.smallest_subnormal)
    return bound[:, None]


class _Walker:
    """The two ping-pong accumulators of the V2 kernels and the flushes they make."""

    def __init__(self, g, pad: int, full):
        self.g, self.pad, self.full = g, pad, full
        self.acc = [np.zeros(g.shape[1], F32), np.zeros(g.shape[1], F32)]
        self.added, self.switch, self.last = [0, 0], 0, -1
        self.flushes: list = []

    def flush(self, which: int, index: int):
        self.flushes.append((index, self.acc[which]))
        self.acc[which] = np.zeros(self.g.shape[1], F32)
        self.added[which] = 0

    def close(self):
        if self.last != -1:
            self.flush(self.switch, self.last)
            self.last = -1

    def step(self, index: int, row: int, is_last: bool):
        if index == self.pad:
            self.close()
            return
        switched = self.last != -1 and index != self.last
        if switched:
            self.switch = 1 - self.switch
            self.added[self.switch] = 0
        self.acc[self.switch] = (self.acc[self.switch] + self.g[row]).astype(F32)
        self.added[self.switch] += 1
        if self.full(self.added[self.switch]) or is_last:
            self.flush(self.switch, index)
        if switched:
            self.flush(1 - self.switch, self.last)
        self.last = index


def _sorted(g, idx, pad, t):
    order = np.argsort(idx, kind="stable")
    keys = idx[order]
    for core in range(t.block_dim):
        start, count = t.core_rows(core)
        w = _Walker(g, pad, lambda n: n > t.flush_rows)
        for i in range(count):
            w.step(int(keys[start + i]), int(order[start + i]), i == count - 1)
        yield from w.flushes


def _deterministic(g, idx, pad, t):
    order = np.argsort(idx, kind="stable")
    keys = idx[order]
    for core in range(t.block_dim):
        start, count = t.core_rows(core)
        if count == 0:
            continue
        w = _Walker(g, pad, lambda n: n == t.flush_rows)
        before = int(keys[start - 1]) if start > 0 else -1
        go_on = True
        for i in range(count - 1, -1, -1):
            if keys[start + i] == before:
                w.close()
                go_on = i != count - 1
                break
            w.step(int(keys[start + i]), int(order[start + i]), i == 0)
        if go_on:
            w.last = -1
            own = int(keys[start + count - 1])
            for r in range(start + count, t.rows):
                if keys[r] != own:
                    w.close()
                    break
                w.step(int(keys[r]), int(order[r]), r == t.rows - 1)
        yield from w.flushes


def _small_dim(g, idx, pad, t):
    for core in range(t.block_dim):
        start, count = t.core_rows(core)
        for b in range(start, start + count, t.batch_rows):
            rows = np.arange(b, min(b + t.batch_rows, start + count))
            rows = rows[np.argsort(idx[rows], kind="stable")]
            acc, last = np.zeros(g.shape[1], F32), -1
            for r in rows:
                i = int(idx[r])
                if i == pad:
                    continue
                if i != last and last != -1:
                    yield last, acc
                    acc = np.zeros(g.shape[1], F32)
                acc = (acc + g[r]).astype(F32)
                last = i
            if last != -1:
                yield last, acc


def _v1(g, idx, pad, t):
    for r in np.flatnonzero(idx != pad):
        yield int(idx[r]), g[r]


FLUSHES = {"sorted": _sorted, "deterministic": _deterministic, "small_dim": _small_dim,
           "v1": _v1}
