"""Data types npusim knows, by the names the aclnn documents use.

``bfloat16`` comes from ml_dtypes. ``hfloat32`` is not a storage type: it names the A2 cube's
HF32 mode, where fp32 operands are rounded to a shorter mantissa before the multiply (see
``isa/cube.py``).
"""

import ml_dtypes
import numpy as np

from npusim.errors import NpusimError

bfloat16 = np.dtype(ml_dtypes.bfloat16)

DTYPES: dict[str, np.dtype] = {
    "float16": np.dtype(np.float16),
    "float32": np.dtype(np.float32),
    "bfloat16": bfloat16,
    "int8": np.dtype(np.int8),
    "uint8": np.dtype(np.uint8),
    "int16": np.dtype(np.int16),
    "uint16": np.dtype(np.uint16),
    "int32": np.dtype(np.int32),
    "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64),
    "float64": np.dtype(np.float64),
    "bool": np.dtype(np.bool_),
}


def dtype_of(spec) -> np.dtype:
    """Return the numpy dtype for a name ('float16'), a numpy dtype or a numpy scalar type."""
    if isinstance(spec, str):
        if spec not in DTYPES:
            raise NpusimError(f"unknown dtype {spec!r}; known: {sorted(DTYPES)}")
        return DTYPES[spec]
    try:
        dt = np.dtype(spec)
    except TypeError as exc:
        raise NpusimError(f"not a dtype: {spec!r}; known: {sorted(DTYPES)}") from exc
    if name_of(dt) is None:
        raise NpusimError(f"unsupported dtype {dt}; known: {sorted(DTYPES)}")
    return dt


_NAMES: dict = {}     # what name_of was asked -> its answer (dtype specs are hashable)
_FLOATS: dict = {}    # the same for is_float


def name_of(dt) -> str | None:
    """Return npusim's name for a numpy dtype, or None when npusim does not know it."""
    try:
        return _NAMES[dt]
    except (KeyError, TypeError):
        pass
    found = None
    spec, dt = dt, np.dtype(dt)
    for name, known in DTYPES.items():
        if known == dt:
            found = name
            break
    _remember(_NAMES, spec, found)
    return found


def is_float(dt) -> bool:
    try:
        return _FLOATS[dt]
    except (KeyError, TypeError):
        pass
    found = np.dtype(dt) in (DTYPES["float16"], DTYPES["float32"], bfloat16, DTYPES["float64"])
    _remember(_FLOATS, dt, found)
    return found


def _remember(cache: dict, spec, value) -> None:
    try:
        cache[spec] = value
    except TypeError:     # an unhashable spec is answered, not cached
        pass
