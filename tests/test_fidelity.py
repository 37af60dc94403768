"""The fidelity rule (npusim.studies.validate.fidelity): a prediction closer to a peak than any
published measurement backs is flagged in npusim run's summary, the compare / demo tables and the
predict report."""

from pathlib import Path


def test_fidelity_rule_backs_or_flags_a_prediction_near_a_peak():
    from npusim.studies.validate.fidelity import check

    assert check("atlas-a2", "compute", 0.80, 1 << 30) == ""          # below 85%
    backed = check("atlas-a2", "compute", 0.87, 1 << 30)               # 910B2 torch.mm: 89%
    assert backed.startswith("87% of the cube's peak: backed by the validation row")
    flag = check("atlas-a2", "compute", 0.95, 1 << 30)
    assert flag.startswith("FLAG: 95% of the cube's peak") and "mm-910b2-4096" in flag
    assert check("atlas-training", "compute", 0.9, 1 << 30).startswith("FLAG")   # AIBench 82%
    assert check("atlas-a2", "memory", 0.98, 1 << 20) == ""            # not a real size
    assert "FLAG: 98% of the GM bandwidth" in check("atlas-a2", "memory", 0.98, 1 << 30)
    assert "no published measurement on atlas-inference" in check(
        "atlas-inference", "memory", 0.99, 1 << 30)


def test_a_run_at_the_hbm_roofline_carries_the_flag(tmp_path):
    """SiluGrad on an A2 model whose HBM is slowed 16x: the run sits at the HBM roofline, and
    the summary of npusim run, the compare / demo table and the predict notes flag it."""
    from npusim.cases import find_case
    from npusim.cases.run import metrics, run_case
    from npusim.chip import load_chip
    from npusim.face.report import compare_markdown, compare_text, summary_lines
    from npusim.studies.predict.report import notes

    text = Path(load_chip("atlas-a2").path).read_text()
    slow = tmp_path / "slow-hbm.toml"
    slow.write_text(text.replace("hbm_bytes_per_s = 1.6e12", "hbm_bytes_per_s = 1.0e11")
                    .replace('name = "atlas-a2"', 'name = "atlas-a2-slow-hbm"'))
    run = run_case(find_case("silu_backward"), str(slow), (1024, 4096), "float16", {},
                   numerics=False, sanitize=False, trace=False)
    lines = summary_lines(run)
    assert any(line.startswith("  fidelity    FLAG:") and "GM bandwidth" in line
               for line in lines), lines
    assert any("fidelity: FLAG" in line for line in compare_text([run]))
    assert any("fidelity: FLAG" in line for line in compare_markdown([run]))
    m = metrics(run)
    row = {"status": "ok", "chip": run.chip.name, "call": 1, "op": "silu_backward",
           "shape": "1024x4096", "note": "", "why": "memory-bound.", "roofline": m["bound"],
           "roofline_ratio": m["roofline_ratio"], "bytes": m["bytes"]}
    assert "Fidelity: FLAG" in notes({"rows": [row]})[0]
