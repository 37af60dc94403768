"""The A2 vector instruction costs from msKPP's measured tables (``models/costs/910b/vector.csv``).

Each cost class of a ``[vector.cost]`` entry (f16, f32, int) maps to the msKPP instruction and
dtype it runs as (``VECTOR_MAP``). The engine charges ``startup`` when the V pipe was idle and
``per_repeat`` for every repeat; from msKPP's measurement (cycles at repeat 1 ``c0``, cycles per
further repeat in steady state ``c1``) it takes ``per_repeat = c1`` and ``startup = c0 - c1``, so
an instruction of one repeat on an idle pipe costs what msKPP measured and a stream costs its
slope. Classes msKPP has no table for keep the model's earlier figure (PTO-VEC, hardware.md 2.3):
``vnchwconv``, ``sort32`` and compare on int.
"""

import csv
from pathlib import Path

from npusim.chip import models_dir

TABLE = Path("costs") / "910b" / "vector.csv"
B16, B32 = "FP16_FP16_FP16", "FP32_FP32_FP32"
U16, U32 = "FP16_FP16", "FP32_FP32"
I32 = "INT32_INT32_INT32"


def _binary(instr, with_int=True):
    classes = {"f16": (instr, B16), "f32": (instr, B32)}
    if with_int:
        classes["int"] = (instr, I32)
    return classes


def _unary(instr):
    return {"f16": (instr, U16), "f32": (instr, U32)}


VECTOR_MAP = {
    "add": _binary("VADD"), "sub": _binary("VSUB"), "mul": _binary("VMUL"),
    "div": _binary("VDIV", False), "max": _binary("VMAX"), "min": _binary("VMIN"),
    "adds": _binary("VADDS"), "muls": _binary("VMULS"), "maxs": _binary("VMAXS"),
    "mins": _binary("VMINS"), "abs": _unary("VABS"),
    "relu": {**_unary("VRELU"), "int": ("VRELU", "INT32_INT32")},
    "exp": _unary("VEXP"), "ln": _unary("VLN"), "sqrt": _unary("VSQRT"),
    "rsqrt": _unary("VRSQRT"), "reciprocal": _unary("VREC"),
    "cast": {"f16": ("VCONV", "FP16_FP32"), "f32": ("VCONV", "FP32_FP16"),
             "int": ("VCONV", "INT32_FP32")},
    "duplicate": {**_unary("VECTORDUP"), "int": ("VECTORDUP", "INT32_INT32")},
    "compare": _binary("VCMPV", False), "select": _binary("VSEL", False),
    "reduce_sum": _unary("VCADD"), "block_reduce_sum": _unary("VCGADD"),
    "reduce_max": _unary("VCMAX"), "block_reduce_max": _unary("VCGMAX"),
    "gather": {"f16": ("VGATHER", "UINT16_UINT16"), "f32": ("VGATHER", "UINT32_UINT32"),
               "int": ("VGATHER", "UINT32_UINT32")},
    "merge_sort": {"f16": ("VMRGSORT", "FP16_UINT64_FP16"),
                   "f32": ("VMRGSORT", "FP32_UINT64_FP32")},
    "copy": {"f16": ("VCOPY", "UINT16_UINT16"), "f32": ("VCOPY", "UINT32_UINT32"),
             "int": ("VCOPY", "INT32_INT32")},
    "axpy": _binary("VAXPY", False),
}


def read_table(path=None) -> dict:
    """{(instruction, dtype): (cycles at repeat 1, cycles per repeat)} of the measured table."""
    path = Path(path or models_dir() / TABLE)
    rows = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    return {(r["instruction"], r["dtype"]): (float(r["cycles_repeat1"]),
                                             float(r["cycles_per_repeat"]))
            for r in csv.DictReader(rows)}


def derive(current: dict) -> dict:
    """The ``[vector.cost]`` table: msKPP's figures for every mapped class, the ``current``
    model's for the rest."""
    table = read_table()
    out = {op: dict(entry) for op, entry in current.items()}
    for op, classes in VECTOR_MAP.items():
        for cls, key in classes.items():
            c0, c1 = table[key]
            out.setdefault(op, {})[cls] = [round(max(c0 - c1, 0.0), 2), round(c1, 2)]
    return out


def measured_classes() -> list[str]:
    """``op.class`` names whose cost is msKPP's measurement."""
    return [f"{op}.{cls}" for op, classes in VECTOR_MAP.items() for cls in classes]
