"""npusim against an msprof ``op_summary`` CSV from real hardware.

``correlate(path, chip)`` reads the CSV msprof writes (columns ``OP Type``, ``Input Shapes``,
``Input Data Types``, ``Task Duration(us)``; ``Output Shapes`` and ``Input Formats`` where the
row needs them; shapes as ``"8,64,56,56;64,64,3,3"``, one tensor per ``;``), turns every row
whose operator npusim models into a point, runs the points timing-only on the study executor and
compares each row's Task Duration with the prediction:

- the kernel of the same name (its op_type, as CANN names it) when the op runs several (a
  Conv2DBackpropInput row against npusim's Conv2DBackpropInput kernel, not the TransData
  kernels around it), else the op;
- SiluGrad, Conv2DBackpropInput(V2) / Conv2DBackpropFilter(V2), Conv3DBackpropInputV2 /
  Conv3DBackpropFilterV2, CrossEntropyLossGrad, EmbeddingDenseGrad(V2), MoeTokenPermuteGrad.

A convolution row carries neither stride nor padding: they are inferred from the input, kernel
and output sizes (the smallest stride, then the padding, that give the output size; dilation 1,
groups 1), and the row says so. Rows npusim cannot model (other operators, TransData on its own,
5HD shapes, dtypes it does not run) are listed with the reason, never dropped. A file that is
not such a CSV, or a row of bad data (a duration that is not a positive number, a shape that
does not parse, a dtype no tool writes, a tensor larger than ``npusim run`` takes), is one
NpusimError naming the line.
"""

import csv
import io

from npusim.errors import NpusimError
from npusim.studies.executor import kernel_cycles, run_points

REQUIRED = ("OP Type", "Input Shapes", "Input Data Types", "Task Duration(us)")
DTYPES = {"float16": "float16", "half": "float16", "fp16": "float16", "float": "float32",
          "float32": "float32", "fp32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16"}
CONV_INPUT = ("Conv2DBackpropInput", "Conv2DBackpropInputV2", "Conv3DBackpropInput",
              "Conv3DBackpropInputV2")
CONV_FILTER = ("Conv2DBackpropFilter", "Conv2DBackpropFilterV2", "Conv3DBackpropFilter",
               "Conv3DBackpropFilterV2")
ND_FORMATS = ("", "ND", "NCHW", "NCDHW", "NCL")
MAX_ROWS = 10000
MAX_BYTES = 64 << 20


KNOWN_DTYPES = ("double", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16",
                "uint32", "uint64", "bool", "complex64", "complex128", "string", "undefined",
                "hifloat8", "float8_e5m2", "float8_e4m3fn", "int4")   # msprof's, not modelled


class RowError(ValueError):
    """Why one CSV row cannot be modelled (the row is listed with it)."""


class BadRow(RowError):
    """A row whose data is wrong (a duration or shape that is not one, a dtype no tool
    writes, a tensor larger than ``npusim run`` takes): the command stops, naming the row."""


