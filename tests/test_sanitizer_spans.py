"""The sanitizer joins one instruction's overlapping spans (vnchwconv writes 16 strided lists
whose hulls overlap) before recording them: the same bytes, so the same races, in one history
entry that a later access can cover."""

from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from npusim.engine.memory import Buffer
from npusim.engine.sanitizer import Sanitizer, _merged
from npusim.errors import HazardError

UB, L1 = Buffer("UB", "aiv0", 1 << 16), Buffer("L1", "aic0", 1 << 16)
SPANS = st.lists(st.tuples(st.sampled_from([UB, L1]), st.integers(0, 300),
                           st.integers(0, 60)).map(lambda s: (s[0], s[1], s[1] + s[2])),
                 max_size=20)


def _bytes(spans) -> set:
    return {(id(store), b) for store, lo, hi in spans for b in range(lo, hi)}


@given(SPANS)
def test_merged_spans_are_the_same_bytes_disjoint_and_in_store_order(spans):
    merged = _merged(spans)
    assert _bytes(merged) == _bytes(spans)
    stores = [s for s, *_ in spans]
    assert [s for s, *_ in merged] == sorted((s for s, *_ in merged), key=stores.index)
    for (s1, _, hi1), (s2, lo2, _) in zip(merged, merged[1:], strict=False):
        assert s1 is not s2 or hi1 < lo2     # neither overlapping nor touching


class _Inst(SimpleNamespace):
    name = "op"
    checks_data = touches_gm = False

    def reads(self):
        return self.r

    def writes(self):
        return self.w


def _sanitizer():
    return Sanitizer([SimpleNamespace(index=0, label="aiv0", pipes=("V", "MTE3"))])


def test_sixteen_overlapping_lists_are_one_entry_and_a_later_write_covers_it():
    san = _sanitizer()
    lists = tuple((UB, 32 * i, 32 * i + 4096) for i in range(16))
    for _ in range(50):     # back to back on one pipe: each covers the one before
        san.on_exec(0, "V", _Inst(r=(), w=lists))
    entries = [e for page in san.history[UB].values() for e in page]
    assert len({e[0] for e in entries}) == 1


def test_a_race_with_a_merged_write_is_still_found():
    san = _sanitizer()
    san.on_exec(0, "V", _Inst(r=(), w=tuple((UB, 32 * i, 32 * i + 64) for i in range(16))))
    with pytest.raises(HazardError, match="race"):   # MTE3 reads without waiting for V
        san.on_exec(0, "MTE3", _Inst(r=((UB, 500, 540),), w=()))
