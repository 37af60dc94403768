"""Regression pins of the simulator's own results: cycles and output hashes (issue 13).

These are NOT goldens (the goldens are numpy references in ``npusim/golden/``, compared in the
operators' own tests). They are the exact cycle counts (of the operator and of every kernel it
launches) and the sha256 of the bytes of every output, as the engine produced them when the pins
were taken, so a change meant to make the simulator faster and leave the model alone is shown to
do so: any moved cycle or changed output bit fails here. A change that is meant to move cycles
(a modelling fix) re-pins them and says why in its commit.

Pinned: silu in several sizes and dtypes, convolution backward (3x3, a 1x1 and an atomic dw
split), cross_entropy_loss_grad, embedding_dense_backward (uniform and zipf indices),
moe_token_permute_grad, and the micro-kernels of ``npusim/micro/``, on both chips where the
operator runs there. The operator cases are defined in ``npusim/face/pinned.py`` (``npusim
bench --group fast`` runs them too). Regenerate with ``python tests/test_pinned_cycles.py``
(prints PINS).
"""

import hashlib

import numpy as np
import pytest

from npusim.cases import CASES
from npusim.face.pinned import A2, PINNED_OPS, TR
from npusim.micro.matmul import run_matmul
from npusim.micro.stream import run_stream
from npusim.micro.vector import run_vector


def _op(pin):
    def run():
        case = CASES[pin.op]
        args, kwargs = case.make(tuple(pin.shape), pin.dtype, case.parse_params(pin.params),
                                 np.random.default_rng(0))
        options = {**pin.options, **({"tiling": pin.tiling} if pin.tiling else {})}
        return case.function()(*args, **kwargs, chip=pin.chip, **options)
    return run


def _micro(fn, **kw):
    def run():
        r = fn(**kw)
        for name in ("x", "y", "a", "b"):    # the inputs the runners hand back
            r.outputs.pop(name, None)
        return r
    return run


RUNS = {
    **{name: _op(pin) for name, pin in PINNED_OPS.items()},
    "micro-vector-add-a2": _micro(run_vector, op="add", block_dim=4, tiles=4, chip=A2),
    "micro-vector-expmul-a2": _micro(run_vector, op="exp_mul", block_dim=4, tiles=4, chip=A2),
    "micro-vector-expmul-tr": _micro(run_vector, op="exp_mul", block_dim=4, tiles=4, chip=TR),
    "micro-matmul-a2": _micro(run_matmul, m=64, n=64, k=256, chip=A2),
    "micro-matmul-tr": _micro(run_matmul, m=64, n=64, k=256, chip=TR),
    "micro-stream-a2": _micro(run_stream, block_dim=8, per_core_bytes=1 << 20, chip=A2),
    "micro-stream-tr": _micro(run_stream, block_dim=8, per_core_bytes=1 << 20, chip=TR),
}


def fingerprint(result) -> tuple:
    """(cycles, cycles of every kernel, {output: dtype, shape, sha256 of its bytes}) of a Result."""
    kernels = tuple(k["cycles"] for k in result.stats.get("kernels", ()))
    hashes = {}
    for name, out in sorted(result.outputs.items()):
        if out is not None:
            arr = np.ascontiguousarray(out)
            digest = hashlib.sha256(arr.tobytes()).hexdigest()[:24]
            hashes[name] = f"{arr.dtype}{arr.shape}:{digest}"
    return result.cycles, kernels, hashes


