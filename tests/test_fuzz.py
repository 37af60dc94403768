"""The fuzzer the project keeps (tests/fuzz.py), run on 1,000 draws: every operator call and
command line it draws ends in a checked result or one clear NpusimError, never a traceback,
a mismatch or a hang. ``python tests/fuzz.py N --start S`` runs more, or replays a seed."""

import fuzz


def test_a_thousand_draws_give_no_traceback_mismatch_or_hang(capsys):
    outcomes = fuzz.fuzz(1000, start=0, quiet=True)
    failed = [o for o in outcomes if o.kind == "fail"]
    assert not failed, "\n".join(f"seed {o.seed}: {o.what}\n{o.detail}" for o in failed[:5])
    kinds = {o.kind for o in outcomes}
    assert kinds == {"ok", "error"}, kinds   # the draws reach both: runs and refusals


def test_the_fuzzer_catches_a_traceback_and_a_wrong_answer(monkeypatch):
    """Not blind: an operator that raises a bare exception, or returns a wrong output, fails
    the draw with its seed."""
    from npusim.cases import CASES

    case = CASES["silu_backward"]
    real = type(case).function
    pick = ("silu_backward", "atlas-a2", 16, "float16", "timed")
    monkeypatch.setattr(fuzz.random.Random, "choice", lambda self, seq: next(
        (p for p in pick if p in seq), seq[-1]))
    for name, value in (("_tiling", None), ("_params", {}), ("_poison", False)):
        monkeypatch.setattr(fuzz, name, lambda *args, value=value: value)
    monkeypatch.setattr(type(case), "function", lambda self: lambda *a, **k: 1 / 0)
    assert fuzz.draw(0).kind == "fail"

    def wrong(self):
        def run(*args, **kwargs):
            result = real(self)(*args, **kwargs)
            result.outputs["gradInput"] = result.outputs["gradInput"] * 0 + 1
            return result
        return run

    monkeypatch.setattr(type(case), "function", wrong)
    outcome = fuzz.draw_op(0)
    assert outcome.kind == "fail" and "gradInput" in outcome.detail, outcome
