"""The per-tile computes of the elementwise template, one per CANN kernel it stands for.

Each is a frozen dataclass (its scalar fields are the kernel's tiling-struct attributes):
``op_type`` names the kernel (msprof's OP Type), ``inputs`` the input queues,
``work_bytes(dtype)`` the UB work space per element, ``setup(kernel)`` what a core does once
before its tiles, and a call issues one tile's vector instructions. fp16 and fp32 compute in
their own dtype; bf16 (Atlas A2 only) goes through fp32 with ``Cast`` in and ``Cast`` out
(CAST_RINT), because A2's vector unit only converts bf16 (``isa/vector.py``). Scalars are
converted to the compute dtype when issued, as the chip does.

Kernels modelled (CANN 8.x, Atlas training and A2, TBE DSL; kernels.md §1(b) for the pipes):
- ``Relu``: ``vrelu``.
- ``ReluGrad`` (threshold 0) and ``ThresholdGradV2D`` (any other threshold): a compare of self
  with the threshold and a select of gradOutput or 0 (TBE's ``vcmpsel``) **[inference: the TBE
  sources' exact instruction choice was not read]**.
- ``Fill``: ``Duplicate`` of a value (aclnn's l0op::Fill), no input.
- aclnnMuls: ``Mul`` by the scalar converted to a one-element tensor of self's dtype (fp16, fp32:
  ``vmuls``); for bf16 with a double scalar (what torch passes) ``Muls`` (l0op::Muls, the scalar
  as fp32), through fp32 **[inference: the Muls kernel's source was not read]**.
- ``Add``: ``vadd``. ``Axpy`` (alpha != 1, fp16/fp32): ``vmuls`` of other by alpha, then
  ``vadd``. ``Mul`` (the bf16 alpha path's first kernel): ``vmuls`` by alpha.
"""

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from npusim.dsl import vector as vec


def _wide(dtype) -> bool:
    return np.dtype(dtype).name == "bfloat16"


class _Compute:
    op_type: ClassVar[str]
    inputs: ClassVar[int]
    wide_tiles: ClassVar[int] = 0    # fp32 work tiles on the bf16 path
    narrow_tiles: ClassVar[int] = 0  # work tiles (4 bytes an element) otherwise
    mask: ClassVar[bool] = False     # a compare mask (one byte an element reserved)

    def work_bytes(self, dtype) -> int:
        tiles = self.wide_tiles if _wide(dtype) else self.narrow_tiles
        return 4 * tiles + (1 if self.mask else 0)

    def setup(self, k) -> None:
        """Nothing to do before the first tile."""


@dataclass(frozen=True)
class Relu(_Compute):
    """out = max(self, 0)."""

    op_type: ClassVar[str] = "Relu"
    inputs: ClassVar[int] = 1
    wide_tiles: ClassVar[int] = 1

    def __call__(self, k, out, ins, n):
        (x,) = ins
        if not _wide(k.dtype):
            vec.relu(out, x, n)
            return
        f = k.work(0)
        vec.cast(f, x, "none", n)
        vec.relu(f, f, n)
        vec.cast(out, f, "rint", n)


@dataclass(frozen=True)
class ThresholdGrad(_Compute):
    """gradInput = gradOutput where self > threshold, else 0."""

    threshold: float
    inputs: ClassVar[int] = 2
    wide_tiles: ClassVar[int] = 3      # self, gradOutput and the threshold in fp32
    narrow_tiles: ClassVar[int] = 1    # the threshold, broadcast to a tile
    mask: ClassVar[bool] = True

    @property
    def op_type(self) -> str:
        return "ReluGrad" if self.threshold == 0 else "ThresholdGradV2D"

    def _thr(self, k):
        return k.work(2 if _wide(k.dtype) else 0, "float32" if _wide(k.dtype) else k.dtype)

    def _mask(self, k):
        slots = self.wide_tiles if _wide(k.dtype) else self.narrow_tiles
        return k.work(slots, "uint8")

    def setup(self, k) -> None:
        """The threshold, broadcast once into a tile for the compares (Duplicate)."""
        vec.duplicate(self._thr(k), float(self.threshold), k.tiling.tile_length)

    def __call__(self, k, out, ins, n):
        dy, x = ins
        mask = self._mask(k)
        if not _wide(k.dtype):
            vec.compare(mask, x, self._thr(k), "gt", n)
            vec.select(out, mask, dy, 0.0, n)
            return
        xf, dyf = k.work(0), k.work(1)
        vec.cast(xf, x, "none", n)
        vec.cast(dyf, dy, "none", n)
        vec.compare(mask, xf, self._thr(k), "gt", n)
        vec.select(dyf, mask, dyf, 0.0, n)
        vec.cast(out, dyf, "rint", n)


@dataclass(frozen=True)
class Add(_Compute):
    """out = self + other."""

    op_type: ClassVar[str] = "Add"
    inputs: ClassVar[int] = 2
    wide_tiles: ClassVar[int] = 2

    def __call__(self, k, out, ins, n):
        a, b = ins
        if not _wide(k.dtype):
            vec.add(out, a, b, n)
            return
        af, bf = k.work(0), k.work(1)
        vec.cast(af, a, "none", n)
        vec.cast(bf, b, "none", n)
        vec.add(af, af, bf, n)
        vec.cast(out, af, "rint", n)


@dataclass(frozen=True)
class Axpy(_Compute):
    """out = self + alpha * other (fp16 and fp32 only, as aclnnAdd takes Axpy)."""

    alpha: float
    op_type: ClassVar[str] = "Axpy"
    inputs: ClassVar[int] = 2
    narrow_tiles: ClassVar[int] = 1

    def __call__(self, k, out, ins, n):
        a, b = ins
        t = k.work(0, k.dtype)
        vec.muls(t, b, float(self.alpha), n)
        vec.add(out, a, t, n)


@dataclass(frozen=True)
class Muls(_Compute):
    """out = self * alpha (aclnnAdd's Mul of other by alpha where Axpy does not take the
    dtype: bf16)."""

    alpha: float
    op_type: ClassVar[str] = "Mul"
    inputs: ClassVar[int] = 1
    wide_tiles: ClassVar[int] = 1

    def __call__(self, k, out, ins, n):
        (x,) = ins
        if not _wide(k.dtype):
            vec.muls(out, x, float(self.alpha), n)
            return
        f = k.work(0)
        vec.cast(f, x, "none", n)
        vec.muls(f, f, float(self.alpha), n)
        vec.cast(out, f, "rint", n)


@dataclass(frozen=True)
class Fill(_Compute):
    """out = value (converted to out's dtype)."""

    value: float
    op_type: ClassVar[str] = "Fill"
    inputs: ClassVar[int] = 0

    def __call__(self, k, out, ins, n):
        vec.duplicate(out, float(self.value), n)


@dataclass(frozen=True)
class MulsBf16(Muls):
    """aclnnMuls' bf16 kernel (l0op::Muls): out = self * scalar through fp32."""

    op_type: ClassVar[str] = "Muls"
