"""The cases of aclnnForeachAddListV2 and aclnnForeachMulScalarV2 (the SGD step torch_npu runs
on Atlas A2): a tensor list, its flops and help.

``--shape N`` gives every tensor of the list N elements (1-D: the foreach kernels see only the
element count); ``--param tensors=K`` makes the list K such tensors; ``--param sizes=a,b,...``
lists the tensors' element counts instead (then ``--shape`` is ignored), so a workload can give
one call of a model's parameter list as torch_npu groups it (16 tensors an out-of-place add,
24 an in-place add, 48 an in-place mul).
"""

from npusim.cases.common import MAX_ELEMENTS, OpCase, Param, random_array
from npusim.errors import NpusimError

SGD_SHAPE = (2_359_296,)    # ResNet-50's largest parameter, layer4's 512x512x3x3 weight


def parse_sizes(text: str) -> tuple:
    """``"2359296,64"`` -> (2359296, 64); "" -> () (use --shape and tensors)."""
    if not str(text).strip():
        return ()
    try:
        sizes = tuple(int(v) for v in str(text).split(","))
    except ValueError:
        raise ValueError("element counts separated by commas, e.g. 2359296,64") from None
    if min(sizes) < 1:
        raise ValueError("every element count must be at least 1")
    return sizes


def _sizes(name: str, shape, params) -> tuple:
    sizes = params["sizes"] or (int(shape[0]),) * params["tensors"]
    if len(shape) != 1 and not params["sizes"]:
        raise NpusimError(f"{name}: --shape is one number, the elements of each tensor, got "
                          f"{len(shape)} dimensions")
    if params["tensors"] < 1:
        raise NpusimError(f"{name}: tensors = {params['tensors']}: at least 1")
    if sum(sizes) > MAX_ELEMENTS:
        raise NpusimError(f"{name}: the list has {sum(sizes):,} elements; at most "
                          f"{MAX_ELEMENTS:,}")
    return sizes


def _list(rng, sizes, dtype) -> list:
    return [random_array(rng, (n,), dtype) for n in sizes]


def _add_make(shape, dtype, params, rng):
    sizes = _sizes("foreach_add_list_v2", shape, params)
    return (_list(rng, sizes, dtype), _list(rng, sizes, dtype)), {"alpha": params["alpha"]}


def _mul_make(shape, dtype, params, rng):
    sizes = _sizes("foreach_mul_scalar_v2", shape, params)
    return (_list(rng, sizes, dtype),), {"scalar": params["scalar"]}


LIST_PARAMS = (
    Param(name="tensors", parse=int, default="1",
          help="tensors in the list, each of --shape elements"),
    Param(name="sizes", parse=parse_sizes, default="",
          help="the tensors' element counts, comma-separated (instead of --shape and tensors)"),
)
FOREACH_TILING = "block_dim (vector cores), tile_length (elements per queue buffer)"
NOTES = ("Atlas A2 only (on the Atlas training series torch_npu runs aclnnAdd / aclnnMuls per "
         "tensor). One kernel walks every tensor of the list; the cores split the list's "
         "elements end to end in 32-byte blocks. Roofline: the lists' bytes over HBM.")

FOREACH_ADD_LIST_V2 = OpCase(
    name="foreach_add_list_v2", aclnn="aclnnForeachAddListV2",
    summary="out[i] = x1[i] + alpha * x2[i] for every tensor of two lists (SGD's weight decay, "
            "momentum sum and update)",
    shape_help="N: the elements of each tensor of the list (see --param tensors, sizes)",
    default_shape=SGD_SHAPE, demo_shape=(1 << 20,), quick_shape=(4096,),
    dtypes=("float32", "float16", "bfloat16"), unit="vector",
    make=_add_make, flops=lambda args, kwargs: 2 * sum(a.size for a in args[0]),
    params=(Param(name="alpha", parse=float, default="-0.1",
                  help="x2's factor (SGD: weight_decay, 1 - dampening or -lr)"), *LIST_PARAMS),
    tiling_help=FOREACH_TILING, sweep_example="--tiling block_dim=8:40:8", notes=NOTES)

FOREACH_MUL_SCALAR_V2 = OpCase(
    name="foreach_mul_scalar_v2", aclnn="aclnnForeachMulScalarV2",
    summary="out[i] = x[i] * scalar for every tensor of a list (SGD's momentum decay)",
    shape_help="N: the elements of each tensor of the list (see --param tensors, sizes)",
    default_shape=SGD_SHAPE, demo_shape=(1 << 20,), quick_shape=(4096,),
    dtypes=("float32", "float16", "bfloat16"), unit="vector",
    make=_mul_make, flops=lambda args, kwargs: sum(a.size for a in args[0]),
    params=(Param(name="scalar", parse=float, default="0.9",
                  help="the factor (SGD: momentum)"), *LIST_PARAMS),
    tiling_help=FOREACH_TILING, sweep_example="--tiling block_dim=8:40:8", notes=NOTES)
