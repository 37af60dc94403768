"""Brcb, GmGetValue and ScalarSubValue: semantics, bounds, chip checks and cost."""

import numpy as np
import pytest

import npusim
from npusim.dtypes import bfloat16
from npusim.engine.memory import Buffer, GlobalMemory, LocalTensor
from npusim.errors import MemoryAccessError, NpusimError
from npusim.isa.scalar_gm import GmGetValue, ScalarGetValues, ScalarSetValues, ScalarSubValue
from npusim.isa.vector import Mul, RepeatParams
from npusim.isa.vector_brcb import Brcb

A2 = npusim.load_chip("atlas-a2")


def ub_tensor(buf, addr, dtype, n, data=None):
    t = LocalTensor(buf, addr, np.dtype(dtype), n, addr + n * np.dtype(dtype).itemsize, "t")
    if data is not None:
        t.array()[...] = data
    return t


@pytest.mark.parametrize("dtype,per_block", [(np.float32, 8), (np.float16, 16), (np.int32, 8)])
def test_brcb_fills_one_block_per_element(dtype, per_block):
    buf = Buffer("UB", "aiv0", 4096)
    src = ub_tensor(buf, 0, dtype, 16, np.arange(1, 17))
    dst = ub_tensor(buf, 256, dtype, 16 * per_block)
    inst = Brcb(dst=dst, src=src, repeat_times=2)
    inst.validate(A2)
    inst.execute()
    assert np.array_equal(dst.array(), np.repeat(np.arange(1, 17), per_block).astype(dtype))
    assert inst.body(A2) == 2 * A2.vector_cost("duplicate", "f16" if per_block == 16 else
                                               "f32" if dtype == np.float32 else "int")[1]


def test_brcb_strides_place_the_blocks():
    buf = Buffer("UB", "aiv0", 4096)
    src = ub_tensor(buf, 0, np.float32, 8, np.arange(8))
    dst = ub_tensor(buf, 64, np.float32, 8 * 8 * 2, np.full(128, -1.0))
    Brcb(dst=dst, src=src, repeat_times=1, dst_blk_stride=2).execute()
    blocks = dst.array().reshape(16, 8)
    assert np.array_equal(blocks[::2, 0], np.arange(8)) and np.all(blocks[1::2] == -1)


def test_brcb_then_mul_with_block_stride_zero_broadcasts():
    buf = Buffer("UB", "aiv0", 4096)
    scale = ub_tensor(buf, 0, np.float32, 8, [3.0] + [0.0] * 7)
    block = ub_tensor(buf, 32, np.float32, 64)
    x = ub_tensor(buf, 512, np.float32, 100, np.arange(100))
    Brcb(dst=block, src=scale, repeat_times=1).execute()
    Mul(dst=x, src0=x, src1=block, repeat=RepeatParams(
        mask=64, repeat_times=1, src1_blk_stride=0, src1_rep_stride=0)).execute()
    assert np.array_equal(x.array()[:64], 3.0 * np.arange(64))
    assert np.array_equal(x.array()[64:], np.arange(64, 100))


def test_brcb_checks():
    buf = Buffer("UB", "aiv0", 1024)
    src = ub_tensor(buf, 0, np.float32, 8)
    with pytest.raises(MemoryAccessError, match="brcb write of dst"):
        Brcb(dst=ub_tensor(buf, 32, np.float32, 8), src=src, repeat_times=1)
    with pytest.raises(NpusimError, match="share one dtype"):
        Brcb(dst=ub_tensor(buf, 32, np.float16, 128), src=src, repeat_times=1)
    with pytest.raises(NpusimError, match="dtype bfloat16 is not supported"):
        Brcb(dst=ub_tensor(buf, 64, bfloat16, 128), src=ub_tensor(buf, 0, bfloat16, 16),
             repeat_times=1).validate(A2)
    with pytest.raises(NpusimError, match="not 32-byte aligned"):
        Brcb(dst=ub_tensor(buf, 40, np.float32, 64), src=src, repeat_times=1).validate(A2)


def test_gm_get_value_reads_an_input_and_costs_the_gm_latency():
    gm = GlobalMemory()
    t = gm.tensor("target", np.int64, 4, np.array([5, -100, 7, 1]))
    gm.load_inputs()
    inst = GmGetValue(src=t, index=2)
    assert inst.value() == 7 and inst.kind == "scalar"
    assert inst.body(A2) == A2.gm_latency_cycles
    with pytest.raises(MemoryAccessError):
        GmGetValue(src=t, index=4)
    with pytest.raises(NpusimError, match="reads GM"):
        GmGetValue(src=ub_tensor(Buffer("UB", "aiv0", 64), 0, np.int64, 4), index=0)


def test_scalar_sub_value_rounds_once_in_the_dtype():
    buf = Buffer("UB", "aiv0", 256)
    dst = ub_tensor(buf, 0, np.float32, 8, np.float32([1.0, 0.1, 2.0, 0, 0, 0, 0, 0]))
    src = ub_tensor(buf, 32, np.float32, 8, np.float32([0, 0, 0, 0.3, 0, 0, 0, 0]))
    inst = ScalarSubValue(dst=dst, index=1, src=src, src_index=3)
    inst.execute()
    assert dst.array()[1] == np.float32(0.1) - np.float32(0.3)
    assert dst.array()[0] == 1.0 and inst.body(A2) == 3 * A2.op_cycles
    assert inst.writes() == ((buf, 4, 8),)
    with pytest.raises(MemoryAccessError):
        ScalarSubValue(dst=dst, index=8, src=src, src_index=0)
    with pytest.raises(NpusimError, match="one float dtype"):
        ScalarSubValue(dst=dst, index=0, src=ub_tensor(buf, 64, np.int32, 8), src_index=0)


def test_scalar_runs_of_set_and_get_values():
    buf = Buffer("UB", "aiv0", 256)
    dst = ub_tensor(buf, 0, np.float32, 8, np.zeros(8))
    inst = ScalarSetValues(dst=dst, values=(1.5, 0.1, -2.0))
    inst.execute()
    assert np.array_equal(dst.array()[:4], np.float32([1.5, 0.1, -2.0, 0.0]))
    assert inst.writes() == ((buf, 0, 12),) and inst.body(A2) == 3 * A2.op_cycles
    get = ScalarGetValues(src=dst, count=8)
    assert get.reads() == ((buf, 0, 32),) and get.kind == "scalar_read"
    with pytest.raises(MemoryAccessError):
        ScalarSetValues(dst=dst, values=(0.0,) * 9)
    with pytest.raises(MemoryAccessError):
        ScalarGetValues(src=dst, count=9)
    loaded = ScalarSubValue(dst=dst, index=0, src=dst, src_index=5, src_loaded=True)
    assert loaded.reads() == ((buf, 0, 4),)      # src was checked when it was loaded
