"""Result.summary() and the compare table label what they show (issue 42, item 7): the bytes
init_buffer carved and the most live at once are two numbers under two names; a memory roofline
line; whether kernel start-up is charged."""


from npusim.face.report import peak_label
from npusim.micro.vector import run_vector


def test_summary_names_carved_and_live_bytes_apart_and_has_a_roofline():
    r = run_vector("add", tiles=4, tile_length=2048, buffer_num=2)
    text = r.summary()
    carved, live = r.stats["peak_bytes"]["UB"], r.stats["peak_live_bytes"]["UB"]
    assert carved != live
    assert f"UB   carved by init_buffer {carved:>11,d} bytes  live at most {live:>11,d}" in text
    assert "peak UB" not in text
    gm = sum(n for path, n in r.stats["bytes_by_path"].items() if "GM" in path)
    assert f"roofline (memory): {gm:,} GM bytes at 1.60 TB/s" in text
    assert "start-up: none charged (a bare launch()" in text


def test_summary_without_the_trace_says_the_live_bytes_need_it():
    r = run_vector("add", tiles=2, trace=False)
    assert "(live bytes: run with trace on)" in r.summary()


def test_compare_rows_say_carved_or_live():
    live, carved = {"peak_kind": "live"}, {"peak_kind": "carved"}
    assert peak_label([live, live], "UB") == "peak UB live"
    assert peak_label([carved], "UB") == "UB carved"
    assert peak_label([live, carved], "L1") == "L1 carved"
