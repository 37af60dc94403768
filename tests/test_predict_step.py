"""The step section of a prediction: phases, both formats, calls a product runs its own way,
and the whole-step rows' errors (npusim.studies.predict.step, npusim.studies.validate.steps)."""

import pytest

from npusim.errors import NpusimError
from npusim.studies.predict.study import predict
from npusim.studies.validate.steps import StepRow, load_steps, step_errors
from npusim.studies.workload import load_workload

WORKLOAD = """name = "tiny-step"
description = "a step in three phases"
batch = 2

[[call]]
phase = "forward"
op = "relu"
shape = "2x64x8x8"
dtype = "float16"
count = 2
batch_dim = 0

[[call]]
phase = "backward"
op = "convolution_backward"
shape = "2x16x8x8"
dtype = "float16"
params = { weight = "16x3", output_mask = "1,1,0" }
count = 1
batch_dim = 0

[[call]]
phase = "optimizer"
op = "add"
shape = "2304"
dtype = "float32"
products = ["atlas-a2"]
count = 1

[[call]]
phase = "optimizer"
op = "muls"
shape = "2304"
dtype = "float32"
products = ["atlas-training"]
count = 2
"""


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    path = tmp_path_factory.mktemp("step") / "wl.toml"
    path.write_text(WORKLOAD)
    return predict(load_workload(path), jobs=1)


def test_a_call_run_on_one_product_is_compared_and_counted_on_its_own(result):
    assert result["common_calls"] == [1, 2, 3, 4]
    assert not result["excluded"]
    by = {(r["call"], r["chip"]): r for r in result["rows"]}
    assert by[(3, "atlas-training")]["status"] == "not on this product"
    assert by[(4, "atlas-a2")]["status"] == "not on this product"
    a2 = result["step"]["atlas-a2"]["phases"]["optimizer"]
    assert a2 == pytest.approx(by[(3, "atlas-a2")]["total_us"])
    training = result["step"]["atlas-training"]["phases"]["optimizer"]
    assert training == pytest.approx(by[(4, "atlas-training")]["total_us"])


def test_the_phases_sum_to_the_headline_and_graph_mode_sums_the_graph_forms(result):
    for chip in result["chips"]:
        step, totals = result["step"][chip], result["totals"][chip]
        assert sum(step["phases"].values()) == pytest.approx(totals["total_us"])
        assert step["aclnn_us"] == pytest.approx(totals["total_us"])
        rows = {r["call"]: r for r in result["rows"] if r["chip"] == chip
                and r["status"] == "ok"}
        assert step["internal_us"] == pytest.approx(
            sum(r["internal_us"] * r["count"] for r in rows.values()))
        conv = rows[2]          # its graph form ran: no TransData of an activation in it
        assert conv["form"] == "5hd" and conv["internal_us"] < conv["aclnn_us"]
        assert step["graph_calls"] == 1 and totals["conversion_us"] > 0
        assert step["aclnn_us"] - step["internal_us"] == pytest.approx(
            conv["aclnn_us"] - conv["internal_us"])
        relu = rows[1]          # C = 64: the same kernels, one run for both formats
        assert relu["form"] == "aclnn" and relu["internal_us"] == relu["aclnn_us"]
        assert "converts no activation" in relu["form_why"]
        optimizer = rows[3] if chip == "atlas-a2" else rows[4]
        assert optimizer["form"] == "aclnn" and optimizer["form_why"].startswith(
            "graph form not for this call" if chip == "atlas-a2" else "no graph form")


def _row(**kw) -> StepRow:
    base = dict(id="r", measurement="m", source="s", url="u", chip="c", model="atlas-a2",
                framework="f", cards=1, workload="tiny-step", batch=2, formats="aclnn",
                value=1.0, unit="ms/step", tolerance=0.25, note="")
    return StepRow(**{**base, **kw})


def test_a_whole_step_row_is_the_steps_time_in_its_formats(result):
    step = result["step"]["atlas-a2"]
    exact = _row(value=step["aclnn_us"] / 1000)
    graph = _row(formats="internal", value=step["aclnn_us"] / 1000)
    other_batch = _row(batch=4)
    found = step_errors(result, [exact, graph, other_batch])
    assert [x["row"] for x in found] == [exact, graph]
    assert found[0]["error"] == pytest.approx(0) and found[0]["within"]
    assert found[1]["error"] == pytest.approx(step["internal_us"] / step["aclnn_us"] - 1)


def test_images_per_second_become_a_step_time():
    assert _row(value=2000.0, unit="images/s", batch=256).measured_ms == pytest.approx(128.0)


def test_the_shipped_step_rows_load():
    rows = load_steps()
    assert len(rows) == 5 and {r.model for r in rows} == {"atlas-training", "atlas-a2"}
    assert all(r.tolerance == 0.25 for r in rows)


def test_a_products_list_names_known_products(tmp_path):
    bad = WORKLOAD.replace('products = ["atlas-a2"]', 'products = ["atlas-b3"]')
    (tmp_path / "wl.toml").write_text(bad)
    with pytest.raises(NpusimError, match="products"):
        load_workload(tmp_path / "wl.toml")


def test_the_report_of_a_step_with_per_product_calls_is_written(result, tmp_path):
    from npusim.face.outdir import OutputDir
    from npusim.studies.predict.report import markdown, write_report

    with OutputDir(tmp_path / "out") as out:
        write_report(result, out)
    md = markdown(result)
    assert "The step: by phase, in both formats, by operator" in md
    assert "calls run in their graph form" in md and "graph mode runs" in md
    assert "| 5hd: graph form: TransData(weight), Conv2DBackpropInput" in md
    assert "aclnn: its aclnn run converts no activation" in md
    assert "not on this product" in md
    assert (tmp_path / "out" / "layers.png").stat().st_size > 0


def test_graph_forms_are_points_of_their_own_run_once_and_cached(tmp_path, monkeypatch):
    """Only the call whose aclnn run converts activations (the convolution's gradient, on each
    chip) adds a graph-form point; a second prediction reads every point from the cache."""
    from npusim.studies import cache, executor

    path = tmp_path / "wl.toml"
    path.write_text(WORKLOAD)
    added = []
    first = predict(load_workload(path), jobs=1, on_more=added.append)
    assert added == [2]
    assert len(list(cache.cache_dir().glob("*/*.json"))) == 6 + 2   # six aclnn points (two
    #                           calls x two chips, two one-product calls), two graph forms

    def no_run(point):
        raise AssertionError(f"simulated again: {point}")

    monkeypatch.setattr(executor, "run_point", no_run)
    second = predict(load_workload(path), jobs=1)
    assert [r.get("internal_us") for r in second["rows"]] == \
        [r.get("internal_us") for r in first["rows"]]