def read_csv(path) -> list:
    """The CSV's rows as dicts (header names stripped); one NpusimError for a bad file."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise NpusimError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_BYTES:
        raise NpusimError(f"{path}: larger than {MAX_BYTES >> 20} MiB; filter the CSV to the "
                          "operators of interest")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NpusimError(f"{path}: not UTF-8 text (byte {exc.start}): an msprof op_summary "
                          "CSV is UTF-8") from None
    if "\0" in text:
        raise NpusimError(f"{path}: binary data, not an msprof op_summary CSV")
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):   # leading comment lines (the shipped example)
        lines.pop(0)
    try:
        reader = csv.DictReader(io.StringIO("".join(lines)))
        header = [h.strip() for h in (reader.fieldnames or [])]
        reader.fieldnames = header
        rows = [{k: (v or "").strip() if isinstance(v, str) else "" for k, v in r.items()
                 if k is not None} for r in reader]
    except csv.Error as exc:
        raise NpusimError(f"{path}: not a CSV file ({exc})") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise NpusimError(f"{path}: not an msprof op_summary CSV: missing column"
                          f"{'s' if len(missing) > 1 else ''} {', '.join(repr(m) for m in missing)}"
                          f" (needs {', '.join(REQUIRED)})")
    if not rows:
        raise NpusimError(f"{path}: no rows after the header")
    if len(rows) > MAX_ROWS:
        raise NpusimError(f"{path}: {len(rows):,} rows; at most {MAX_ROWS:,} (filter the CSV "
                          "to the operators of interest)")
    return rows


def shapes(cell: str) -> list:
    """``"8,64,56,56;64,64,3,3"`` -> [(8, 64, 56, 56), (64, 64, 3, 3)]; ``""`` a scalar ()."""
    from npusim.cases.common import MAX_ELEMENTS

    out = []
    for part in cell.strip().strip('"').split(";"):
        part = part.strip()
        try:
            out.append(tuple(int(d) for d in part.split(",")) if part else ())
        except ValueError:
            raise BadRow(f"shape {part!r} does not parse (want e.g. 8,64,56,56)") from None
        if any(d < 0 for d in out[-1]):
            raise BadRow(f"shape {part!r} has a negative dimension")
        if any(d < 1 for d in out[-1]):
            raise RowError(f"shape {part!r} has a dimension below 1")
        elements = 1
        for d in out[-1]:
            elements *= d
        if elements > MAX_ELEMENTS:
            raise BadRow(f"shape {part!r} has {elements:,} elements, more than the "
                         f"{MAX_ELEMENTS:,} npusim run takes (it keeps every tensor in host "
                         "memory)")
    return out


def dtype_of(cell: str) -> str:
    first = cell.split(";")[0].strip().lower().removeprefix("dt_")
    if first not in DTYPES and first not in KNOWN_DTYPES:
        raise BadRow(f"dtype {first!r} is not a data type (msprof writes e.g. FLOAT16, "
                     "FLOAT, BF16, INT32)")
    if first not in DTYPES:
        raise RowError(f"dtype {first!r} is not one npusim runs (float16, float32, bfloat16)")
    return DTYPES[first]


def infer(size: int, out: int, k: int) -> tuple:
    """(stride, padding) giving ``out`` from ``size`` with kernel ``k`` (dilation 1; the
    padding below the kernel size, as every padding that adds no all-padding windows)."""
    for s in range(1, max(size, 1) + 1):
        p = -(-((out - 1) * s + k - size) // 2)
        if 0 <= p < k and (size + 2 * p - k) // s + 1 == out:
            return s, p
    raise RowError(f"no stride and padding give output size {out} from {size} with kernel {k}")


def conv_call(op: str, ins: list, outs: list, formats: str) -> tuple:
    """(shape, params, note) of a convolution row."""
    if any(f.strip().upper() not in ND_FORMATS for f in formats.split(";")):
        raise RowError(f"formats {formats!r}: 5HD / fractal shapes pad the channels to 16; "
                       "npusim needs NCHW / NCDHW shapes")
    big = [s for s in ins if len(s) >= 3]
    if op in CONV_INPUT:   # inputs: input_size (1-D), filter, out_backprop; output: dx
        if len(big) < 2 or not outs or len(outs[0]) < 3:
            raise RowError("needs the filter and out_backprop shapes and the Output Shapes (dx)")
        weight, dy, x = big[0], big[1], outs[0]
        mask = "1,0,0"
    else:                  # inputs: x, filter_size (1-D), out_backprop; output: dw
        if len(big) < 2 or not outs or len(outs[0]) < 3:
            raise RowError("needs the x and out_backprop shapes and the Output Shapes (dw)")
        x, dy, weight = big[0], big[1], outs[0]
        mask = "0,1,0"
    if not len(x) == len(dy) == len(weight) or x[0] != dy[0] or weight[0] != dy[1]:
        raise RowError(f"shapes x {x}, weight {weight}, gradOutput {dy} do not form a "
                       "convolution")
    sp = [infer(x[i], dy[i], weight[i]) for i in range(2, len(x))]
    stride, pad = ",".join(str(s) for s, _ in sp), ",".join(str(p) for _, p in sp)
    params = {"weight": "x".join(map(str, weight)), "stride": stride, "padding": pad,
              "output_mask": mask}
    return x, params, f"stride {stride}, padding {pad} inferred from the shapes"


def call_of(row: dict) -> tuple:
    """(op, shape, dtype, params, note) for a CSV row npusim models; RowError otherwise."""
    op = row["OP Type"]
    ins, dtype = shapes(row["Input Shapes"]), row["Input Data Types"]
    outs = shapes(row.get("Output Shapes", "")) if row.get("Output Shapes") else []
    if op == "SiluGrad":
        return "silu_backward", ins[0], dtype_of(dtype), {}, ""
    if op in CONV_INPUT or op in CONV_FILTER:
        shape, params, note = conv_call(op, ins, outs, row.get("Input Formats", ""))
        # the float inputs' dtype: skip the int input_size / filter_size tensor
        floats = [d for d in dtype.split(";") if "int" not in d.lower()] or [dtype]
        return "convolution_backward", shape, dtype_of(floats[0]), params, note
    if op == "CrossEntropyLossGrad":
        if len(ins) < 2 or len(ins[1]) != 2:
            raise RowError("needs grad_loss and a 2-D log_prob shape")
        reduction = "none" if ins[0] else "mean"
        note = "" if ins[0] else "reduction mean assumed (a 0-D gradLoss: mean or sum)"
        return ("cross_entropy_loss_grad", ins[1], dtype_of(dtype.split(";")[-1 if ";" not in
                                                                          dtype else 1]),
                {"reduction": reduction}, note)
    if op in ("EmbeddingDenseGrad", "EmbeddingDenseGradV2"):
        if len(ins) < 2 or not outs or len(outs[0]) != 2:
            raise RowError("needs grad and indices shapes and the Output Shapes "
                           "(numWeights x dim)")
        return ("embedding_dense_backward", ins[0], dtype_of(dtype),
                {"num_weights": str(outs[0][0])}, "indices uniform (the CSV has no values)")
    if op == "MoeTokenPermuteGrad":
        if len(ins) < 2 or not outs or len(outs[0]) != 2 or len(ins[0]) != 2:
            raise RowError("needs permuted_output_grad, sorted_indices and the Output Shapes")
        tokens = outs[0][0]
        topk = ins[1][0] // tokens if ins[1] and tokens else 0
        if topk < 1:
            raise RowError(f"sorted_indices {ins[1]} and {tokens} tokens give no topk")
        drop = 1.0 - ins[0][0] / (tokens * topk)
        return ("moe_token_permute_grad", outs[0], dtype_of(dtype),
                {"topk": str(topk), "drop": f"{max(drop, 0.0):.6f}"}, "routing uniform")
    if op == "TransData":
        raise RowError("TransData runs inside npusim's convolution ops, not on its own")
    raise RowError(f"npusim does not model {op or 'an empty OP Type'}")


def duration(row: dict) -> float:
    try:
        value = float(row["Task Duration(us)"])
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise BadRow(f"Task Duration(us) {row['Task Duration(us)']!r} is not a positive "
                     "number")
    return value


def plan(rows: list, chip: str, where: str = "the CSV") -> tuple:
    """(one result dict per CSV row, the distinct points to run); modelled rows carry the
    index of their point. A row of bad data (``BadRow``) is one NpusimError naming its line."""
    results, points, index = [], [], {}
    for i, row in enumerate(rows, 2):   # line 1 is the header
        res = {"line": i, "op_type": row.get("OP Type", ""), "name": row.get("Op Name", ""),
               "measured_us": None, "predicted_us": None, "error": None, "note": "",
               "status": "not modelled"}
        try:
            res["measured_us"] = duration(row)
            op, shape, dtype, params, note = call_of(row)
        except BadRow as exc:
            raise NpusimError(f"{where}, line {i} ({res['op_type'] or 'no OP Type'}"
                              f"{' ' + repr(res['name']) if res['name'] else ''}): {exc}; "
                              "correct or remove the row") from None
        except RowError as exc:
            results.append({**res, "why": str(exc)})
            continue
        point = {"op": op, "chip": chip, "shape": list(shape), "dtype": dtype,
                 "params": params, "tiling": None, "numerics": False, "check": False,
                 "seed": 0}
        key = repr(sorted(point.items()))
        if key not in index:
            index[key] = len(points)
            points.append(point)
        results.append({**res, "status": "ok", "point": index[key], "note": note, "why": "",
                        "op": op,
                        "call": f"{op} {'x'.join(map(str, shape))} {dtype}"})
    return results, points


def correlate(path, chip: str, *, jobs: int = 1, scheduler=None, on_record=None,
              rows=None) -> dict:
    """{"rows": one dict per CSV row, "mae", "mean_error", "ran", "skipped"}."""
    from npusim.chip import load_chip

    clock = load_chip(chip).clock_hz
    rows = read_csv(path) if rows is None else rows
    results, points = plan(rows, chip, str(path))
    records = run_points(points, jobs=jobs, scheduler=scheduler, on_record=on_record)
    for res in results:
        if res["status"] == "ok":
            _compare(res, records[res.pop("point")], clock)
    ran = [r for r in results if r["status"] == "ok"]
    mae = sum(abs(r["error"]) for r in ran) / len(ran) if ran else 0.0
    mean = sum(r["error"] for r in ran) / len(ran) if ran else 0.0
    return {"path": str(path), "chip": chip, "rows": results, "mae": mae, "mean_error": mean,
            "ran": len(ran), "skipped": len(results) - len(ran)}


def _compare(res: dict, record: dict, clock: float) -> None:
    if record["status"] != "ok":
        res.update(status=record["status"], why=record["error"])
        return
    same = kernel_cycles(record, res["op_type"])
    if same is not None:
        predicted, what = same / clock * 1e6, f"kernel {res['op_type']}"
    else:
        predicted, what = record["time_us"], "the whole op"
    res.update(predicted_us=predicted, compared=what,
               error=predicted / res["measured_us"] - 1.0)
