"""The case of aclnnEmbeddingDenseBackward: uniform or Zipf indices, inputs, flops and help
for the command."""

import numpy as np

from npusim.cases.common import MAX_ELEMENTS, OpCase, Param, parse_bool, random_array
from npusim.dtypes import DTYPES
from npusim.errors import NpusimError

EMB_ZIPF_EXPONENT = 1.1   # indices=zipf: row r of a random ranking drawn with weight 1 / r**1.1
EMB_INDEX_DTYPES = ("int64", "int32", "int16", "int8", "uint8", "bool", "float32", "float16",
                    "float64")


def _emb_choice(allowed):
    def parse(text):
        if text not in allowed:
            raise ValueError(f"one of {', '.join(allowed)}")
        return text
    return parse


def _emb_variant(text):
    return None if text in ("", "default") else _emb_choice(
        ("sorted", "deterministic", "small_dim", "v1"))(text)


EMB_PARAMS = (
    Param(name="num_weights", parse=int, default="32000", help="numWeights: rows of out"),
    Param(name="padding_idx", parse=int, default="-1",
          help="paddingIdx: rows with this index are skipped (negative: none)"),
    Param(name="scale_grad_by_freq", parse=parse_bool, default="false",
          help="divide each out row by how often its index occurs"),
    Param(name="indices", parse=_emb_choice(("uniform", "zipf")), default="uniform",
          help="index distribution: uniform over numWeights, or zipf (a few hot rows take "
               "most tokens: long runs of one index)"),
    Param(name="index_dtype", parse=_emb_choice(EMB_INDEX_DTYPES), default="int64",
          help="dtype of indices (cast to int32 as aclnn casts it)"),
    Param(name="variant", parse=_emb_variant, default="default",
          help="the kernel: default (as CANN chooses), sorted, deterministic, small_dim "
               "(Atlas A2), v1 (Atlas training)"),
)


def emb_indices(rng, count: int, num_weights: int, kind: str) -> np.ndarray:
    """``count`` indices in [0, num_weights): uniform, or Zipf-ranked over a random order."""
    if kind == "uniform":
        return rng.integers(0, num_weights, count)
    ranks = (rng.zipf(EMB_ZIPF_EXPONENT, count) - 1) % num_weights
    return rng.permutation(num_weights)[ranks]


def _emb_make(shape, dtype, params, rng):
    if len(shape) < 2:
        raise NpusimError("embedding_dense_backward: --shape is TOKENS x DIM (or more leading "
                          f"dims), got {len(shape)} dimension")
    nw = params["num_weights"]
    if nw < 1:
        raise NpusimError(f"embedding_dense_backward: num_weights = {nw}: must be at least 1")
    if nw * shape[-1] > MAX_ELEMENTS * 4:
        raise NpusimError(f"embedding_dense_backward: out would have {nw * shape[-1]:,} "
                          f"elements (num_weights x dim), more than {MAX_ELEMENTS * 4:,}")
    idx = emb_indices(rng, int(np.prod(shape[:-1])), nw, params["indices"])
    idx = idx.reshape(shape[:-1]).astype(DTYPES[params["index_dtype"]])
    kwargs = {"num_weights": nw, "padding_idx": params["padding_idx"],
              "scale_grad_by_freq": params["scale_grad_by_freq"], "variant": params["variant"]}
    return (random_array(rng, shape, dtype), idx), kwargs


def _emb_flops(args, kwargs):
    """fp32 adds: one per element of every grad row that is not padding; with scale, one
    multiply per element of out."""
    grad, idx = args
    kept = int(np.sum(np.asarray(idx).reshape(-1).astype(np.int64) != kwargs["padding_idx"]))
    scale = kwargs["num_weights"] * grad.shape[-1] if kwargs["scale_grad_by_freq"] else 0
    return kept * grad.shape[-1] + scale


def _emb_golden_options(result, args, kwargs) -> dict:
    """The tiling the run chose (variant, core split, flush size): the summation order."""
    return {"chip": result.chip, "tiling": result.tiling, "atomic": True}


EMBEDDING_DENSE_BACKWARD = OpCase(
    name="embedding_dense_backward", aclnn="aclnnEmbeddingDenseBackward",
    summary="out[i] = sum of the grad rows whose index is i (numWeights x DIM)",
    shape_help="TOKENS x DIM: the shape of grad (more leading dims allowed); indices has the "
               "leading dims",
    default_shape=(8192, 4096), demo_shape=(2048, 1024), quick_shape=(64, 128),
    dtypes=("float32", "float16", "bfloat16"), unit="vector",
    make=_emb_make, flops=_emb_flops, params=EMB_PARAMS,
    golden_options=_emb_golden_options, atomic_outputs=("out",),
    tiling_help="variant (sorted, deterministic, small_dim on Atlas A2; v1 on Atlas training), "
                "block_dim (cores of the main kernel), dim_chunk (DIM elements per pass), "
                "batch_rows (rows per UB batch: v1, small_dim), flush_rows (rows an "
                "accumulator sums before an atomic flush, 10 as CANN)",
    notes="A scatter-add: out is zeroed, grad read once and the touched rows atomically "
          "added, so the time depends on the indices (repeats are summed in UB before they "
          "reach GM). The roofline counts grad and indices in and out written once. out is an "
          "atomic output except with variant=deterministic.")
