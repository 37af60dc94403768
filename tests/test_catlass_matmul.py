"""The CATLASS-shaped GEMM: exact against its order, within fp16 rounding of PyTorch, CATLASS's
block order as its documentation describes it, bad input refused."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from npusim import NpusimError, golden, ops
from npusim.errors import ParamError, TilingError
from npusim.ops.catlass.tiling import CatlassMatmulTiling, block_coord, block_shape, k_order

CHIP = "atlas-a2-910b3"
CASES = [  # m, n, k, layout_b, tiling overrides
    (64, 96, 128, "column", dict(l1_m=32, l1_n=32, l1_k=64, l0_k=32)),
    (50, 70, 96, "column", dict(l1_m=32, l1_n=48, l1_k=64, l0_k=32)),          # edge blocks
    (40, 70, 96, "zn", dict(l1_m=32, l1_n=48, l1_k=64, l0_k=32, swizzle_direction=1)),
    (20, 200, 256, "zn", dict(l1_m=32, l1_n=80, l1_k=128, l0_k=32, shuffle_k=False)),
    (128, 256, 512, "column", dict(block_dim=3)),                                # 1 block, 3 cores
    (48, 64, 80, "zn", dict(l1_m=32, l1_n=32, l1_k=64, l0_k=32)),               # short k tile
]


def inputs(m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.uniform(-1, 1, (m, k)).astype(np.float16),
            rng.uniform(-1, 1, (k, n)).astype(np.float16))


@pytest.mark.parametrize("m, n, k, layout_b, tiling", CASES)
def test_exact_and_within_fp16_of_torch(m, n, k, layout_b, tiling):
    a, b = inputs(m, n, k)
    r = ops.catlass_matmul(a, b, layout_b=layout_b, chip=CHIP, tiling=tiling)
    c = r.outputs["c"]
    want = golden.catlass_matmul(a, b, tiling=r.tiling)["c"]
    assert np.array_equal(c.view(np.uint16), want.view(np.uint16))
    truth = (torch.from_numpy(a).double() @ torch.from_numpy(b).double()).numpy()
    assert np.all(np.abs(c - truth) <= 2.0 ** -10 * np.abs(truth) + 2.0 ** -14)


def test_a_wrong_k_order_gives_another_answer():
    """The golden follows the shuffled k order: with it off, the fp32 sums round differently."""
    a, b = inputs(128, 64, 1024, seed=3)        # two blocks: core 1 starts at k tile 1
    r = ops.catlass_matmul(a, b, chip=CHIP, tiling=dict(l1_m=64, l1_n=64, l1_k=64, l0_k=64))
    unshuffled = golden.catlass_matmul(a, b, tiling=CatlassMatmulTiling(
        **{**vars(r.tiling), "shuffle_k": False}))["c"]
    assert not np.array_equal(r.outputs["c"], unshuffled)


def test_the_documented_imbalance_of_the_default_tile():
    """CATLASS's page: 1024x576 in 128x256 blocks is 24 blocks on 20 cores, four of which
    take two; 256x128 is 20 blocks, one each."""
    t = CatlassMatmulTiling(m=1024, n=576, k=6144, layout_b="column", block_dim=20)
    per_core = [len(range(c, t.tasks, 20)) for c in range(20)]
    assert t.tasks == 24 and per_core.count(2) == 4 and per_core.count(1) == 16
    tuned = CatlassMatmulTiling(m=1024, n=576, k=6144, layout_b="column", l1_m=256, l1_n=128,
                                block_dim=20)
    assert tuned.tasks == 20
    assert [block_shape(tuned, *block_coord(tuned, i))[1] for i in range(20)].count(64) == 4


@settings(max_examples=60, deadline=None)
@given(rows=st.integers(1, 12), cols=st.integers(1, 12), offset=st.integers(1, 5),
       direction=st.integers(0, 1))
def test_the_swizzle_deals_every_block_once(rows, cols, offset, direction):
    t = CatlassMatmulTiling(m=16 * rows, n=16 * cols, k=16, layout_b="column", l1_m=16,
                            l1_n=16, swizzle_offset=offset, swizzle_direction=direction,
                            block_dim=1)
    coords = [block_coord(t, i) for i in range(t.tasks)]
    assert sorted(coords) == [(i, j) for i in range(rows) for j in range(cols)]


def test_shuffle_k_starts_at_the_core_index():
    t = CatlassMatmulTiling(m=16, n=16, k=16 * 5, layout_b="column", l1_k=16, block_dim=8)
    assert k_order(t, 7) == [2, 3, 4, 0, 1]


def test_back_to_back_l0a_loads_pay_the_start_up_only_when_mte1_was_idle_on_a2():
    """One LoadData2D per fractal row of A: msKPP's L1_TO_L0A table streams them without
    PERF-LOAD's 28 cycles each; a load that finds MTE1 idle pays them."""
    a, b = inputs(64, 64, 64)
    r = ops.catlass_matmul(a, b, chip=CHIP, tiling=dict(l1_m=64, l1_n=64, l1_k=64, l0_k=64,
                                                        block_dim=1))
    loads = [rec for rec in r.tracer.records if rec[2].name == "load_data"
             and rec[2].dst.kind == "L0A"]
    assert len(loads) == 4
    chip = r.chip
    key = "l1_to_l0a_bytes_per_cycle"
    paid = 0
    for _core, _pipe, inst, _issue, start, end in loads:
        body = inst.moved_bytes() / chip.rate(key, inst.moved_bytes())
        assert end - start in (pytest.approx(body),
                               pytest.approx(chip.load2d_startup_cycles + body))
        paid += end - start > body + 1
    assert 1 <= paid < len(loads)   # only a load that finds MTE1 idle pays the start-up


