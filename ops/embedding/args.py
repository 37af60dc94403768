"""aclnnEmbeddingDenseBackward's argument rules, per product (the seed document).

grad: 2 to 8 dims, float16/float32 (Atlas training) or also bfloat16 (Atlas A2); its leading
dims, merged, must equal the merged indices (1 to 8 dims). indices: FLOAT, FLOAT16, DOUBLE,
INT32, INT64, INT16, INT8, UINT8 or BOOL. out (when given): 2-D (numWeights, grad's last dim),
grad's dtype. numWeights: a positive integer. paddingIdx: an integer, negative for none.
Atlas training with scaleGradByFreq limits the embedding dim (kernels.md §4(d)):
D < (180192 - countsSize * 4) / 36 for int32 indices, (180192 - countsSize * 8) / 20 for int64,
countsSize = numWeights // coreNum + numWeights % coreNum.

Not in the seed but checked here so that no index writes outside out: every index, after the
cast aclnn applies (floats truncate toward zero, bool is 0 or 1), must lie in [0, numWeights).
"""

from dataclasses import dataclass

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import ACLNN_ERR_PARAM_INVALID, ParamError
from npusim.ops.common import PRODUCT_NAMES, as_array, check_dtype, product_name, require

OP = "aclnnEmbeddingDenseBackward"
GRAD_DTYPES = {"atlas-training": ("float16", "float32"),
               "atlas-a2": ("bfloat16", "float16", "float32")}
INDEX_NAMES = ("float32", "float16", "float64", "int32", "int64", "int16", "int8", "uint8",
               "bool")
INDEX_DTYPES = {"atlas-training": INDEX_NAMES, "atlas-a2": INDEX_NAMES}
MAX_DIMS = 8
V1_SCALE_UB_BYTES = 180192       # the seed's constant for Atlas training with scale
V1_SCALE_ROW_BYTES = {"int32": (4, 36), "int64": (8, 20)}   # (count bytes, bytes per D)


@dataclass(frozen=True, kw_only=True)
class EmbeddingSpec:
    """The checked call: grad as (rows, dim), the flat indices (as given) and the attributes."""

    grad: np.ndarray           # (grad_rows, dim), grad's dtype, may be a strided view
    indices: np.ndarray        # (grad_rows,), the caller's dtype
    num_weights: int
    padding_idx: int           # -1 when the caller gave a negative value
    scale: bool
    grad_shape: tuple

    @property
    def rows(self) -> int:
        return self.grad.shape[0]

    @property
    def dim(self) -> int:
        return self.grad.shape[1]


def invalid(msg: str) -> ParamError:
    return ParamError(f"{OP}: {msg}", code=ACLNN_ERR_PARAM_INVALID)


