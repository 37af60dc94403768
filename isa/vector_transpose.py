"""TransDataTo5HD (the vnchwconv instruction): a 16 x 16 transpose of 32-byte blocks in UB.

Ascend C's ``TransDataTo5HD(dstList, srcList, params)`` takes 16 source and 16 destination UB
addresses, each the start of a 32-byte block. For a 16-bit dtype each block holds 16 elements,
so the sources form a 16 x 16 matrix (row i = source block i) and destination block j receives
its column j: ``dst[j][i] = src[i][j]``. With ``repeat_times`` > 1 every source address moves on
by ``src_rep_stride`` blocks and every destination address by ``dst_rep_stride`` blocks per
repeat. CANN's TransData uses it to turn C rows of H*W into H*W rows of C0 (NCHW -> NC1HWC0).

Modelled: the 16-bit form (fp16, bf16, int16, uint16), executed on the simulated UB bytes; all
sources of a repeat are read before its destinations are written. Cost: the ``vnchwconv``
entry of the chip's vector cost table, start-up (head) plus slope x ``repeat_times`` (one
repeat moves 512 bytes). Not modelled: the 8-bit form with its high/low halves and the 32-bit
form (an 8 x 16 transpose); they raise NpusimError.
"""

from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

import numpy as np

from npusim.dtypes import name_of
from npusim.errors import NpusimError

from .base import Instr, Pipe

BLOCK_BYTES = 32
LIST_LEN = 16


@lru_cache(maxsize=256)
def _gather_index(addrs: tuple, repeats: int, src_stride: int, dst_stride: int):
    """(source, destination) indices of 16-bit elements such that destination block j of each
    repeat gets lane j of the 16 source blocks (cached per address list, read-only), or None
    when an address is odd or two destination blocks overlap (the order of the writes would
    matter). With dst_stride 0 every repeat writes the same blocks: only the last counts."""
    if any(a % 2 for a in addrs):
        return None
    first = repeats - 1 if dst_stride == 0 else 0
    step = np.arange(first, repeats)[:, None] * LIST_LEN
    where = np.array(addrs) // 2
    src = where[None, :LIST_LEN] + step * src_stride                     # (repeat, i)
    dst = where[None, LIST_LEN:] + step * dst_stride                     # (repeat, j)
    if np.diff(np.sort(dst, axis=None)).min(initial=LIST_LEN) < LIST_LEN:
        return None
    lane = np.arange(LIST_LEN)
    src_index = np.ascontiguousarray((src[:, :, None] + lane).transpose(0, 2, 1))  # [r, j, i]:
    # source block i, lane j
    dst_index = dst[:, :, None] + lane                        # [r, j, i]: block j, lane i
    for index in (src_index, dst_index):
        index.setflags(write=False)
    return src_index, dst_index


