"""Bad input to the studies (sweep, predict, validate, correlate), as the operators have theirs
in test_bad_input.py: each is one line on stderr naming what was wrong, exit 2, no traceback,
and no output folder (nor a half-written one)."""

import tomllib

import pytest

from npusim.face.cli import main
from npusim.studies.validate import study as val

SILU = ["sweep", "silu_backward", "--shape", "64x1024", "--jobs", "1"]
TILE = ["--tiling", "tile_length=1024,2048"]
SWEEP = {
    "unknown field": ([*SILU, "--tiling", "tile_size=1024"], "no tiling field 'tile_size'"),
    "empty space": ([*SILU, "--tiling", "tile_length="], "FIELD=SPACE"),
    "no equals sign": ([*SILU, "--tiling", "tile_length"], "FIELD=SPACE"),
    "malformed list": ([*SILU, "--tiling", "tile_length=1024,x"], "not an integer"),
    "a float value": ([*SILU, "--tiling", "tile_length=1.5"], "not an integer"),
    "backwards range": ([*SILU, "--tiling", "block_dim=48:8"], "start <= stop"),
    "range step 0": ([*SILU, "--tiling", "block_dim=8:48:0"], "step"),
    "bad pow2": ([*SILU, "--tiling", "tile_length=pow2:0"], "pow2:lo:hi"),
    "pow2 backwards": ([*SILU, "--tiling", "tile_length=pow2:4096:1024"], "pow2"),
    "no tiling": (SILU, "--tiling"),
    "samples 0": ([*SILU, *TILE, "--samples", "0"], "positive integer"),
    "jobs 0": ([*SILU, *TILE, "--jobs", "0"], "positive integer"),
    "jobs a word": ([*SILU, *TILE, "--jobs", "many"], "positive integer"),
    "seed negative": ([*SILU, *TILE, "--seed", "-1"], "integer >= 0"),
    "check unknown": ([*SILU, *TILE, "--check", "some"], "invalid choice"),
    "unknown chip": ([*SILU, *TILE, "--chip", "atlas-nope"], "unknown chip 'atlas-nope'"),
    "bad shape": (["sweep", "silu_backward", "--shape", "4by4", *TILE], "shape"),
    "dtype int8": ([*SILU, *TILE, "--dtype", "int8"], "int8"),
    "unknown param": ([*SILU, *TILE, "--param", "alpha=1"], "no parameter 'alpha'"),
    "param without =": ([*SILU, *TILE, "--param", "alpha"], "KEY=VALUE"),
    "unknown op": (["sweep", "no_such_op", *TILE], "invalid choice"),
    "scheduler that does not answer": ([*SILU, *TILE, "--scheduler", "tcp://127.0.0.1:9"],
                                       "cannot reach the Dask scheduler"),
    "out is a file": ([*SILU, *TILE], "not a folder"),
    "bf16 on training": ([*SILU, *TILE, "--dtype", "bfloat16", "--chip", "atlas-training"],
                         "does not run on atlas-training"),
}

