"""Data moves between GM and the on-chip buffers, and between on-chip buffers.

GM moves (``GmMove`` subclasses) are described as ``block_count`` blocks of ``block_len`` bytes,
``stride`` bytes apart on the GM side. Their cost on their own pipe is the GM latency (head,
charged only when the pipe was idle) plus the bytes charged over the core's rate for the path
at that transfer size (``Chip.rate``: the measured table of the path where the chip model has
one, msKPP's single-core rate against the bytes one instruction moves, else its number).
Bytes are charged in whole bursts: each block is rounded out to ``gm_burst_bytes`` boundaries,
so small and unaligned moves cost what they cost on the chip (HWC-2201). The engine adds the
shared HBM/L2 bandwidth on top (see ``npusim/engine/bandwidth.py``).

Modelled: DataCopy (contiguous and with DataCopyParams strides), DataCopyPad (byte-exact lengths
with 32-byte padding on the local side), atomic-add writes to GM, UB->UB, L1->UB and UB->L1.
Not modelled: the 70 % bandwidth of 32-byte aligned GM addresses, same-address serialisation.
"""

from dataclasses import dataclass, field
from math import gcd
from typing import ClassVar

import numpy as np
from numpy.lib.stride_tricks import as_strided

from npusim.errors import NpusimError
from npusim.isa.base import Instr, Pipe


def blocks_view(store, addr: int, count: int, length: int, stride: int) -> np.ndarray:
    """A (count, length) uint8 view of ``count`` blocks ``stride`` bytes apart. No copy."""
    data = store.data
    if count == 1 or stride == length:
        return data[addr:addr + count * length].reshape(count, length)
    return as_strided(data[addr:], shape=(count, length), strides=(stride, 1))


def block_span(addr: int, count: int, length: int, stride: int) -> int:
    """Bytes from ``addr`` to the end of the last block."""
    return (count - 1) * stride + length if count else 0


_PERIOD_LOOP = 16   # up to this many offsets a Python loop beats numpy's set-up


