"""ConvolutionBackward's golden: the kernels' arithmetic in the kernels' order, in numpy.

Inputs are converted to the cube's dtype (round to nearest even) and, in HF32 mode, rounded to
the chip's HF32 mantissa. Each GEMM output element is an fp32 accumulator that starts at +0 and
adds, in increasing K, one fp32-rounded partial per K group of C0 (= k0) elements; a partial is
the float64 sum of its products taken in increasing K (the Mmad rule, ``isa/cube.py``).

- gradInput: K = (kd taps in increasing kd, Cout1, kh, kw, C0) over the zero-dilated gradOutput
  and the rotated weight (or, transposed, the forward window over gradOutput), converted once
  from fp32 to gradInput's dtype.
- gradWeight: per K part (a share of the (n, depth) slices; ``dw_k_parts``), K = grad positions
  of each slice in groups of k0 from its first position; the parts are summed in fp32 in part
  order (the deterministic reduction; with one part there is nothing to order), then converted.
  When the run added three or more parts with GM atomic adds, their order follows timing and
  gradWeight is an ``AtomicSum`` (``npusim/golden/atomic.py``): the part-order value and the
  bound within which any landing order falls.
- gradBias: an fp32 lane accumulator of ``bias_tile`` lanes adds gradOutput chunks (n, then
  chunk), then the halving-tree ReduceSum, then the conversion.
"""

import numpy as np

from npusim.golden.atomic import AtomicSum, order_bound

F32 = np.float32


def round_hf32(x: np.ndarray, bits: int) -> np.ndarray:
    """fp32 rounded to ``bits`` mantissa bits, ties to even (SetHF32TransMode NEAREST_EVEN)."""
    u = np.ascontiguousarray(x, F32).view(np.uint32).astype(np.uint64)
    drop = 23 - bits
    lsb = (u >> drop) & 1
    r = ((u + (1 << (drop - 1)) - 1 + lsb) >> drop) << drop
    finite = (u & 0x7F800000) != 0x7F800000
    return np.where(finite, r, u).astype(np.uint32).view(F32)


def cube_operand(a: np.ndarray, cd: str, hf32_bits: int) -> np.ndarray:
    """An input as the cube sees it, as float64."""
    v = np.asarray(a).astype(cd) if np.asarray(a).dtype != np.dtype(cd) else np.asarray(a)
    if hf32_bits:
        v = round_hf32(v.astype(F32), hf32_bits)
    return v.astype(np.float64)


EXACT_BITS = 53          # float64's precision: a sum of at most 2^53 units of its lowest bit
FAR = 1 << 14            # exponent sentinel: zeros never limit, non-finite values always do
BLOCK = 1 << 21          # float64 partials formed at once (16 MB)
MAGNITUDE = (1 << 63) - 1   # float64 bits without the sign: they order as |x| does
INF_BITS = 0x7FF << 52