@pytest.mark.parametrize("args, error", [
    (dict(chip="atlas-training"), ParamError),
    (dict(layout_b="row"), ParamError),
    (dict(tiling=dict(l1_m=24)), TilingError),
    (dict(tiling=dict(l1_m=512)), TilingError),
    (dict(tiling=dict(l1_k=96, l0_k=64)), TilingError),
    (dict(tiling=dict(swizzle_direction=2)), TilingError),
    (dict(tiling=dict(block_dim=21)), TilingError),
    (dict(tiling=dict(colour=1)), TilingError),
    (dict(tiling=dict(layout_b="zn")), TilingError),      # a parameter, not a tiling field
    (dict(tiling=dict(k=64)), TilingError),
])
def test_bad_input_is_a_clear_error(args, error):
    a, b = inputs(32, 32, 32)
    with pytest.raises(error) as e:
        ops.catlass_matmul(a, b, **{"chip": CHIP, **args})
    assert "catlass_matmul" in str(e.value)


@pytest.mark.parametrize("a, b", [
    (np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float16)),
    (np.zeros((32, 32), np.float16), np.zeros((16, 32), np.float16)),
    (np.zeros((32, 40), np.float16), np.zeros((40, 32), np.float16)),
    (np.zeros((0, 32), np.float16), np.zeros((32, 32), np.float16)),
    ([[1.0], [1.0, 2.0]], np.zeros((32, 32), np.float16)),           # ragged: not an array
    (None, np.zeros((32, 32), np.float16)),
])
def test_bad_matrices_are_a_clear_error(a, b):
    with pytest.raises(NpusimError, match="catlass_matmul"):
        ops.catlass_matmul(a, b, chip=CHIP)


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 80), n=st.integers(1, 80), k16=st.integers(1, 8),
       layout_b=st.sampled_from(["column", "zn"]),
       tiling=st.fixed_dictionaries({}, optional={
           "l1_m": st.sampled_from([0, 16, 24, 32, 48, 512]),
           "l1_n": st.sampled_from([16, 32, 80]), "l1_k": st.sampled_from([16, 32, 64, 96]),
           "l0_k": st.sampled_from([16, 32, 64]), "swizzle_offset": st.integers(0, 4),
           "swizzle_direction": st.integers(0, 2), "shuffle_k": st.booleans(),
           "block_dim": st.integers(0, 30)}))
def test_any_arguments_give_the_exact_answer_or_a_clear_error(m, n, k16, layout_b, tiling):
    a, b = inputs(m, n, 16 * k16, seed=m * n)
    try:
        r = ops.catlass_matmul(a, b, layout_b=layout_b, chip=CHIP, tiling=tiling)
    except NpusimError as exc:
        assert "catlass_matmul" in str(exc)
        return
    want = golden.catlass_matmul(a, b, tiling=r.tiling)["c"]
    assert np.array_equal(r.outputs["c"].view(np.uint16), want.view(np.uint16))
