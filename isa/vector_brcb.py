"""Brcb: broadcast each of 8 source elements over one 32-byte block of dst (PIPE_V).

Ascend C ``Brcb(dst, src, repeatTimes, BrcbRepeatParams{dstBlkStride, dstRepStride})``: each
repeat takes the next 8 elements of src and fills 8 blocks of dst, block j of the repeat holding
8 (fp32/int32) or 16 (fp16/int16) copies of element j. The blocks of a repeat are
``dst_blk_stride`` blocks apart; repeats start ``dst_rep_stride`` blocks apart; src advances 8
elements per repeat. A kernel uses it to turn a vector of per-row scalars into blocks that a
binary instruction with block stride 0 reads as a broadcast operand.

Cost: the ``duplicate`` entry of ``[vector.cost]`` per repeat (assumed: the PTO-VEC profile has
no Brcb row; both write 256 bytes per repeat from a few source bytes).
Checked: dtypes the chip computes in, 32-byte aligned UB operands, repeat_times <=
``max_repeat_times``, bounds (MemoryAccessError).
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import NpusimError

from .base import Instr, Pipe
from .vector import BLOCK_BYTES, _check_placement, check_chip_dtypes, cost_class

BRCB_ELEMENTS = 8   # source elements one repeat broadcasts, one per destination block
BRCB_DTYPES = ("float16", "float32", "int16", "int32")


@dataclass(frozen=True, kw_only=True, slots=True)
class Brcb(Instr):
    """Brcb(dst, src, repeat_times, dst_blk_stride, dst_rep_stride); strides in 32-byte blocks."""

    name: ClassVar[str] = "brcb"
    pipe: ClassVar[str] = Pipe.V
    dst: object
    src: object
    repeat_times: int
    dst_blk_stride: int = 1
    dst_rep_stride: int = 8

    def __post_init__(self):
        for key in ("repeat_times", "dst_blk_stride", "dst_rep_stride"):
            value = getattr(self, key)
            if not isinstance(value, int | np.integer) or value < 0:
                raise NpusimError(f"brcb: {key} must be a non-negative int, got {value!r}")
        if self.dst.dtype != self.src.dtype:
            raise NpusimError(f"brcb: dst and src must share one dtype, got "
                              f"{name_of(self.dst.dtype)} and {name_of(self.src.dtype)}")
        self.src.check(self._src_bytes(), "brcb read of src")
        self.dst.check(self._dst_bytes(), "brcb write of dst")

    def _src_bytes(self) -> int:
        return self.repeat_times * BRCB_ELEMENTS * self.src.dtype.itemsize

    def _block_index(self) -> np.ndarray:
        """dst block of every source element, in source order."""
        e = np.arange(self.repeat_times * BRCB_ELEMENTS)
        rep, blk = e // BRCB_ELEMENTS, e % BRCB_ELEMENTS
        return rep * self.dst_rep_stride + blk * self.dst_blk_stride

    def _dst_bytes(self) -> int:
        if not self.repeat_times:
            return 0
        return (int(self._block_index().max()) + 1) * BLOCK_BYTES

    def validate(self, chip) -> None:
        allowed = tuple(d for d in BRCB_DTYPES if d in chip.compute_dtypes)
        check_chip_dtypes(self.name, chip, (self.dst.dtype,), allowed)
        if self.repeat_times > chip.max_repeat_times:
            raise NpusimError(f"brcb: repeat_times = {self.repeat_times}; allowed: "
                              f"0..{chip.max_repeat_times} on chip {chip.name!r}")
        _check_placement(self.name, self.dst, "dst", chip.ub_align_bytes)
        _check_placement(self.name, self.src, "src0", chip.ub_align_bytes)
        self.cost(chip)

    def cost(self, chip) -> tuple[float, float]:
        return chip.vector_cost("duplicate", cost_class(self.dst.dtype))

    def head(self, chip) -> float:
        return self.cost(chip)[0]

    def body(self, chip) -> float:
        return self.cost(chip)[1] * self.repeat_times

    def execute(self) -> None:
        n = self.repeat_times * BRCB_ELEMENTS
        values = self.src.array(n).copy()
        per_block = BLOCK_BYTES // self.dst.dtype.itemsize
        flat = self.dst.array(self._dst_bytes() // self.dst.dtype.itemsize)
        starts = self._block_index() * per_block
        flat[(starts[:, None] + np.arange(per_block)).ravel()] = np.repeat(values, per_block)

    def reads(self) -> tuple:
        return ((self.src.store, self.src.addr, self.src.addr + self._src_bytes()),)

    def writes(self) -> tuple:
        return ((self.dst.store, self.dst.addr, self.dst.addr + self._dst_bytes()),)

    def operands(self) -> dict:
        return {"dtype": name_of(self.dst.dtype), "repeat_times": self.repeat_times}