def group_gemm(a: np.ndarray, b: np.ndarray, k0: int, acc: np.ndarray,
               bits: int = EXACT_BITS) -> np.ndarray:
    """acc (fp32) += A·B group by group of k0 along K (A m x K, B K x n, float64): each group's
    partial is the float64 sum of its products in increasing K, rounded to fp32 and added.

    ``bits``: the significant bits of A's and B's values (11 for fp16, 8 for bf16, 24 for fp32,
    HF32's mantissa + 1); 53 leaves nothing to BLAS. The partials come from a float64 matmul
    where that sum is exact whatever its order: all of an element's products are multiples of
    2^(lo_a + lo_b) (from its row of A and column of B in the group: the smallest nonzero
    exponent less ``bits``) and below k0 * 2^(hi_a + hi_b) in magnitude, so when those span at
    most 53 bits every partial sum is representable and BLAS's order (or its FMA) gives the
    sequential sum's bits. The elements where they do not (a wide exponent spread, inf or
    NaN) are summed in increasing K as before. Same bits as the plain loop, tested. The product
    is formed as (B^T A^T)^T when A has more rows than B columns (the same products in the same
    K order): numpy's stacked matmul is several times faster with the wide side last."""
    m, k = a.shape
    n = b.shape[1]
    if 0 in (m, n, k):   # nothing to add: an empty block, or no K
        return acc
    if m > n:
        return group_gemm(b.T, a.T, k0, np.ascontiguousarray(acc.T), bits).T
    room = EXACT_BITS - (max(k0, 1) - 1).bit_length()
    at, b = np.ascontiguousarray(a.T), np.ascontiguousarray(b)
    span_a, span_b = _spans(at, k0, bits), _spans(b, k0, bits)   # (groups, m), (groups, n)
    step = max(1, BLOCK // max(1, m * n))
    for g0 in range(0, span_a.shape[0], step):
        g1 = min(g0 + step, span_a.shape[0])
        a3 = np.ascontiguousarray(_groups(at, g0, g1, k0).transpose(0, 2, 1))   # (g, m, k0)
        b3 = _groups(b, g0, g1, k0)                                             # (g, k0, n)
        parts = np.matmul(a3, b3)
        _in_order(parts, a3, b3, span_a[g0:g1], span_b[g0:g1], room)
        for part in parts:
            acc = (acc + part.astype(F32)).astype(F32)
    return acc


def _groups(x: np.ndarray, g0: int, g1: int, k0: int) -> np.ndarray:
    """Rows g0·k0 .. g1·k0 of x (K x w) as (groups, k0, w), the last group zero-padded."""
    rows = x[g0 * k0:g1 * k0]
    if rows.shape[0] < (g1 - g0) * k0:
        rows = np.concatenate([rows, np.zeros(((g1 - g0) * k0 - rows.shape[0], x.shape[1]))])
    return rows.reshape(g1 - g0, k0, x.shape[1])


def _spans(x: np.ndarray, k0: int, bits: int) -> np.ndarray:
    """hi - lo of every group of k0 rows of x (K x w, float64 of ``bits`` significant bits),
    per column: (groups, w). Every |value| < 2^e_max and every nonzero one is a multiple of
    2^(e_min - bits), read from the largest magnitude and the smallest nonzero one (their bits
    order as the magnitudes do): e_max - e_min + bits; -FAR for an all-zero group, +FAR for one
    holding inf, NaN or a float64 subnormal (never the widening of the cube's dtypes)."""
    groups = -(-x.shape[0] // k0)
    mag = np.zeros((groups * k0, x.shape[1]), np.uint64)
    np.bitwise_and(x.view(np.uint64), np.uint64(MAGNITUDE), out=mag[:x.shape[0]])
    mag = mag.reshape(groups, k0, -1)
    top = np.maximum.reduce(mag, axis=1)
    mag -= np.uint64(1)         # zeros wrap to the largest value: the minimum is the smallest
    low = np.minimum.reduce(mag, axis=1) + np.uint64(1)   # nonzero one (0 when all are zero)
    span = (top >> np.uint64(52)).astype(np.int64) - (low >> np.uint64(52)).astype(np.int64)
    odd = (top >= np.uint64(INF_BITS)) | (low < np.uint64(1 << 52))
    return np.where(top == 0, -FAR, np.where(odd, FAR, span + bits))


def _in_order(parts, a3, b3, span_a, span_b, room: int) -> None:
    """Overwrite the partials whose sums may round with the sum in increasing K. A row can
    fail only with its group's widest column and a column only with its widest row: only
    those pairs are tested."""
    rows = span_a + span_b.max(axis=1, keepdims=True) > room
    cols = span_b + span_a.max(axis=1, keepdims=True) > room
    for q in np.flatnonzero(rows.any(axis=1) & cols.any(axis=1)).tolist():
        i, j = np.flatnonzero(rows[q]), np.flatnonzero(cols[q])
        ii, jj = np.nonzero(span_a[q, i][:, None] + span_b[q, j][None, :] > room)
        ii, jj = i[ii], j[jj]
        seq = a3[q, ii, 0] * b3[q, 0, jj]
        for t in range(1, a3.shape[2]):
            seq = seq + a3[q, ii, t] * b3[q, t, jj]
        parts[q, ii, jj] = seq


def taps(out_len, src_len, k, s, d, lo, transposed):
    """(source index or -1, tap index into the weight) of map row i*stride - off + t*d."""
    i = np.arange(out_len)[:, None]
    t = np.arange(k)[None, :]
    if transposed:
        q = i * s - lo + t * d
        src = np.where((q >= 0) & (q < src_len), q, -1)
        return src, np.broadcast_to(t, src.shape)
    q = i + lo - (k - 1) * d + t * d          # dilated coordinate, rotated tap k-1-t
    ok = (q >= 0) & (q % s == 0) & (q // s < src_len)
    return np.where(ok, q // s, -1), np.broadcast_to(k - 1 - t, q.shape)


def gather_map(src: np.ndarray, hs, ws) -> np.ndarray:
    """src (C, H, W) read at rows hs (Ho, kh) and columns ws (Wo, kw): (Ho, Wo, C, kh, kw)."""
    h, w = hs[:, None, :, None], ws[None, :, None, :]
    vals = src[:, np.clip(h, 0, None), np.clip(w, 0, None)]          # (C, Ho, Wo, kh, kw)
    vals = np.where((h >= 0) & (w >= 0), vals, 0.0)
    return vals.transpose(1, 2, 0, 3, 4)


def pad_channels(a: np.ndarray, axis: int, c0: int) -> np.ndarray:
    extra = (-a.shape[axis]) % c0
    if not extra:
        return a
    width = [(0, 0)] * a.ndim
    width[axis] = (0, extra)
    return np.pad(a, width)


def five(a: np.ndarray) -> np.ndarray:
    return a.reshape(a.shape[:2] + (1,) * (5 - a.ndim) + a.shape[2:])


def significant_bits(cd, hf32_bits: int) -> int:
    """Significant bits of the cube's operands: HF32's mantissa + 1, else the dtype's."""
    if hf32_bits:
        return hf32_bits + 1
    return {2: 11 if np.dtype(cd) == np.float16 else 8, 4: 24}[np.dtype(cd).itemsize]


def grad_input(dy, w, x_shape, conv, cd, hf32_bits, out_dtype):
    s, lo, dil, groups, transposed = conv
    dy5, w5 = cube_operand(five(dy), cd, hf32_bits), cube_operand(five(w), cd, hf32_bits)
    n, _, d_out, h_out, w_out = (five(np.empty(x_shape, np.int8))).shape
    k0 = 32 // np.dtype(cd).itemsize
    kd_, kh, kw = w5.shape[2:]
    tap = [taps(o, src, k, st, dl, p, transposed) for o, src, k, st, dl, p in
           zip((d_out, h_out, w_out), dy5.shape[2:], (kd_, kh, kw), s, dil, lo, strict=True)]
    kc = dy5.shape[1] // groups
    nc = x_shape[1] // groups
    out = np.zeros((n, groups * nc, d_out, h_out * w_out), F32)
    for g in range(groups):
        if transposed:
            wg = w5[g * nc:(g + 1) * nc].transpose(1, 0, 2, 3, 4)   # (kc, nc, kd, kh, kw)
        else:
            wg = w5[g * kc:(g + 1) * kc]
        for ni in range(n):
            for di in range(d_out):
                out[ni, g * nc:(g + 1) * nc, di] = _dx_slice(
                    dy5[ni, g * kc:(g + 1) * kc], wg, tap, di, k0,
                    significant_bits(cd, hf32_bits)).T
    return out.reshape(x_shape).astype(out_dtype)


def _dx_slice(dyg, wg, tap, di, k0, bits):
    (dsrc, dt), (hs, ht), (ws, wt) = tap
    kc, nc = wg.shape[:2]
    acc = np.zeros((hs.shape[0] * ws.shape[0], nc), F32)
    for kd in np.argsort(dt[di], kind="stable"):   # the kernel walks the weight's kd upward
        q = dsrc[di, kd]
        if q < 0:
            continue
        cols = gather_map(dyg[:, q], hs, ws)                       # (Ho, Wo, kc, kh, kw)
        cols = pad_channels(cols, 2, k0)
        c1 = cols.shape[2] // k0
        a = cols.reshape(cols.shape[0] * cols.shape[1], c1, k0, hs.shape[1], ws.shape[1])
        a = a.transpose(0, 1, 3, 4, 2)
        b = pad_channels(wg[:, :, dt[di, kd]], 0, k0)[:, :, ht[0]][:, :, :, wt[0]]
        b = b.reshape(c1, k0, nc, hs.shape[1], ws.shape[1]).transpose(0, 3, 4, 1, 2)
        acc = group_gemm(a.reshape(a.shape[0], int(np.prod(a.shape[1:]))),
                         b.reshape(int(np.prod(b.shape[:-1])), nc), k0, acc, bits)
    return acc


def grad_weight(dy, x, w_shape, conv, cd, hf32_bits, out_dtype, parts, atomic=False):
    s, lo, dil, groups, transposed = conv
    feat, grad = (dy, x) if transposed else (x, dy)
    f5, g5 = cube_operand(five(feat), cd, hf32_bits), cube_operand(five(grad), cd, hf32_bits)
    k0 = 32 // np.dtype(cd).itemsize
    kdhw = five(np.empty(w_shape, np.int8)).shape[2:]
    gc, fc = g5.shape[1] // groups, f5.shape[1] // groups
    tap = [taps(o, src, k, st, dl, p, True) for o, src, k, st, dl, p in
           zip(g5.shape[2:], f5.shape[2:], kdhw, s, dil, lo, strict=True)]
    out = np.zeros((groups * gc, fc) + kdhw, F32)
    mags = np.zeros_like(out, np.float64)     # sum of the partials' magnitudes (atomic bound)
    slices = g5.shape[0] * g5.shape[2]
    for g in range(groups):
        for kd in range(kdhw[0]):
            total, mag = None, 0.0
            for p in range(parts):
                acc = np.zeros((gc, fc * kdhw[1] * kdhw[2]), F32)
                for sl in range(p * slices // parts, (p + 1) * slices // parts):
                    ni, dg = divmod(sl, g5.shape[2])
                    q = tap[0][0][dg, kd]
                    if q >= 0:
                        acc = _dw_slice(g5[ni, g * gc:(g + 1) * gc, dg],
                                        f5[ni, g * fc:(g + 1) * fc, q], tap, k0, acc,
                                        significant_bits(cd, hf32_bits))
                total = (acc + F32(0)).astype(F32) if total is None else (total + acc)
                mag = mag + np.abs(acc.astype(np.float64))
            out[g * gc:(g + 1) * gc, :, kd] = total.reshape(gc, fc, *kdhw[1:])
            mags[g * gc:(g + 1) * gc, :, kd] = np.reshape(mag, (gc, fc, *kdhw[1:]))
    value = out.reshape(w_shape).astype(out_dtype)
    if not atomic or parts < 3:   # two partials land in either order with the same bits
        return value
    return AtomicSum(value, order_bound(mags.reshape(w_shape), parts, value))


def _dw_slice(grad, feat, tap, k0, acc, bits):
    hs, ws = tap[1][0], tap[2][0]
    cols = gather_map(feat, hs, ws)                                 # (Ho, Wo, fc, kh, kw)
    b = cols.reshape(hs.shape[0] * ws.shape[0], -1)
    a = grad.reshape(grad.shape[0], -1)
    return group_gemm(a, b, k0, acc, bits)    # groups of k0 positions from the slice's start


def grad_bias(dy, tile: int):
    d = np.asarray(dy)
    n, c = d.shape[:2]
    x = d.reshape(n, c, int(np.prod(d.shape[2:]))).astype(F32)
    s = x.shape[2]
    acc = np.zeros((c, tile), F32)
    for ni in range(n):
        for s0 in range(0, s, tile):
            chunk = x[ni, :, s0:s0 + tile]
            acc[:, :chunk.shape[1]] = (acc[:, :chunk.shape[1]] + chunk).astype(F32)
    size = 1 << max(tile - 1, 0).bit_length()
    acc = np.concatenate([acc, np.zeros((c, size - tile), F32)], axis=1)
    while size > 1:
        size //= 2
        acc = (acc[:, :size] + acc[:, size:]).astype(F32)
    return acc[:, 0].astype(d.dtype)


def convolution_backward(grad_output, input, weight, *, stride, padding, dilation,  # noqa: A002
                         transposed=False, output_padding=None, groups=1,
                         output_mask=(True, True, True), compute_dtype=None, hf32_bits=0,
                         dw_k_parts=1, bias_tile=4096, cube_math_type=1, atomic=False, **_):
    """{gradInput, gradWeight, gradBias} as the kernels compute them (None where masked).

    ``compute_dtype`` / ``hf32_bits`` are the cube's dtype and HF32 width the operator chose
    for the cubeMathType (by default: the promoted dtype, fp16 for cubeMathType 2, no HF32);
    ``dw_k_parts`` and ``bias_tile`` the tiling's values. ``atomic``: the run added the dw parts
    with GM atomic adds (their order follows timing): gradWeight is then an ``AtomicSum``.
    """
    dy, x, w = (np.asarray(a) for a in (grad_output, input, weight))
    if compute_dtype is None:
        same = dy.dtype == x.dtype == w.dtype
        compute_dtype = "float16" if cube_math_type == 2 else (dy.dtype if same else "float32")
    nsp = x.ndim - 2
    lo = list(padding[0::2] if len(padding) == 4 else padding)
    pre = [1] * (3 - nsp)
    conv = (pre + list(stride), [0] * (3 - nsp) + lo, pre + list(dilation), groups, transposed)
    dx_t = np.result_type(x.dtype, dy.dtype) if x.dtype == dy.dtype else np.float32
    dw_t = w.dtype if w.dtype == dy.dtype else np.float32
    out = {"gradInput": None, "gradWeight": None, "gradBias": None}
    if output_mask[0]:
        out["gradInput"] = grad_input(dy, w, x.shape, conv, compute_dtype, hf32_bits, dx_t)
    if output_mask[1]:
        out["gradWeight"] = grad_weight(dy, x, w.shape, conv, compute_dtype, hf32_bits, dw_t,
                                        dw_k_parts, atomic)
    if output_mask[2]:
        out["gradBias"] = grad_bias(dy, bias_tile)
    return out


def convolution(input, weight, bias=None, *, stride, padding, dilation,  # noqa: A002
                compute_dtype=None, hf32_bits=0, kernel_dtype=None, cube_math_type=1, **_):
    """{output} of aclnnConvolution (groups = 1, no bias) as the kernels compute it: the dx
    GEMM of a transposed convolution (``grad_input`` with ``transposed``: the forward window
    over the input), K = (Cin1, kh, kw, C0) in groups of C0, converted once from fp32 to
    ``kernel_dtype`` (the dtype Conv2D writes) and then to the output dtype (the promoted input
    dtype; the TransData's Cast when they differ)."""
    x, w = np.asarray(input), np.asarray(weight)
    if bias is not None:
        raise ValueError("the convolution golden models no bias (the operator refuses one)")
    out_t = x.dtype if x.dtype == w.dtype else np.dtype(F32)
    if compute_dtype is None:
        compute_dtype = "float16" if cube_math_type == 2 else out_t
    kernel_dtype = kernel_dtype or compute_dtype
    nsp = x.ndim - 2
    pads = list(padding)
    lo = pads[0::2] if len(pads) == 2 * nsp else pads
    hi = pads[1::2] if len(pads) == 2 * nsp else pads
    out_sp = [(x.shape[2 + i] + lo[i] + hi[i] - dilation[i] * (w.shape[2 + i] - 1) - 1)
              // stride[i] + 1 for i in range(nsp)]
    pre = [1] * (3 - nsp)
    conv = (pre + list(stride), [0] * (3 - nsp) + list(lo), pre + list(dilation), 1, True)
    out = grad_input(x, w, (x.shape[0], w.shape[0], *out_sp), conv, compute_dtype, hf32_bits,
                     kernel_dtype)
    return {"output": out.astype(out_t)}
