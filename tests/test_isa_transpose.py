"""TransDataTo5HD (vnchwconv): semantics, strides, checks and cost."""

import numpy as np
import pytest

import npusim
from npusim.dtypes import bfloat16
from npusim.engine.memory import Buffer, LocalTensor
from npusim.errors import MemoryAccessError, NpusimError
from npusim.isa.vector_transpose import TransDataTo5HD

CHIPS = [npusim.load_chip(c) for c in ("atlas-a2", "atlas-training", "atlas-inference")]


def ub(buf, addr, dtype, n, data=None):
    t = LocalTensor(buf, addr, np.dtype(dtype), n, addr + n * np.dtype(dtype).itemsize, "t")
    if data is not None:
        t.array()[...] = data
    return t


@pytest.mark.parametrize("dtype", [np.float16, bfloat16, np.int16])
def test_rows_of_positions_become_positions_of_channels(dtype):
    """16 channel rows of 48 positions (pitch 48) -> 48 positions x 16 channels (NC1HWC0)."""
    buf = Buffer("UB", "aiv0", 8192)
    data = (np.arange(16 * 48) % 251).astype(dtype).reshape(16, 48)
    src = ub(buf, 0, dtype, 16 * 48, data.ravel())
    dst = ub(buf, 2048, dtype, 48 * 16)
    inst = TransDataTo5HD(dst=[dst[16 * j] for j in range(16)],
                          src=[src[48 * i] for i in range(16)], repeat_times=3,
                          dst_rep_stride=16, src_rep_stride=1)
    inst.validate(CHIPS[0])
    inst.execute()
    assert np.array_equal(dst.array().reshape(48, 16), data.T)


def test_one_source_may_repeat_a_zero_row():
    buf = Buffer("UB", "aiv0", 4096)
    src = ub(buf, 0, np.float16, 3 * 16, np.arange(1, 49))
    zero = ub(buf, 512, np.float16, 16, np.zeros(16))
    dst = ub(buf, 1024, np.float16, 256)
    TransDataTo5HD(dst=[dst[16 * j] for j in range(16)],
                   src=[src[16 * i] for i in range(3)] + [zero] * 13).execute()
    out = dst.array().reshape(16, 16)
    assert np.array_equal(out[:, :3], np.arange(1, 49).reshape(3, 16).T)
    assert not out[:, 3:].any()


def test_checks():
    buf = Buffer("UB", "aiv0", 1024)
    t16 = ub(buf, 0, np.float16, 512)
    with pytest.raises(NpusimError, match="16 addresses"):
        TransDataTo5HD(dst=[t16] * 15, src=[t16] * 16)
    t32 = ub(buf, 0, np.float32, 256)
    with pytest.raises(NpusimError, match="16-bit form"):
        TransDataTo5HD(dst=[t32] * 16, src=[t32] * 16)
    with pytest.raises(MemoryAccessError):
        TransDataTo5HD(dst=[t16] * 16, src=[t16] * 16, repeat_times=40, src_rep_stride=1)
    with pytest.raises(NpusimError, match="aligned"):
        TransDataTo5HD(dst=[t16[1]] * 16, src=[t16] * 16).validate(CHIPS[0])
    with pytest.raises(NpusimError, match="repeat_times"):
        TransDataTo5HD(dst=[t16] * 16, src=[t16] * 16, repeat_times=0)


@pytest.mark.parametrize("chip", CHIPS, ids=lambda c: c.name)
def test_cost_is_the_vnchwconv_profile(chip):
    buf = Buffer("UB", "aiv0", 65536)
    t = ub(buf, 0, np.float16, 16 * 16 * 10)
    inst = TransDataTo5HD(dst=[t] * 16, src=[t] * 16, repeat_times=10, src_rep_stride=1,
                          dst_rep_stride=1)
    start, slope = chip.vector_cost("vnchwconv", "f16")
    assert (inst.head(chip), inst.body(chip)) == (start, 10 * slope)