WORKLOAD = 'name = "w"\ndescription = "x"\n[[call]]\n'
CALL = 'op = "silu_backward"\nshape = "64x64"\ndtype = "float16"\ncount = 1\n'
BATCHED = WORKLOAD.replace("[[call]]", "batch = 4\n[[call]]")
PREDICT = {
    "no such workload": ("no-such-workload", [], "resnet50-backward"),
    "not TOML": ("[[[", [], "not a valid TOML"),
    "empty file": ("", [], ""),
    "no calls": ('name = "w"\ndescription = "x"\n', [], "call"),
    "unknown op": (WORKLOAD + CALL.replace("silu_backward", "no_such_op"), [],
                   "unknown op 'no_such_op'"),
    "bad shape": (WORKLOAD + CALL.replace("64x64", "4by4"), [], "does not parse"),
    "missing count": (WORKLOAD + CALL.replace("count = 1\n", ""), [], "missing key 'count'"),
    "count 0": (WORKLOAD + CALL.replace("count = 1", "count = 0"), [], "count = 0"),
    "count negative": (WORKLOAD + CALL.replace("count = 1", "count = -3"), [], "count = -3"),
    "count a string": (WORKLOAD + CALL.replace("count = 1", 'count = "2"'), [], "count"),
    "dtype int8": (WORKLOAD + CALL.replace("float16", "int8"), [], "does not take dtype"),
    "unknown key": (WORKLOAD + CALL + 'color = "red"\n', [], "unknown key 'color'"),
    "bad param": (WORKLOAD + CALL + 'params = { alpha = "1" }\n', [], "no parameter 'alpha'"),
    "not UTF-8": (b"name = \"\xe4\"\n", [], "UTF-8"),
    "a folder": (None, [], "folder"),
    "chips empty": (WORKLOAD + CALL, ["--chips", ""], "--chips"),
    "chips only commas": (WORKLOAD + CALL, ["--chips", ",,"], "--chips"),
    "unknown chip": (WORKLOAD + CALL, ["--chips", "atlas-nope"], "atlas-nope"),
    "jobs 0": (WORKLOAD + CALL, ["--jobs", "0"], "positive integer"),
    "scheduler that does not answer": (WORKLOAD + CALL, ["--scheduler", "tcp://127.0.0.1:9"],
                                       "cannot reach the Dask scheduler"),
    "out is a file": (WORKLOAD + CALL, [], "not a folder"),
    "chip file missing": (WORKLOAD + CALL, ["--chips", "atlas-a2,nope.toml"], "nope.toml"),
    "batch 0": (WORKLOAD + CALL, ["--batch", "0"], "--batch 0: a positive integer"),
    "batch a word": (WORKLOAD + CALL, ["--batch", "many"], "--batch many: a positive integer"),
    "batch without a batch dimension": (WORKLOAD + CALL, ["--batch", "64"],
                                        "declares no batch dimension"),
    "batch not whole": (BATCHED + CALL.replace("64x64", "6x64") + "batch_dim = 0\n",
                        ["--batch", "3"], "does not scale to a whole number; allowed: a "
                        "multiple of 2"),
    "batch_dim outside the shape": (BATCHED + CALL + "batch_dim = 2\n", [],
                                    "batch_dim = 2: an index into the shape, 0 to 1"),
    "batch_dim without batch": (WORKLOAD + CALL + "batch_dim = 0\n", [], "no batch = N"),
    "formats unknown": (WORKLOAD.replace("[[call]]", 'formats = "nhwc"\n[[call]]') + CALL, [],
                        "formats = 'nhwc'; allowed: 'aclnn' or 'internal'"),
    "unmodelled kind unknown": (WORKLOAD + CALL + '[[unmodelled]]\nkind = "softmax"\n'
                                'shape = "4x4"\n', [], "unknown kind 'softmax'; kinds: "),
    "unmodelled shape of the wrong rank": (WORKLOAD + CALL + '[[unmodelled]]\nkind = '
                                           '"batch_norm_backward"\nshape = "4x4"\n', [],
                                           "takes a shape NxCxHxW, got 4x4"),
}


