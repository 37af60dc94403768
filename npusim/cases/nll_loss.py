"""The cases of the training series' loss, as torch's ``cross_entropy`` runs there:
aclnnLogSoftmax, aclnnNLLLoss, aclnnNLLLossBackward, aclnnLogSoftmaxBackward (random logits,
log-probabilities of them, targets with ignored rows, class weights of ones unless asked)."""

import numpy as np

from npusim.cases.common import OpCase, Param, parse_bool, random_array
from npusim.cases.cross_entropy_loss_grad import CE_IGNORED_EVERY
from npusim.errors import NpusimError

REDUCTION = {"none": 0, "mean": 1, "sum": 2}
NLL_PARAMS = (
    Param(name="reduction", parse=str, default="mean", help="none, mean or sum"),
    Param(name="ignore_index", parse=int, default="-100",
          help="targets equal to it are left out; every 16th row's target is set to it"),
    Param(name="weight", parse=parse_bool, default="false",
          help="random class weights (else ones, as torch passes)"))
TILING = ("block_dim (vector cores used), row_batch (rows a batch holds), col_chunk "
          "(elements of a row per chunk), buffer_num (1 or 2)")
NOTES = ("Atlas training series (CANN runs it on A2 too, with other kernels: not modelled). "
         "torch's F.cross_entropy there is log_softmax, nll_loss and, backward, "
         "nll_loss_backward, log_softmax_backward.")


def _rows(name, shape):
    if len(shape) != 2 or min(shape) <= 0:
        raise NpusimError(f"{name}: --shape is N x C (rows x classes, each > 0), got "
                          f"{'x'.join(map(str, shape))}")
    return shape


def _log_probs(name, shape, dtype, rng):
    from npusim.golden import log_softmax

    return log_softmax(random_array(rng, _rows(name, shape), dtype))["out"]


def _make_lsm(shape, dtype, params, rng):
    return (random_array(rng, _rows("log_softmax", shape), dtype),), {"dim": 1}


def _make_lsm_backward(shape, dtype, params, rng):
    y = _log_probs("log_softmax_backward", shape, dtype, rng)
    return (random_array(rng, shape, dtype), y), {"dim": 1}


def _nll_inputs(name, shape, dtype, params, rng):
    n, c = shape
    x = _log_probs(name, shape, dtype, rng)
    target = rng.integers(0, c, n, dtype=np.int64)
    target[::CE_IGNORED_EVERY] = params["ignore_index"]
    w = rng.uniform(0.5, 2.0, c) if params["weight"] else np.ones(c)
    if params["reduction"] not in REDUCTION:
        raise NpusimError(f"{name}: reduction {params['reduction']!r}: none, mean or sum")
    kwargs = {"reduction": REDUCTION[params["reduction"]], "ignore_index": params["ignore_index"]}
    return (x, target, w.astype(np.float32)), kwargs


def _make_nll(shape, dtype, params, rng):
    return _nll_inputs("nll_loss", shape, dtype, params, rng)


def _make_nll_backward(shape, dtype, params, rng):
    from npusim.golden import nll_loss

    (x, target, w), kwargs = _nll_inputs("nll_loss_backward", shape, dtype, params, rng)
    total = nll_loss(x, target, w, **kwargs)["totalWeightOut"]
    g = random_array(rng, (shape[0],) if kwargs["reduction"] == 0 else (1,), dtype)
    return (g, x, target, w), {**kwargs, "total_weight": total}


def _golden_options(result, args, kwargs) -> dict:
    """The cores and row batches the run used: they fix the sums' order."""
    return {"block_dim": result.tiling.block_dim, "row_batch": result.tiling.row_batch}


def _case(name, aclnn, summary, make, ops, **extra):
    return OpCase(name=name, aclnn=aclnn, summary=summary,
                  shape_help="N x C: the logits' shape (rows x classes); ResNet-50's loss at "
                             "batch 32 is 32x1000",
                  default_shape=(32, 1000), demo_shape=(1024, 1000), quick_shape=(64, 1000),
                  unit="vector", make=make, flops=lambda a, k: ops * a[0].size,
                  tiling_help=TILING, notes=NOTES, **extra)


LOG_SOFTMAX = _case("log_softmax", "aclnnLogSoftmax",
                    "out = x - max - ln(sum exp(x - max)) over the class axis", _make_lsm, 5,
                    dtypes=("float32", "float16"))
LOG_SOFTMAX_BACKWARD = _case("log_softmax_backward", "aclnnLogSoftmaxBackward",
                             "out = g - exp(output) x sum(g) over the class axis",
                             _make_lsm_backward, 4, dtypes=("float32", "float16"))
NLL_LOSS = _case("nll_loss", "aclnnNLLLoss",
                 "out = -weight[target] x self[target] (mean over the weights, sum or per "
                 "row), totalWeightOut = the weights' sum", _make_nll, 0, dtypes=("float32",),
                 params=NLL_PARAMS, golden_options=_golden_options)
NLL_LOSS_BACKWARD = _case("nll_loss_backward", "aclnnNLLLossBackward",
                          "out[n, target] = -weight[target] x gradOutput (/ totalWeight for "
                          "mean), 0 elsewhere", _make_nll_backward, 0, dtypes=("float32",),
                          params=NLL_PARAMS)