@dataclass(frozen=True, kw_only=True, slots=True)
class TransDataTo5HD(Instr):
    """vnchwconv: ``dst`` and ``src`` are 16 UB tensor windows each (one per 32-byte block)."""

    name: ClassVar[str] = "trans_data_to_5hd"
    pipe: ClassVar[str] = Pipe.V
    dst: tuple
    src: tuple
    repeat_times: int = 1
    dst_rep_stride: int = 0
    src_rep_stride: int = 0

    def __post_init__(self):
        if len(self.dst) != LIST_LEN or len(self.src) != LIST_LEN:
            raise NpusimError(f"{self.name}: dst and src lists hold {LIST_LEN} addresses each, "
                              f"got {len(self.dst)} and {len(self.src)}")
        if not (isinstance(self.repeat_times, int) and self.repeat_times >= 1):
            raise NpusimError(f"{self.name}: repeat_times = {self.repeat_times!r}: allowed an "
                              "integer >= 1")
        if min(self.dst_rep_stride, self.src_rep_stride) < 0:
            raise NpusimError(f"{self.name}: negative repeat stride")
        dtype = self.src[0].dtype
        if dtype.itemsize != 2 or any(t.dtype != dtype for t in (*self.dst, *self.src)):
            dtypes = {t.dtype for t in (*self.dst, *self.src)}
            raise NpusimError(f"{self.name}: only the 16-bit form is modelled; got "
                              f"{', '.join(sorted(name_of(d) for d in dtypes))}")
        for tensors, stride, what in ((self.src, self.src_rep_stride, "read of src"),
                                      (self.dst, self.dst_rep_stride, "write of dst")):
            span, what = self._span(stride), f"{self.name} {what}"
            for t in tensors:
                t.check(span, what)

    def _span(self, stride: int) -> int:
        return ((self.repeat_times - 1) * stride + 1) * BLOCK_BYTES

    def validate(self, chip) -> None:
        if self.repeat_times > chip.max_repeat_times:
            raise NpusimError(f"{self.name}: repeat_times = {self.repeat_times}; allowed: "
                              f"1..{chip.max_repeat_times} on chip {chip.name!r}")
        for tensors, what in ((self.src, "read of src"), (self.dst, "write of dst")):
            for t in tensors:
                if t.kind != "UB" or t.addr % BLOCK_BYTES:
                    raise NpusimError(f"{self.name}: {what} at {t.where()} must be a 32-byte "
                                      "aligned UB address")
        chip.vector_cost("vnchwconv", "f16")

    def head(self, chip) -> float:
        return chip.vector_cost("vnchwconv", "f16")[0]

    def body(self, chip) -> float:
        return chip.vector_cost("vnchwconv", "f16")[1] * self.repeat_times

    def _blocks(self, tensor, stride: int) -> np.ndarray:
        """One address's blocks as a (repeat, lane) view of its elements (a copy of the
        indices' worth when the repeats overlap: stride 0)."""
        a = tensor.array(self._span(stride) // 2)
        if stride == 0:
            return a[np.zeros((self.repeat_times, 1), np.intp) + np.arange(LIST_LEN)]
        step = a.strides[0]
        return np.lib.stride_tricks.as_strided(a, shape=(self.repeat_times, LIST_LEN),
                                               strides=(stride * LIST_LEN * step, step))

    def execute(self) -> None:
        if not self._gather(self.src[0].store):
            self._execute_by_address()

    def _gather(self, store) -> bool:
        """The transpose as one gather and one scatter on the store's 16-bit elements; False
        (nothing done) unless every address is an even byte of ``store`` and no two
        destination blocks overlap (then the order of the writes cannot matter)."""
        if any(t.store is not store for t in (*self.src, *self.dst)) or store.data.size % 2:
            return False
        where = _gather_index(tuple(t.addr for t in (*self.src, *self.dst)), self.repeat_times,
                              self.src_rep_stride, self.dst_rep_stride)
        if where is None:
            return False
        elements = store.data.view(np.uint16)
        elements[where[1]] = elements[where[0]]
        return True

    def _execute_by_address(self) -> None:
        rows = np.stack([self._blocks(t, self.src_rep_stride) for t in self.src],
                        axis=1)                               # (repeat, src i, lane j)
        for j, t in enumerate(self.dst):
            if self.dst_rep_stride == 0:     # every repeat writes the same block: the last
                t.array(LIST_LEN)[:] = rows[-1, :, j]
            else:
                self._blocks(t, self.dst_rep_stride)[...] = rows[:, :, j]

    def reads(self) -> tuple:
        span = self._span(self.src_rep_stride)
        return tuple((t.store, t.addr, t.addr + span) for t in self.src)

    def writes(self) -> tuple:
        span = self._span(self.dst_rep_stride)
        return tuple((t.store, t.addr, t.addr + span) for t in self.dst)

    def operands(self) -> dict:
        return {"dtype": name_of(self.src[0].dtype), "repeat_times": self.repeat_times,
                "dst_rep_stride": self.dst_rep_stride, "src_rep_stride": self.src_rep_stride}
