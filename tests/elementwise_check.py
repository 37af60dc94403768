"""What the elementwise operators' tests share: their dtypes per chip, tolerances, inputs."""

import numpy as np

from npusim.dtypes import bfloat16

RTOL = {"float32": 1e-6, "float16": 1e-3, "bfloat16": 4e-3}   # one rounding of the result
DTYPES = {"atlas-a2": ["float16", "float32", "bfloat16"], "atlas-training": ["float16", "float32"]}
CASES = [(chip, dt) for chip, dts in DTYPES.items() for dt in dts]


def np_dtype(name: str):
    return bfloat16 if name == "bfloat16" else np.dtype(name)


def rtol_of(arr) -> float:
    return RTOL["bfloat16" if arr.dtype == bfloat16 else arr.dtype.name]


def normal(shape, dtype, seed=0, scale=4.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * scale).astype(np_dtype(dtype) if isinstance(dtype, str)
                                                       else dtype)