def _int_attr(name: str, value, low: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise invalid(f"{name} = {value!r}: an integer is required")
    if low is not None and value < low:
        raise invalid(f"{name} = {value}: must be at least {low}")
    return int(value)


def check_embedding_dense_backward(chip, grad, indices, num_weights, padding_idx=-1,
                                   scale_grad_by_freq=False, out=None, *, has_output=False):
    """The seed's argument rules on ``chip``; returns an EmbeddingSpec."""
    tensors = {"grad": grad, "indices": indices}
    if has_output:
        tensors["out"] = out
    require(OP, **tensors)
    if chip.product not in GRAD_DTYPES:   # the seed lists no other product (Atlas inference)
        supported = ", ".join(f"{p} ({PRODUCT_NAMES.get(p, p)})" for p in GRAD_DTYPES)
        raise invalid(f"not supported on {chip.name} ({product_name(chip)}); supported "
                      f"products: {supported}")
    g, idx = as_array(OP, "grad", grad), as_array(OP, "indices", indices)
    check_dtype(OP, "grad", g, GRAD_DTYPES, chip)
    check_dtype(OP, "indices", idx, INDEX_DTYPES, chip)
    nw = _int_attr("numWeights", num_weights, 1)
    pad = _int_attr("paddingIdx", padding_idx, None)
    if not isinstance(scale_grad_by_freq, bool | np.bool_):
        raise invalid(f"scaleGradByFreq = {scale_grad_by_freq!r}: allowed True or False")
    if not 2 <= g.ndim <= MAX_DIMS:
        raise invalid(f"grad has {g.ndim} dims {tuple(g.shape)}; allowed 2 to {MAX_DIMS}")
    if not 1 <= idx.ndim <= MAX_DIMS:
        raise invalid(f"indices has {idx.ndim} dims {tuple(idx.shape)}; allowed 1 to {MAX_DIMS}")
    rows = int(np.prod(g.shape[:-1], dtype=np.int64))
    if rows != idx.size:
        raise invalid(f"grad {tuple(g.shape)} has {rows} rows (its dims before the last, "
                      f"merged) but indices {tuple(idx.shape)} has {idx.size} elements; "
                      "they must be equal")
    if has_output:
        _check_out(g, as_array(OP, "out", out), nw)
    spec = EmbeddingSpec(grad=g.reshape(rows, g.shape[-1]), indices=idx.reshape(-1),
                         num_weights=nw, padding_idx=max(pad, -1), scale=bool(scale_grad_by_freq),
                         grad_shape=tuple(g.shape))
    if spec.scale and not chip.separated:
        check_v1_scale_dim(chip, spec)
    check_index_values(spec)
    return spec


def _check_out(g: np.ndarray, out: np.ndarray, num_weights: int) -> None:
    want = (num_weights, g.shape[-1])
    if out.ndim != 2 or tuple(out.shape) != want:
        raise invalid(f"out has shape {tuple(out.shape)}; must be (numWeights, grad's last "
                      f"dim) = {want}")
    if out.dtype != g.dtype:
        raise invalid(f"out dtype {name_of(out.dtype)} differs from grad's "
                      f"{name_of(g.dtype)}; they must be equal")


def index_kind(chip, dtype) -> str:
    """The index dtype the kernels read: int64 stays int64 on Atlas training (V1 takes it),
    every other dtype is cast to int32 (on Atlas A2 always)."""
    return "int64" if name_of(dtype) == "int64" and not chip.separated else "int32"


def check_v1_scale_dim(chip, spec: EmbeddingSpec) -> None:
    """Atlas training with scaleGradByFreq: the seed's embedding-dim limit."""
    kind = index_kind(chip, spec.indices.dtype)
    count_bytes, per_dim = V1_SCALE_ROW_BYTES[kind]
    cores = chip.ai_core_count
    counts = spec.num_weights // cores + spec.num_weights % cores
    limit = (V1_SCALE_UB_BYTES - counts * count_bytes) / per_dim
    if not spec.dim < limit:
        raise invalid(f"embedding dim {spec.dim} with scaleGradByFreq on {chip.name} "
                      f"({product_name(chip)}) and {kind} indices: must be below "
                      f"(180192 - {counts} x {count_bytes}) / {per_dim} = {limit:.1f} "
                      f"(countsSize {counts} for numWeights {spec.num_weights} over {cores} cores)")


def cast_indices(indices: np.ndarray, kind: str = "int32") -> np.ndarray:
    """The indices as aclnn's Cast gives them: floats truncate toward zero (NaN gives 0),
    bool is 0 or 1, and values saturate at the target's range."""
    arr = np.asarray(indices)
    info = np.iinfo(kind)
    if arr.dtype.kind == "f" or name_of(arr.dtype) == "bfloat16":
        wide = np.nan_to_num(np.trunc(arr.astype(np.float64)), nan=0.0, posinf=info.max,
                             neginf=info.min)
        high, low = wide >= float(info.max), wide <= float(info.min)
        out = np.where(high | low, 0, wide).astype(kind)   # in range: no invalid cast
        out[high], out[low] = info.max, info.min
        return out
    return np.clip(arr.astype(np.int64), info.min, info.max).astype(kind)


def check_index_values(spec: EmbeddingSpec) -> None:
    """Every index, as cast, in [0, numWeights): else a ParamError naming the first bad one
    (a float index that is infinite says so)."""
    if spec.indices.size == 0:
        return
    raw = np.asarray(spec.indices)
    bound = f"[0, numWeights) = [0, {spec.num_weights})"
    if raw.dtype.kind == "f" or name_of(raw.dtype) == "bfloat16":
        inf = np.flatnonzero(np.isinf(raw.astype(np.float64)))
        if inf.size:
            i = int(inf[0])
            raise invalid(f"indices[{i}] = {raw[i].item()!r} is not finite; an index must be "
                          f"a finite number in {bound}; {inf.size} indices are infinite")
    values = cast_indices(raw, "int64")
    bad = np.flatnonzero((values < 0) | (values >= spec.num_weights))
    if bad.size:
        i = int(bad[0])
        shown = raw[i].item()
        cast = f" (as an index: {int(values[i])})" if abs(shown) < 2**62 else ""
        raise invalid(f"indices[{i}] = {shown!r}{cast} is outside {bound}; {bad.size} "
                      "indices are out of range")