PINS = {
    'silu-a2-fp16-4096': (7850, (7850,), {
        'gradInput': 'float16(4096,):fc6b6e9172432c2e0df5fe85',
    }),
    'silu-a2-fp16-100003': (9159, (9159,), {
        'gradInput': 'float16(100003,):126fc76d8d8f5a66602a188d',
    }),
    'silu-a2-fp32-64x1024': (8932, (8932,), {
        'gradInput': 'float32(64, 1024):8824b68c26e78ac759233713',
    }),
    'silu-a2-bf16-33333': (8437, (8437,), {
        'gradInput': 'bfloat16(33333,):1f7766b883ab67e6915833c2',
    }),
    'silu-a2-fp16-100003-bare': (9159, (9159,), {
        'gradInput': 'float16(100003,):126fc76d8d8f5a66602a188d',
    }),
    'silu-a2-fp16-100003-timing': (9159, (9159,), {
        'gradInput': 'float16(100003,):7bc257f75a41c35a0c10f9b6',
    }),
    'conv-a2-2x32x14x14-1x1-timing': (83415, (7766, 7806, 8485, 8061, 7686, 7542, 8950, 9167, 3552), {  # noqa: E501
        'gradBias': 'float16(64,):38723a2e5e8a17aa7950dc00',
        'gradInput': 'float16(2, 32, 14, 14):d82ad1081dfe2e318b6d8886',
        'gradWeight': 'float16(64, 32, 1, 1):ad7facb2586fc6e966c004d7',
    }),
    'silu-tr-fp16-65536': (5431, (5431,), {
        'gradInput': 'float16(65536,):dbfa00cba9f39e14769c999d',
    }),
    'silu-tr-fp32-5000': (4737, (4737,), {
        'gradInput': 'float32(5000,):3033d64638d9e01c60ba679b',
    }),
    'conv-a2-1x16x8x8-3x3': (70307, (7340, 8173, 8435, 7340, 7340, 8269, 8936, 1874), {
        'gradBias': 'float16(16,):e49f5df93d4b748aa75b31d4',
        'gradInput': 'float16(1, 16, 8, 8):a0064bd65821a740ea32a890',
        'gradWeight': 'float16(16, 16, 3, 3):e4c4c34997eb3af26a5a3c8a',
    }),
    'conv-tr-1x16x8x8-3x3': (42831, (4291, 5179, 5416, 4291, 4291, 5672, 5369, 1322), {
        'gradBias': 'float16(16,):e49f5df93d4b748aa75b31d4',
        'gradInput': 'float16(1, 16, 8, 8):a0064bd65821a740ea32a890',
        'gradWeight': 'float16(16, 16, 3, 3):e4c4c34997eb3af26a5a3c8a',
    }),
    'conv-a2-2x32x14x14-1x1': (83415, (7766, 7806, 8485, 8061, 7686, 7542, 8950, 9167, 3552), {
        'gradBias': 'float16(64,):0064f5036849ffd4ba76ebc5',
        'gradInput': 'float16(2, 32, 14, 14):fa13d32d2651917649b23280',
        'gradWeight': 'float16(64, 32, 1, 1):78b0abd86630452595e37d54',
    }),
    'conv-tr-2x32x14x14-s2': (57498, (4353, 6083, 7199, 5355, 4751, 4256, 7278, 8514, 1709), {
        'gradBias': 'float16(32,):2846712697d81f4b37fd1f29',
        'gradInput': 'float16(2, 32, 14, 14):1fb30285d8e6bcf26783202e',
        'gradWeight': 'float16(32, 32, 3, 3):7000a4ab8f40693c95d00573',
    }),
    'conv-a2-atomic-dw': (53602, (7793, 7793, 7720, 10108, 12988), {
        'gradWeight': 'float16(32, 32, 3, 3):624409f7add1dc1834a1aed1',
    }),
    'conv-tr-atomic-dw': (34839, (4919, 4919, 4256, 8231, 8514), {
        'gradWeight': 'float16(32, 32, 3, 3):624409f7add1dc1834a1aed1',
    }),
    'ce-a2-64x1000': (5598, (5598,), {
        'xGradOut': 'float32(64, 1000):fe61dc871bada6175c3b9c97',
    }),
    'ce-a2-48x2000-none': (3825, (3825,), {
        'xGradOut': 'float16(48, 2000):0364a0c6da9db756ad3972bc',
    }),
    'emb-a2-uniform': (15510, (2432, 2183, 7295), {
        'out': 'float32(500, 64):ee0339725fbe8f2d65f3fc3a',
    }),
    'emb-a2-zipf': (15604, (2432, 2183, 7389), {
        'out': 'float32(500, 64):cd9c7b2948eb24d013767280',
    }),
    'emb-tr-uniform': (6377, (1370, 4007), {
        'out': 'float32(500, 64):ddf3e2188f594910d9d48439',
    }),
    'emb-tr-zipf': (6389, (1370, 4019), {
        'out': 'float32(500, 64):9bcb610c53bf7470d8db6d2a',
    }),
    'moe-a2-64x512': (9772, (9772,), {
        'out': 'float32(64, 512):0e7e3bd45ad9ee947a1c92b9',
    }),
    'micro-vector-add-a2': (3140, (), {
        'z': 'float16(32768,):b6d269127554855626b25366',
    }),
    'micro-vector-expmul-a2': (3198, (), {
        'z': 'float16(32768,):105d641957e1231b63068a4a',
    }),
    'micro-vector-expmul-tr': (2051, (), {
        'z': 'float16(32768,):105d641957e1231b63068a4a',
    }),
    'micro-matmul-a2': (2617, (), {
        'c': 'float32(64, 64):69be16a7454867f3411e0b30',
    }),
    'micro-matmul-tr': (5025, (), {
        'c': 'float32(64, 64):69be16a7454867f3411e0b30',
    }),
    'micro-stream-a2': (15182, (), {
    }),
    'micro-stream-tr': (29449, (), {
    }),
}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_cycles_and_outputs_are_pinned(name):
    assert fingerprint(RUNS[name]()) == PINS[name]


if __name__ == "__main__":
    print("PINS = {")
    for key in RUNS:
        cycles, kernels, hashes = fingerprint(RUNS[key]())
        head = f"    {key!r}: ({cycles}, {kernels!r}, {{"
        print(head + ("  # noqa: E501" if len(head) > 100 else ""))
        for name, digest in hashes.items():
            print(f"        {name!r}: {digest!r},")
        print("    }),")
    print("}")