def _row(**change) -> str:
    """The committed table's first row as TOML, with ``change`` (None: the key left out)."""
    with open(val.TABLE, "rb") as f:
        row = dict(tomllib.load(f)["row"][0])
    row.update(change)
    lines = ["[[row]]"]
    for key, value in row.items():
        if value is None:
            continue
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {_toml(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        else:
            lines.append(f"{key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return '"' + value.replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return repr(value)


VALIDATE = {
    "missing table": (None, [], "no such file"),
    "a folder": ("FOLDER", [], "is a directory"),
    "not TOML": ("not toml [", [], "validation table"),
    "empty": ("", [], "no [[row]] entries"),
    "not UTF-8": (b"id = \"\xe4\"\n", [], "validation table"),
    "row lacks keys": ("[[row]]\nid = 1\n", [], "lacks"),
    "ids repeat": (_row() + _row(), [], "row ids repeat"),
    "unknown unit": (_row(unit="furlongs"), [], "unit 'furlongs'"),
    "unknown rate": (_row(rate="per fortnight"), [], "rate"),
    "unknown compare": (_row(compare="vibes"), [], "compare 'vibes'"),
    "kernel without a name": (_row(kernel=None), [], "needs kernel"),
    "unknown op": (_row(op="no_such_op"), [], "no_such_op"),
    "unknown model": (_row(model="atlas-nope"), [], "atlas-nope"),
    "shape not a list": (_row(shape="1x2"), [], "shape"),
    "shape of zeros": (_row(shape=[0, 4096, 64, 64]), [], "shape"),
    "value negative": (_row(value=-1.0), [], "value"),
    "tolerance 0": (_row(tolerance=0), [], "tolerance"),
    "tolerance a word": (_row(tolerance="loose"), [], "tolerance"),
    "unknown dtype": (_row(dtype="int8"), [], "int8"),
    "jobs 0": (_row(), ["--jobs", "0"], "positive integer"),
    "scheduler that does not answer": (_row(), ["--scheduler", "tcp://127.0.0.1:9"],
                                       "cannot reach the Dask scheduler"),
    "out is a file": (_row(), [], "not a folder"),
}

HEADER = "OP Type,Input Shapes,Input Data Types,Task Duration(us)"
SILU_ROW = 'SiluGrad,"64,1024;64,1024",FLOAT16;FLOAT16,3.5'
CORRELATE = {
    "missing file": (None, [], "cannot read"),
    "a folder": ("FOLDER", [], "cannot read"),
    "empty": ("", [], "missing columns"),
    "other columns": ("a,b,c\n1,2,3\n", [], "missing columns 'OP Type'"),
    "no duration column": ('OP Type,Input Shapes,Input Data Types\nSiluGrad,"1,2",FLOAT16\n',
                           [], "missing column 'Task Duration(us)'"),
    "header only": (HEADER + "\n", [], "no rows after the header"),
    "not UTF-8": ("OP Type,Task Duration(us)\nSiluGr\xe4d,1\n".encode("latin-1"), [],
                  "not UTF-8"),
    "binary": (b"\x00\x01\x02PK\x03\x04", [], "binary data"),
    "unknown chip": (HEADER + "\n" + SILU_ROW + "\n", ["--chip", "atlas-nope"], "atlas-nope"),
    "chip empty": (HEADER + "\n" + SILU_ROW + "\n", ["--chip", ""], "chip"),
    "chip a folder": (HEADER + "\n" + SILU_ROW + "\n", ["--chip", "FOLDER"], "directory"),
    "jobs 0": (HEADER + "\n" + SILU_ROW + "\n", ["--jobs", "0"], "positive integer"),
    "jobs negative": (HEADER + "\n" + SILU_ROW + "\n", ["--jobs", "-2"], "positive integer"),
    "scheduler that does not answer": (HEADER + "\n" + SILU_ROW + "\n",
                                       ["--scheduler", "tcp://127.0.0.1:9"],
                                       "cannot reach the Dask scheduler"),
    "out is a file": (HEADER + "\n" + SILU_ROW + "\n", [], "not a folder"),
    "unknown option": (HEADER + "\n" + SILU_ROW + "\n", ["--tolerance", "3"],
                       "unrecognized arguments"),
    "no csv": ("NOARG", [], "the following arguments are required"),
    "chip file missing": (HEADER + "\n" + SILU_ROW + "\n", ["--chip", "nope.toml"],
                          "no such chip model file"),
    "out under a file": (HEADER + "\n" + SILU_ROW + "\n", ["--out", "FILE/sub"], "cannot write"),
    "one column": ("OP Type\nSiluGrad\n", [], "missing column"),
}


def _status(argv: list, capsys) -> tuple:
    try:
        status = main(argv)
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    return status, err


def _check(argv, message, out, capsys) -> None:
    status, err = _status(argv, capsys)
    assert status == 2, (status, err)
    assert len(err) == 1 and "Traceback" not in err[0] and message in err[0], err
    assert not (out.exists() and out.is_dir()), "an output folder after an error"


def _file(tmp_path, content, name):
    if content is None:
        return tmp_path / f"missing-{name}"
    if content == "FOLDER":
        (tmp_path / "folder").mkdir()
        return tmp_path / "folder"
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def _out(tmp_path, case: str):
    out = tmp_path / "out"
    if case == "out is a file":
        out.write_text("x")
    return out


@pytest.mark.parametrize("case", list(SWEEP))
def test_bad_sweep_input(case, tmp_path, capsys):
    argv, message = SWEEP[case]
    out = _out(tmp_path, case)
    _check([*argv, "--out", str(out)], message, out, capsys)


@pytest.mark.parametrize("case", list(PREDICT))
def test_bad_predict_input(case, tmp_path, capsys):
    content, extra, message = PREDICT[case]
    path = ("no-such-workload" if content == "no-such-workload"
            else str(_file(tmp_path, "FOLDER" if case == "a folder" else content, "w.toml")))
    out = _out(tmp_path, case)
    _check(["predict", path, "--jobs", "1", *extra, "--out", str(out)], message, out, capsys)


@pytest.mark.parametrize("case", list(VALIDATE))
def test_bad_validate_input(case, tmp_path, capsys):
    content, extra, message = VALIDATE[case]
    path = _file(tmp_path, content, "table.toml")
    out = _out(tmp_path, case)
    _check(["validate", "--table", str(path), "--jobs", "1", *extra, "--out", str(out)],
           message, out, capsys)


@pytest.mark.parametrize("case", list(CORRELATE))
def test_bad_correlate_input(case, tmp_path, capsys):
    content, extra, message = CORRELATE[case]
    if case == "chip a folder":
        extra = ["--chip", str(_file(tmp_path, "FOLDER", ""))]
    out = _out(tmp_path, case)
    if content == "NOARG":
        _check(["correlate", "--out", str(out)], message, out, capsys)
        return
    path = _file(tmp_path, content, "op_summary.csv")
    if "FILE/sub" in extra:
        (tmp_path / "FILE").write_text("x")
        extra = ["--out", str(tmp_path / "FILE" / "sub")]
    _check(["correlate", str(path), "--jobs", "1", "--out", str(out), *extra], message, out,
           capsys)
