"""InitConstValue: the L1 fill the A2 dx kernel zeroes its stride-expansion buffer with."""

import numpy as np
import pytest

from npusim.engine.memory import Buffer, LocalTensor
from npusim.errors import NpusimError
from npusim.isa.load import InitConstValue


def l1_tensor(dtype="float16"):
    buf = Buffer("L1", "aic0", 4096)
    buf.data[:] = 0xFF
    return buf, LocalTensor(buf, 0, np.dtype(dtype), 2048, 4096, "a1")


def test_fills_repeats_with_gaps():
    buf, t = l1_tensor()
    inst = InitConstValue(dst=t, repeat_times=2, block_num=3, dst_gap=1, init_value=1.5)
    inst.execute()
    vals = buf.data[:256].view(np.float16)
    assert np.all(vals[:48] == 1.5) and np.all(buf.data[96:128] == 0xFF)
    assert np.all(vals[64:112] == 1.5) and inst.moved_bytes() == 192


def test_rejects_other_buffers_and_overruns():
    buf = Buffer("UB", "aiv0", 1024)
    with pytest.raises(NpusimError):
        InitConstValue(dst=LocalTensor(buf, 0, np.dtype("float16"), 512, 1024, "x"))
    _, t = l1_tensor()
    with pytest.raises(NpusimError):
        InitConstValue(dst=t, repeat_times=200, block_num=1)
