"""What every operator shares: argument checks with aclnn codes, tiling overrides, GM inputs.

The argument rules come from each operator's seed document. A missing tensor (a null pointer in
aclnn) is ``ParamError`` 161001; every other violation is ``ParamError`` 161002. Messages say what
was wrong, the value given and what is allowed.
"""

import dataclasses

import numpy as np

from npusim.chip import load_chip
from npusim.dtypes import name_of
from npusim.errors import (
    ACLNN_ERR_PARAM_INVALID,
    ACLNN_ERR_PARAM_NULLPTR,
    ParamError,
    TilingError,
)

PRODUCT_NAMES = {"atlas-training": "Atlas training series (Ascend 910)",
                 "atlas-a2": "Atlas A2 (Ascend 910B)",
                 "atlas-inference": "Atlas inference series (Ascend 310P)"}


def resolve_chip(chip):
    """The Chip for a name, a path or a Chip; an unknown name lists the chips there are."""
    return load_chip(chip)


def product_name(chip) -> str:
    return PRODUCT_NAMES.get(chip.product, chip.product)


def check_modelled_product(op: str, chip, modelled, unmodelled=()) -> None:
    """ParamError 161002 unless ``chip``'s product is one of ``modelled``; for one of
    ``unmodelled`` (CANN runs the operator there, npusim does not model that kernel) it says so."""
    if chip.product in modelled:
        return
    supported = ", ".join(PRODUCT_NAMES.get(p, p) for p in modelled)
    if chip.product in unmodelled:
        raise ParamError(f"{op}: not supported on {chip.name} ({product_name(chip)}) by npusim: "
                         f"CANN runs it there, but npusim does not model that kernel; modelled "
                         f"on: {supported}", code=ACLNN_ERR_PARAM_INVALID)
    raise ParamError(f"{op}: not supported on {chip.name} ({product_name(chip)}); supported on: "
                     f"{supported}", code=ACLNN_ERR_PARAM_INVALID)


def require(op: str, **tensors) -> None:
    """ParamError 161001 for every argument given as None (aclnn's null pointer)."""
    missing = [name for name, value in tensors.items() if value is None]
    if missing:
        raise ParamError(f"{op}: {', '.join(missing)} is None (a null pointer); a tensor is "
                         "required", code=ACLNN_ERR_PARAM_NULLPTR)


def as_array(op: str, name: str, value) -> np.ndarray:
    """The numpy array behind an argument: a numpy array or anything ``np.asarray`` takes that
    yields a dtype npusim knows. Views keep their strides (they are made contiguous by a kernel)."""
    if isinstance(value, np.ndarray):
        arr = value
    else:
        try:
            arr = np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - any failure to convert is the caller's input
            raise ParamError(f"{op}: {name} is a {type(value).__name__}, not an array") from exc
    if name_of(arr.dtype) is None:
        raise ParamError(f"{op}: {name} has dtype {arr.dtype}, which npusim does not know")
    return arr


def check_dtype(op: str, name: str, arr: np.ndarray, allowed: dict, chip) -> None:
    """ParamError 161002 unless ``arr``'s dtype is in ``allowed[chip.product]``."""
    names = allowed.get(chip.product, ())
    got = name_of(arr.dtype)
    if got not in names:
        raise ParamError(f"{op}: {name} dtype {got} is not supported on {chip.name} "
                         f"({product_name(chip)}); allowed: {', '.join(names)}",
                         code=ACLNN_ERR_PARAM_INVALID)


def check_same(op: str, what: str, **values) -> None:
    """ParamError 161002 unless every value is equal (shapes, dtypes)."""
    if len(set(values.values())) > 1:
        shown = ", ".join(f"{n} {_show(v)}" for n, v in values.items())
        raise ParamError(f"{op}: {what} must be equal; given {shown}",
                         code=ACLNN_ERR_PARAM_INVALID)


def _show(value) -> str:
    if isinstance(value, tuple):
        return "(" + ", ".join(str(v) for v in value) + ")"
    return str(value)


def overrides_of(overrides, op: str) -> dict:
    """The user's tiling overrides as a dict (None: none); anything but a dict is one
    TilingError, for every operator alike."""
    if overrides is None:
        return {}
    if not isinstance(overrides, dict):
        raise TilingError(f"{op}: tiling overrides must be a dict of field: value, "
                          f"got {type(overrides).__name__}")
    return overrides


def override(tiling, overrides: dict | None, op: str):
    """``tiling`` with the fields in ``overrides`` replaced; an unknown field or a value of the
    wrong kind is a TilingError naming the fields there are. The caller re-validates."""
    if not overrides_of(overrides, op):
        return tiling
    fields = {f.name: f for f in dataclasses.fields(tiling)}
    for key, value in overrides.items():
        if key not in fields:
            raise TilingError(f"{op}: unknown tiling field {key!r}; fields: "
                              f"{', '.join(fields)}")
        current = getattr(tiling, key)
        if isinstance(current, bool):
            if not isinstance(value, bool | np.bool_):
                raise TilingError(f"{op}: tiling {key} = {value!r}: allowed True or False")
        elif isinstance(current, int) and (isinstance(value, bool)
                                           or not isinstance(value, int | np.integer)):
            raise TilingError(f"{op}: tiling {key} = {value!r}: an integer is required")
    return dataclasses.replace(tiling, **{k: (int(v) if isinstance(v, np.integer) else v)
                                          for k, v in overrides.items()})


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(a: int, b: int) -> int:
    return ceil_div(a, b) * b
