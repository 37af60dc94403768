"""npusim correlate: the shipped example CSV, and malformed CSVs (one-line errors, listed rows,
no half-written files)."""

import json
import os
from pathlib import Path

import pytest

from npusim.errors import NpusimError
from npusim.face.cli import main
from npusim.studies.validate import correlate as corr

EXAMPLE = Path(corr.__file__).with_name("examples") / "op_summary_published.csv"
HEADER = ("Op Name,OP Type,Task Duration(us),Input Shapes,Input Data Types,Input Formats,"
          "Output Shapes")


def write(tmp_path, text, name="op.csv", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def one_line_error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("npusim: error:") and "\n" not in err and "Traceback" not in err
    return err


def test_example_csv_runs_each_modelled_row_against_its_kernel(tmp_path, capsys):
    out = tmp_path / "corr"
    assert main(["correlate", str(EXAMPLE), "--chip", "atlas-a2", "--jobs", "1",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "mean absolute error" in text and "npusim does not model MatMulV2" in text
    data = json.loads((out / "correlate.json").read_text())
    ran = [r for r in data["rows"] if r["status"] == "ok"]
    assert [r["op_type"] for r in ran] == ["Conv2DBackpropInput", "Conv2DBackpropInput",
                                           "SiluGrad"]
    for r in ran:   # the compute kernel, not the TransData kernels around it
        assert r["compared"] == f"kernel {r['op_type']}"
        assert abs(r["error"]) < 1.0, r     # same order of magnitude as the hardware
    assert "stride 1,1, padding 0,0 inferred" in ran[0]["note"]
    assert sorted(os.listdir(out)) == ["correlate.csv", "correlate.json", "correlate.md",
                                       "correlate.png"]
    assert data["mae"] == pytest.approx(sum(abs(r["error"]) for r in ran) / 3)


@pytest.mark.parametrize("text, words", [
    ("", "missing columns"),
    ("a,b,c\n1,2,3\n", "missing columns 'OP Type'"),
    ("OP Type,Input Shapes,Input Data Types\nSiluGrad,\"1,2\",FLOAT16\n",
     "missing column 'Task Duration(us)'"),
    (HEADER + "\n", "no rows after the header"),
])
def test_csv_without_the_columns_or_rows_is_one_line(tmp_path, capsys, text, words):
    path = write(tmp_path, text)
    out = tmp_path / "out"
    err = one_line_error(capsys, ["correlate", str(path), "--out", str(out)])
    assert words in err
    assert not out.exists()     # never a half-written folder


def test_not_utf8_binary_and_missing_file_are_one_line(tmp_path, capsys):
    latin = write(tmp_path, "OP Type,Task Duration(us)\nSiluGr\xe4d,1\n".encode("latin-1"),
                  "latin.csv", "wb")
    assert "not UTF-8" in one_line_error(capsys, ["correlate", str(latin)])
    binary = write(tmp_path, b"\x00\x01\x02PK\x03\x04", "zip.csv", "wb")
    assert "binary data" in one_line_error(capsys, ["correlate", str(binary)])
    assert "cannot read" in one_line_error(capsys, ["correlate", str(tmp_path / "nope.csv")])
    assert "atlas-nope" in one_line_error(capsys, ["correlate", str(EXAMPLE), "--chip",
                                                   "atlas-nope"])


def test_rows_npusim_cannot_model_are_listed_with_the_reason(tmp_path):
    rows = [
        'a,MatMulV2,10,"4,4;4,4",FLOAT16;FLOAT16,ND;ND,"4,4"',
        'd,SiluGrad,10,"4,4;4,4",INT8;INT8,ND;ND,"4,4"',
        'e,Conv2DBackpropInput,10,"4;64,64,3,3;8,64,56,56",INT32;FLOAT16;FLOAT16,'
        'ND;FRACTAL_Z;NC1HWC0,"8,64,56,56"',
        'f,Conv2DBackpropFilter,10,"8,64,56,56;4;8,32,56,56",FLOAT16;INT32;FLOAT16,'
        'NCHW;ND;NCHW,"64,64,3,3"',
        'g,TransData,10,"1,16,4,4",FLOAT16,NCHW,"1,1,4,4,16"',
        ',,10,,,,',
    ]
    path = write(tmp_path, HEADER + "\n" + "\n".join(rows) + "\n")
    result = corr.correlate(path, "atlas-a2")
    why = {r["name"]: r["why"] for r in result["rows"]}
    assert result["ran"] == 0 and result["skipped"] == len(rows)
    assert why["a"] == "npusim does not model MatMulV2"
    assert "dtype 'int8'" in why["d"]
    assert "5HD / fractal" in why["e"]
    assert "do not form a convolution" in why["f"]     # weight 64 out channels, dy has 32
    assert "inside npusim's convolution" in why["g"]
    assert "empty OP Type" in why[""]


BAD_ROWS = {   # issue 42 item 12: bad data was "not modelled", exit 0 with nothing compared
    "duration a word": ('c,SiluGrad,abc,"4,4;4,4",FLOAT16;FLOAT16,ND;ND,"4,4"',
                        "Task Duration(us) 'abc' is not a positive number"),
    "duration negative": ('c,SiluGrad,-5.0,"4,4;4,4",FLOAT16;FLOAT16,ND;ND,"4,4"',
                          "Task Duration(us) '-5.0' is not a positive number"),
    "duration nan": ('c,SiluGrad,nan,"4,4;4,4",FLOAT16;FLOAT16,ND;ND,"4,4"', "'nan'"),
    "dtype no tool writes": ('c,SiluGrad,10,"4,4;4,4",BANANA;BANANA,ND;ND,"4,4"',
                             "dtype 'banana' is not a data type"),
    "shape that does not parse": ('c,SiluGrad,10,"4,x4;4,4",FLOAT16;FLOAT16,ND;ND,"4,4"',
                                  "shape '4,x4' does not parse"),
    # the MemoryError (36 TiB) of an internal error: the size limit npusim run has
    "shape too large": ('c,SiluGrad,10,"100000,100000,1000;100000,100000,1000",FLOAT16;'
                        'FLOAT16,ND;ND,"4,4"', "more than the 268,435,456 npusim run takes"),
}


@pytest.mark.parametrize("case", list(BAD_ROWS))
def test_a_row_of_bad_data_is_one_line_naming_the_row(case, tmp_path, capsys):
    row, words = BAD_ROWS[case]
    good = 'a,MatMulV2,10,"4,4;4,4",FLOAT16;FLOAT16,ND;ND,"4,4"'
    path = write(tmp_path, HEADER + "\n" + good + "\n" + row + "\n")
    out = tmp_path / "out"
    err = one_line_error(capsys, ["correlate", str(path), "--jobs", "1", "--out", str(out)])
    assert f"{path}, line 3 (SiluGrad 'c'): " in err and words in err, err
    assert "correct or remove the row" in err and not out.exists()


def test_convolution_stride_and_padding_are_inferred_from_the_sizes():
    assert corr.infer(224, 112, 7) == (2, 3)      # ResNet's stem
    assert corr.infer(56, 56, 3) == (1, 1)
    assert corr.infer(56, 28, 1) == (2, 0)
    with pytest.raises(corr.RowError):
        corr.infer(8, 20, 3)
    row = {"OP Type": "Conv2DBackpropFilter", "Input Shapes": "2,8,16,16;4;2,16,8,8",
           "Input Data Types": "DT_FLOAT16;DT_INT32;DT_FLOAT16",
           "Input Formats": "NCHW;ND;NCHW", "Output Shapes": "16,8,3,3"}
    op, shape, dtype, params, note = corr.call_of(row)
    assert (op, shape, dtype) == ("convolution_backward", (2, 8, 16, 16), "float16")
    assert params == {"weight": "16x8x3x3", "stride": "2,2", "padding": "1,1",
                      "output_mask": "0,1,0"}


def test_other_operators_map_to_their_cases():
    ce = {"OP Type": "CrossEntropyLossGrad", "Input Shapes": "4096;4096,32000;4096",
          "Input Data Types": "BF16;BF16;INT64"}
    assert corr.call_of(ce)[:4] == ("cross_entropy_loss_grad", (4096, 32000), "bfloat16",
                                    {"reduction": "none"})
    emb = {"OP Type": "EmbeddingDenseGrad", "Input Shapes": "8192,1024;8192",
           "Input Data Types": "FLOAT;INT32", "Output Shapes": "32000,1024"}
    assert corr.call_of(emb)[:4] == ("embedding_dense_backward", (8192, 1024), "float32",
                                     {"num_weights": "32000"})
    moe = {"OP Type": "MoeTokenPermuteGrad", "Input Shapes": "7168,4096;8192",
           "Input Data Types": "BF16;INT32", "Output Shapes": "1024,4096"}
    op, shape, _, params, _ = corr.call_of(moe)
    assert (op, shape, params["topk"]) == ("moe_token_permute_grad", (1024, 4096), "8")
    assert float(params["drop"]) == pytest.approx(1 - 7168 / 8192)


def test_read_csv_error_is_an_npusim_error(tmp_path):
    with pytest.raises(NpusimError, match="missing column"):
        corr.read_csv(write(tmp_path, "x\n1\n"))


def test_plot_points_are_numbered_by_csv_line_and_barred_by_their_operators_band():
    from npusim.studies.validate.bands import band
    from npusim.studies.validate.report import correlate_points

    rows = [{"line": 2, "op_type": "SiluGrad", "op": "silu_backward", "status": "ok",
             "measured_us": 10.0, "predicted_us": 11.0},
            {"line": 3, "op_type": "MatMulV2", "status": "not modelled"},
            {"line": 4, "op_type": "SiluGrad", "op": "silu_backward", "status": "ok",
             "measured_us": 10.0, "predicted_us": 9.0}]
    points = correlate_points({"rows": rows, "chip": "atlas-training"})
    assert [p.number for p in points] == [2, 4]
    # no validation row covers silu on atlas-training: no bar, and the legend says so
    assert band("silu_backward", "atlas-training")["rows"] == 0
    assert all(p.band is None and "no validation row" in p.name for p in points)
    # on atlas-a2 the one silu row compares SiluGrad with a fill: it backs no bar either
    a2 = correlate_points({"rows": rows, "chip": "atlas-a2"})
    assert a2[0].band is None and band("silu_backward", "atlas-a2")["rows"] == 0
    conv = [{"line": 5, "op_type": "Conv3DBackpropFilter", "op": "convolution_backward",
             "status": "ok", "measured_us": 10.0, "predicted_us": 11.0}]
    (point,) = correlate_points({"rows": conv, "chip": "atlas-a2"})
    assert point.band == band("convolution_backward", "atlas-a2")["band"] is not None


def test_points_too_close_to_label_apart_share_one_label():
    from npusim.studies.validate.scatter_plot import Point, _clusters

    points = [Point(10.0, 10.0, 1, "a", None), Point(10.1, 10.1, 2, "b", None),
              Point(100.0, 50.0, 3, "c", None), Point(10.0, 20.0, 4, "d", None)]
    assert _clusters(points, 1.0, 1000.0) == [[0, 1], [2], [3]]


def test_labels_of_a_crowded_plot_do_not_cover_each_other():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from npusim.studies.validate.scatter_plot import Point, _clusters, _label

    points = [Point(50.0 * 1.02 ** i, 50.0 * 1.05 ** (i % 4), i + 1, "p", None)
              for i in range(12)]
    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(10, 1000)
    ax.set_ylim(10, 1000)
    boxes = _label(fig, ax, points, _clusters(points, 10, 1000))
    numbers = sorted(int(n) for t in ax.texts for n in t.get_text().split(", "))
    plt.close(fig)
    assert numbers == list(range(1, 13)) and len(boxes) == len(ax.texts)
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