def burst_bytes(addr: int, count: int, length: int, stride: int, burst: int) -> int:
    """Bytes charged when each block is rounded out to whole bursts."""
    if count == 1 or stride == length and (addr % burst == 0 or count == 1):
        return (-(-(addr + count * length) // burst) - addr // burst) * burst
    if stride % burst == 0:      # every block starts at the same offset in its burst
        return count * -(-(addr % burst + length) // burst) * burst
    # A block's bursts depend only on its start's offset in a burst, and those offsets repeat
    # every ``period`` blocks: sum one period (and the rest) rather than every block.
    period = burst // gcd(stride, burst)
    if period <= _PERIOD_LOOP:
        whole, rest = divmod(count, period)
        per, part = 0, 0
        for i in range(min(count, period)):
            s = addr + i * stride
            bursts = -(-(s + length) // burst) - s // burst
            per += bursts
            part += bursts if i < rest else 0
        return (whole * per + part) * burst
    starts = addr + stride * np.arange(count, dtype=np.int64)
    return int(((-(-(starts + length) // burst)) - starts // burst).sum()) * burst


# (id(chip), rate key, GM address within its burst, count, length, stride) -> (chip, charged
# bytes, body cycles) of a DataCopy: a kernel issues the same geometry at many addresses
_MOVE_COSTS: dict = {}

RATE_KEYS = {  # (src kind, dst kind) -> (pipe, rate key of the chip model)
    ("GM", "UB"): (Pipe.MTE2, "gm_to_ub_bytes_per_cycle"),
    ("GM", "L1"): (Pipe.MTE2, "gm_to_l1_bytes_per_cycle"),
    ("UB", "GM"): (Pipe.MTE3, "ub_to_gm_bytes_per_cycle"),
    ("UB", "UB"): (Pipe.V, "ub_to_ub_bytes_per_cycle"),
    ("UB", "L1"): (Pipe.MTE3, "ub_to_l1_bytes_per_cycle"),
    ("L1", "UB"): (Pipe.MTE1, "l1_to_ub_bytes_per_cycle"),
}


def route(src_kind: str, dst_kind: str) -> tuple[str, str]:
    try:
        return RATE_KEYS[(src_kind, dst_kind)]
    except KeyError:
        raise NpusimError(f"no data path {src_kind}->{dst_kind}; paths: "
                          f"{', '.join(f'{a}->{b}' for a, b in RATE_KEYS)}") from None


def _set_route(inst) -> None:
    """Fill a frozen move's ``pipe`` and ``rate_key`` from its path."""
    pipe, rate_key = route(inst.src.kind, inst.dst.kind)
    object.__setattr__(inst, "pipe", pipe)
    object.__setattr__(inst, "rate_key", rate_key)


def check_path(chip, rate_key: str, what: str) -> None:
    if chip.rate(rate_key, 1) <= 0:
        raise NpusimError(f"{what}: chip {chip.name!r} has no such path ({rate_key} = 0)")


@dataclass(frozen=True, kw_only=True, slots=True)
class GmMove(Instr):
    """Base of every move with one side in GM. Subclasses give the GM-side block geometry."""

    touches_gm: ClassVar[bool] = True

    def gm_geometry(self) -> tuple[int, int, int, int]:
        """(addr, block_count, block_len, stride) of the GM side, in bytes."""
        raise NotImplementedError

    @property
    def gm_write(self) -> bool:
        raise NotImplementedError

    @property
    def rate_key(self) -> str:
        raise NotImplementedError

    def gm_blocks(self) -> list[tuple[int, int, int, int]]:
        """Every (addr, block_count, block_len, stride) group of the GM side, in bytes."""
        return [self.gm_geometry()]

    def gm_span(self) -> tuple[int, int]:
        addr, count, length, stride = self.gm_geometry()
        return addr, addr + block_span(addr, count, length, stride)

    def charged_bytes(self, chip) -> int:
        return burst_bytes(*self.gm_geometry(), chip.gm_burst_bytes)

    def head(self, chip) -> float:
        return chip.gm_latency_cycles

    def body(self, chip) -> float:
        nbytes = self.charged_bytes(chip)
        return nbytes / chip.rate(self.rate_key, nbytes)

    def validate(self, chip) -> None:
        check_path(chip, self.rate_key, self.name)


@dataclass(frozen=True, kw_only=True, slots=True)
class DataCopy(GmMove):
    """DataCopy / DataCopyPad between GM and UB or L1 (either direction).

    ``block_count`` blocks of ``block_len`` bytes; ``src_stride`` and ``dst_stride`` are the
    distances in bytes between block starts on each side. ``pad_value`` (GM->local only) fills the
    local side of each block up to ``dst_stride`` bytes, as DataCopyPad's isPad does. ``atomic``
    (local->GM only) adds into GM in the tensor's dtype instead of overwriting (SetAtomicAdd).
    """

    name: ClassVar[str] = "data_copy"
    dst: object
    src: object
    block_count: int = 1
    block_len: int
    src_stride: int
    dst_stride: int
    pad_value: float | None = None
    atomic: bool = False
    # set by __post_init__ (no default: the generated __init__ would set each twice)
    pipe: str = field(init=False)       # from the path
    rate_key: str = field(init=False)
    # computed once, as plain numbers (a kernel issues millions of these: the tuples the
    # accessors build live only while used): the bytes each side spans at construction; the
    # chip, charged bytes and body at validate (the issue), so the run does not recompute them
    src_span: int = field(init=False, repr=False, compare=False)
    dst_span: int = field(init=False, repr=False, compare=False)
    timed_chip: object = field(default=None, init=False, repr=False, compare=False)
    charged: int = field(default=0, init=False, repr=False, compare=False)
    body_cycles: float = field(default=0.0, init=False, repr=False, compare=False)

    def __post_init__(self):
        src, dst = self.src, self.dst
        src_kind, dst_kind = src.kind, dst.kind
        pipe, rate_key = RATE_KEYS.get((src_kind, dst_kind)) or route(src_kind, dst_kind)
        object.__setattr__(self, "pipe", pipe)
        object.__setattr__(self, "rate_key", rate_key)
        n, length = self.block_count, self.block_len
        if n < 0 or length < 0:
            raise NpusimError(f"data_copy: negative size (block_count={n}, block_len={length})")
        gm_write = dst_kind == "GM"
        if (src_kind == "GM") == gm_write:
            raise NpusimError("data_copy: exactly one side must be GM; use local_copy otherwise")
        src_span = (n - 1) * self.src_stride + length if n else 0      # block_span
        if src.addr < 0 or src.addr + src_span > src.limit:           # the message only then
            src.check(src_span, "data_copy read")
        dst_len = self.dst_stride if self.pad_value is not None else length
        dst_span = (n - 1) * self.dst_stride + dst_len if n else 0
        if dst.addr < 0 or dst.addr + dst_span > dst.limit:
            dst.check(dst_span, "data_copy write")
        object.__setattr__(self, "src_span", src_span)
        object.__setattr__(self, "dst_span", dst_span)

    @property
    def gm_write(self) -> bool:
        return self.dst.kind == "GM"

    def gm_geometry(self):
        if self.dst.kind == "GM":
            return self.dst.addr, self.block_count, self.block_len, self.dst_stride
        return self.src.addr, self.block_count, self.block_len, self.src_stride

    def validate(self, chip) -> None:
        addr, count, length, stride = self.gm_geometry()
        burst = chip.gm_burst_bytes
        key = (id(chip), self.rate_key, addr % burst, count, length, stride)
        hit = _MOVE_COSTS.get(key)     # the charge depends on the address only in its burst
        if hit is None or hit[0] is not chip:
            check_path(chip, self.rate_key, self.name)
            charged = burst_bytes(addr, count, length, stride, burst)
            hit = _MOVE_COSTS[key] = (chip, charged,
                                      charged / chip.rate(self.rate_key, charged))
        object.__setattr__(self, "timed_chip", chip)
        object.__setattr__(self, "charged", hit[1])
        object.__setattr__(self, "body_cycles", hit[2])

    def charged_bytes(self, chip) -> int:
        if self.timed_chip is chip:
            return self.charged
        return burst_bytes(*self.gm_geometry(), chip.gm_burst_bytes)

    def body(self, chip) -> float:
        if self.timed_chip is chip:
            return self.body_cycles
        nbytes = self.charged_bytes(chip)
        return nbytes / chip.rate(self.rate_key, nbytes)

    def execute(self) -> None:
        if not self.block_count or not self.block_len:
            return
        if self.block_count == 1 and not self.atomic and self.pad_value is None:
            n, src, dst = self.block_len, self.src, self.dst     # one contiguous block
            dst.store.data[dst.addr:dst.addr + n] = src.store.data[src.addr:src.addr + n]
            return
        s = blocks_view(self.src.store, self.src.addr, self.block_count, self.block_len,
                        self.src_stride)
        d = blocks_view(self.dst.store, self.dst.addr, self.block_count, self.block_len,
                        self.dst_stride)
        if self.atomic:
            dt = self.dst.dtype
            d.view(dt)[...] = d.view(dt) + s.view(dt)
        else:
            d[...] = s
        if self.pad_value is not None and self.dst_stride > self.block_len:
            pad = self.dst_stride - self.block_len
            full = blocks_view(self.dst.store, self.dst.addr + self.block_len, self.block_count,
                               pad, self.dst_stride)
            fill = np.full(pad // self.dst.dtype.itemsize, self.pad_value, self.dst.dtype)
            full[...] = fill.view(np.uint8)

    def reads(self) -> tuple:
        src = self.src
        return ((src.store, src.addr, src.addr + self.src_span),)

    def writes(self) -> tuple:
        dst = self.dst
        return ((dst.store, dst.addr, dst.addr + self.dst_span),)

    def moved_bytes(self) -> int:
        return self.block_count * self.block_len

    def path(self) -> str:
        return f"{self.src.kind}->{self.dst.kind}" + (" (atomic add)" if self.atomic else "")

    def operands(self) -> dict:
        return {"dst": repr(self.dst), "src": repr(self.src), "blocks": self.block_count,
                "block_len": self.block_len, "atomic": self.atomic}


@dataclass(frozen=True, kw_only=True, slots=True)
class LocalCopy(Instr):
    """DataCopy between on-chip buffers: UB->UB (V pipe), L1->UB (MTE1), UB->L1 (MTE3).

    Same block geometry as DataCopy; lengths and strides in bytes, 32-byte aligned.
    """

    name: ClassVar[str] = "local_copy"
    dst: object
    src: object
    block_count: int = 1
    block_len: int
    src_stride: int
    dst_stride: int
    pipe: str = field(init=False, default="")       # from the path, set once
    rate_key: str = field(init=False, default="")

    def __post_init__(self):
        _set_route(self)
        self.src.check(block_span(0, self.block_count, self.block_len, self.src_stride),
                       "local_copy read")
        self.dst.check(block_span(0, self.block_count, self.block_len, self.dst_stride),
                       "local_copy write")

    def validate(self, chip) -> None:
        check_path(chip, self.rate_key, self.name)

    def head(self, chip) -> float:
        return chip.local_move_startup_cycles

    def body(self, chip) -> float:
        nbytes = self.block_count * self.block_len
        return nbytes / chip.rate(self.rate_key, nbytes)

    def execute(self) -> None:
        if self.block_count and self.block_len:
            s = blocks_view(self.src.store, self.src.addr, self.block_count, self.block_len,
                            self.src_stride)
            d = blocks_view(self.dst.store, self.dst.addr, self.block_count, self.block_len,
                            self.dst_stride)
            d[...] = s

    def reads(self) -> tuple:
        return ((self.src.store, self.src.addr,
                 self.src.addr + block_span(0, self.block_count, self.block_len, self.src_stride)),)

    def writes(self) -> tuple:
        return ((self.dst.store, self.dst.addr,
                 self.dst.addr + block_span(0, self.block_count, self.block_len, self.dst_stride)),)

    def moved_bytes(self) -> int:
        return self.block_count * self.block_len

    def path(self) -> str:
        return f"{self.src.kind}->{self.dst.kind}"
