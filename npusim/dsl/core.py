"""The Ascend C-style kernel DSL: TPipe, TQue, TBuf, Kernel, data moves and synchronisation.

Kernels read like the Ascend C samples: ``init()`` binds this core's GM slice and carves the
buffers with ``pipe.init_buffer(queue, buffer_num, bytes)``; ``process()`` is the tile loop;
``copy_in`` / ``compute`` / ``copy_out`` follow alloc -> op -> enque / deque -> op -> free.

Queues lower to the flags Ascend C emits: ``enque`` is ``set_flag(producer, consumer, id)``,
``deque`` the matching ``wait_flag``; ``free_tensor`` is ``set_flag(consumer, producer, id)`` and
the next ``alloc_tensor`` of that buffer waits on it; the pipe's ``destroy()`` at kernel end waits
for the frees still outstanding. Each buffer of a queue owns an event id per direction, drawn from
the chip's ``event_ids`` per pipe pair; running out is a ``TilingError``.

Not modelled: TQueBind between arbitrary positions beyond the producer/consumer table below,
the tensor-position checks Ascend C makes at compile time.
"""

from dataclasses import dataclass
from enum import StrEnum

from npusim.dsl.context import current, issue, issue_again, issue_on
from npusim.dtypes import dtype_of
from npusim.engine.memory import LocalTensor
from npusim.errors import NpusimError, TilingError
from npusim.isa.base import Pipe
from npusim.isa.move import DataCopy, LocalCopy
from npusim.isa.scalar import GetValue, ScalarOps, SetValue
from npusim.isa.sync import (
    BufferMark,
    CrossCoreSetFlag,
    CrossCoreWaitFlag,
    PipeBarrier,
    SetFlag,
    SyncAll,
    WaitFlag,
    check_inter_core_sync,
)


class TPosition:
    """Logical positions (Ascend C TPosition) and what they map to."""

    VECIN, VECOUT, VECCALC = "VECIN", "VECOUT", "VECCALC"
    A1, B1, C1, A2, B2, CO1, CO2, C2 = "A1", "B1", "C1", "A2", "B2", "CO1", "CO2", "C2"


# position -> (buffer, producer pipe, consumer pipe); CO1's consumer depends on the chip.
POSITIONS = {
    "VECIN": ("UB", Pipe.MTE2, Pipe.V), "VECOUT": ("UB", Pipe.V, Pipe.MTE3),
    "VECCALC": ("UB", None, None), "A1": ("L1", Pipe.MTE2, Pipe.MTE1),
    "B1": ("L1", Pipe.MTE2, Pipe.MTE1), "C1": ("L1", Pipe.MTE2, Pipe.MTE1),
    "A2": ("L0A", Pipe.MTE1, Pipe.M), "B2": ("L0B", Pipe.MTE1, Pipe.M),
    "CO1": ("L0C", Pipe.M, None), "CO2": ("UB", Pipe.V, Pipe.MTE3), "C2": ("BT", Pipe.MTE1, Pipe.M),
}
ALIGN_KEYS = {"UB": "ub_align_bytes", "L1": "l1_align_bytes", "L0A": "l0ab_align_bytes",
              "L0B": "l0ab_align_bytes", "L0C": "l0c_align_bytes"}


class HardEvent(StrEnum):
    """Ascend C HardEvent names: ``set_flag(HardEvent.MTE2_V, 0)``.

    An enum whose members are their names as strings (``HardEvent.MTE2_V == "MTE2_V"``, and it
    prints as ``MTE2_V``): ``set_flag`` and ``wait_flag`` take either, so kernels that pass the
    plain string keep working."""

    MTE2_V, V_MTE2, V_MTE3, MTE3_V, MTE3_MTE2, MTE2_MTE3 = (
        "MTE2_V", "V_MTE2", "V_MTE3", "MTE3_V", "MTE3_MTE2", "MTE2_MTE3")
    MTE1_M, M_MTE1, MTE2_MTE1, MTE1_MTE2, M_FIX, FIX_M = (
        "MTE1_M", "M_MTE1", "MTE2_MTE1", "MTE1_MTE2", "M_FIX", "FIX_M")
    M_V, V_M, V_S, S_V, MTE2_S, S_MTE2, MTE3_S, S_MTE3, FIX_MTE2 = (
        "M_V", "V_M", "V_S", "S_V", "MTE2_S", "S_MTE2", "MTE3_S", "S_MTE3", "FIX_MTE2")


def _pipes_of(event: str) -> tuple[str, str]:
    src, _, dst = event.partition("_")
    known = {Pipe.S, Pipe.V, Pipe.M, Pipe.MTE1, Pipe.MTE2, Pipe.MTE3, Pipe.FIX}
    if src not in known or dst not in known:
        raise NpusimError(f"unknown hard event {event!r}; write SRC_DST with pipes from "
                          f"{sorted(known)}, e.g. 'MTE2_V'")
    return src, dst


def set_flag(event: str, event_id: int = 0) -> None:
    """Queue ``set_flag`` on the event's source pipe (``HardEvent.MTE2_V``: MTE2): when
    that pipe reaches it, everything it was given before is done and the flag is up."""
    src, dst = _pipes_of(event)
    issue(SetFlag(src=src, dst=dst, event_id=event_id))


def wait_flag(event: str, event_id: int = 0) -> None:
    """Queue ``wait_flag`` on the event's destination pipe (``HardEvent.MTE2_V``: V):
    it holds that pipe until the matching ``set_flag`` has run."""
    src, dst = _pipes_of(event)
    issue(WaitFlag(src=src, dst=dst, event_id=event_id))


def pipe_barrier(pipe: str) -> None:
    """PipeBarrier: hold ``pipe`` until every instruction issued to it before is done."""
    issue(PipeBarrier(target=pipe))


def cross_core_set_flag(flag_id: int, pipe: str = Pipe.S, mode: int = 2) -> None:
    """CrossCoreSetFlag: raise flag ``flag_id`` for the other side of a mix block
    (AIC <-> AIV), once ``pipe``'s earlier work is done."""
    _check_cross_core(flag_id, "cross_core_set_flag")
    issue(CrossCoreSetFlag(pipe=pipe, flag_id=flag_id, mode=mode))


def cross_core_wait_flag(flag_id: int, pipe: str = Pipe.S) -> None:
    """CrossCoreWaitFlag: hold ``pipe`` until the other side raised ``flag_id``."""
    _check_cross_core(flag_id, "cross_core_wait_flag")
    issue(CrossCoreWaitFlag(pipe=pipe, flag_id=flag_id))


def _check_cross_core(flag_id: int, what: str) -> None:
    chip = current().chip
    check_inter_core_sync(chip, what)
    if not 0 <= flag_id < chip.cross_core_flag_ids:
        raise NpusimError(f"cross-core flag id {flag_id} not available on {chip.name!r}: "
                          f"ids 0..{chip.cross_core_flag_ids - 1}")


def sync_all() -> None:
    """SyncAll: every core of the launch waits here until all have arrived."""
    issue(SyncAll())


def scalar_ops(count: int) -> None:
    """Charge ``count`` scalar ALU operations (address arithmetic, loop control)."""
    issue(ScalarOps(count=count))


def get_value(tensor: LocalTensor, index: int):
    """LocalTensor.GetValue: needs the kernel to declare ``reads_data = True``."""
    ctx = current()
    if not ctx.eager:
        raise NpusimError("get_value reads on-chip data into the scalar: declare "
                          "reads_data = True on the kernel class")
    return ctx.issue(GetValue(src=tensor, index=index))


def set_value(tensor: LocalTensor, index: int, value) -> None:
    """LocalTensor.SetValue: the scalar writes ``value`` at ``index`` of an on-chip tensor."""
    issue(SetValue(dst=tensor, index=index, value=value))


def get_block_idx() -> int:
    """This core's block number, 0 .. get_block_num() - 1 (GetBlockIdx)."""
    return current().block_idx


def get_block_num() -> int:
    """How many blocks the launch runs (``block_dim``; twice it for AIVs of a mix)."""
    return current().block_num


def get_sub_block_idx() -> int:
    """In a mix kernel, which of its block's two AIVs this is (0 or 1)."""
    return current().sub_block_idx


def is_aic() -> bool:
    """True on a cube core (AIC) or a coupled core."""
    return current().kind in ("aic", "core")


def is_aiv() -> bool:
    """True on a vector core (AIV) or a coupled core."""
    return current().kind in ("aiv", "core")


def set_atomic_add() -> None:
    """SetAtomicAdd: following UB->GM copies add into GM instead of overwriting."""
    current().atomic = True


def set_atomic_none() -> None:
    """SetAtomicNone: following copies to GM overwrite again."""
    current().atomic = False


@dataclass(frozen=True, kw_only=True)
class DataCopyParams:
    """Ascend C DataCopyParams: lengths and gaps in 32-byte blocks."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@dataclass(frozen=True, kw_only=True)
class DataCopyExtParams:
    """Ascend C DataCopyExtParams (DataCopyPad): block_len in bytes; the GM-side gap in bytes,
    the UB-side gap in 32-byte blocks."""

    block_count: int = 1
    block_len: int = 0
    src_stride: int = 0
    dst_stride: int = 0


@dataclass(frozen=True, kw_only=True)
class DataCopyPadExtParams:
    """Ascend C DataCopyPadExtParams: fill the UB block tail up to 32 bytes with a value."""

    is_pad: bool = False
    right_padding: int = 0
    padding_value: float = 0


def data_copy(dst, src, count_or_params) -> None:
    """DataCopy between GM and UB/L1 or between UB/L1 buffers; lengths 32-byte aligned."""
    ctx = current()
    block = ctx.chip.block_bytes
    if isinstance(count_or_params, DataCopyParams):
        p = count_or_params
        n, length = p.block_count, p.block_len * block
        s_stride = (p.block_len + p.src_stride) * block
        d_stride = (p.block_len + p.dst_stride) * block
    else:
        count = int(count_or_params)
        n, length = 1, count * src.dtype.itemsize
        s_stride = d_stride = length
        if length % block:
            raise NpusimError(
                f"data_copy of {count} {src.dtype} elements is {length} bytes, not a multiple of "
                f"{block}: DataCopy moves whole 32-byte blocks; use data_copy_pad for the tail")
    if src.kind == "GM" or dst.kind == "GM":
        issue_on(ctx, DataCopy(dst=dst, src=src, block_count=n, block_len=length,
                               src_stride=s_stride, dst_stride=d_stride,
                               atomic=dst.kind == "GM" and ctx.atomic))
    else:
        issue_on(ctx, LocalCopy(dst=dst, src=src, block_count=n, block_len=length,
                                src_stride=s_stride, dst_stride=d_stride))


def data_copy_pad(dst, src, params: DataCopyExtParams, pad: DataCopyPadExtParams | None = None):
    """DataCopyPad: byte-exact GM side; the UB side of each block is padded to 32 bytes."""
    block = current().chip.block_bytes
    ub_block = -(-params.block_len // block) * block
    if src.kind == "GM" and dst.kind != "GM":
        s_stride = params.block_len + params.src_stride
        d_stride = ub_block + params.dst_stride * block
    elif dst.kind == "GM" and src.kind != "GM":
        s_stride = ub_block + params.src_stride * block
        d_stride = params.block_len + params.dst_stride
    else:
        raise NpusimError("data_copy_pad moves between GM and UB/L1: one side must be GM")
    pad_value = pad.padding_value if pad is not None and pad.is_pad else None
    issue(DataCopy(dst=dst, src=src, block_count=params.block_count, block_len=params.block_len,
                   src_stride=s_stride, dst_stride=d_stride, pad_value=pad_value,
                   atomic=dst.kind == "GM" and current().atomic))


class _Slot:
    """One buffer of a queue: its address, event ids, state and the records it issues.

    Its memory marks follow the buffer's hand-offs, so that a free is never traced before the
    alloc it ends: the alloc mark rides on the producer pipe; the free mark rides on the
    consumer pipe when the tensor was dequeued since its alloc (the deque's wait_flag orders
    it after the producer's enque, itself after the alloc mark), and on the producer pipe
    when it was not (a buffer used and freed by its producer alone, e.g. the convolution's
    L0C -> UB -> vector Cast on coupled cores, which no flag orders against the consumer)."""

    __slots__ = ("addr", "fwd_id", "back_id", "freed", "busy", "handed", "tensors",
                 "enque_set", "deque_wait", "free_set", "alloc_wait", "alloc_mark", "free_mark",
                 "own_free_mark")

    def __init__(self, addr, fwd_id, back_id):
        self.addr, self.fwd_id, self.back_id = addr, fwd_id, back_id
        self.freed = False   # a free set_flag is outstanding: the next alloc must wait on it
        self.busy = False
        self.handed = False  # dequeued since its alloc: the consumer pipe holds it now
        self.tensors: dict = {}   # dtype spec -> the LocalTensor alloc_tensor returns

    def bind(self, que) -> None:
        """Build once the (immutable) flag and mark records this buffer's queue issues. The
        marks name the queue, and the buffer (``inQueueX[1]``) where the queue has several."""
        prod, cons = que.producer, que.consumer
        label = que.name
        if len(que.slots) > 1:
            label = f"{que.name}[{que.slots.index(self)}]"
        self.enque_set = SetFlag(src=prod, dst=cons, event_id=self.fwd_id)
        self.deque_wait = WaitFlag(src=prod, dst=cons, event_id=self.fwd_id)
        self.free_set = SetFlag(src=cons, dst=prod, event_id=self.back_id)
        self.alloc_wait = WaitFlag(src=cons, dst=prod, event_id=self.back_id)
        self.alloc_mark = BufferMark(pipe=prod or Pipe.S, buffer=que._buffer, delta=que.length,
                                     label=label)
        self.free_mark = BufferMark(pipe=cons or Pipe.S, buffer=que._buffer, delta=-que.length,
                                    label=label)
        self.own_free_mark = BufferMark(pipe=prod or Pipe.S, buffer=que._buffer,
                                        delta=-que.length, label=label)


class TQue:
    """A queue of ``buffer_num`` equal buffers at a position (Ascend C TQue<pos, depth>).

    Each buffer's flag and mark records are built once (``_Slot.bind``) and issued again at
    every alloc/enque/deque/free: they are immutable, so one object serves every issue."""

    def __init__(self, position: str, depth: int = 1, *, producer: str | None = None,
                 consumer: str | None = None, name: str = ""):
        if position not in POSITIONS:
            raise NpusimError(f"unknown position {position!r}; known: {', '.join(POSITIONS)}")
        self.position, self.depth, self.name = position, depth, name or position
        self.buffer_name, prod, cons = POSITIONS[position]
        self.producer, self.consumer = producer or prod, consumer or cons
        self.slots: list[_Slot] = []
        self.length = 0
        self.next_slot = 0
        self.fifo: list = []
        self._buffer = None  # set by TPipe.init_buffer

    def alloc_tensor(self, dtype="float16") -> LocalTensor:
        """Take the queue's next buffer as a tensor of ``dtype`` (the producer side); its
        producer pipe first waits until the buffer's last ``free_tensor``."""
        if not self.slots:
            raise NpusimError(f"alloc_tensor on queue {self.name!r} before pipe.init_buffer")
        slot = self.slots[self.next_slot]
        if slot.busy:
            raise TilingError(f"queue {self.name!r}: all {len(self.slots)} buffers are in use; "
                              "free_tensor one first or give the queue more buffers")
        self.next_slot = (self.next_slot + 1) % len(self.slots)
        ctx = current()
        if slot.freed:
            issue_again(ctx, slot.alloc_wait)
            slot.freed = False
        else:                  # a buffer not used before: the queue is still filling
            ctx.fresh_allocs += 1
        slot.busy, slot.handed = True, False
        issue_again(ctx, slot.alloc_mark)
        return _typed(slot.tensors, dtype, self._buffer, slot.addr, self.length, self.name)

    def enque(self, tensor: LocalTensor) -> None:
        """Hand ``tensor`` to the consumer pipe: a set_flag on the producer pipe."""
        issue_again(current(), self._slot_of(tensor).enque_set)
        self.fifo.append(tensor)

    def deque(self) -> LocalTensor:
        """Take the oldest enqueued tensor (the consumer side): a wait_flag on the consumer pipe."""
        if not self.fifo:
            raise NpusimError(f"deque on queue {self.name!r} with nothing enqueued")
        tensor = self.fifo.pop(0)
        slot = self._slot_of(tensor)
        issue_again(current(), slot.deque_wait)
        slot.handed = True
        return tensor

    def free_tensor(self, tensor: LocalTensor) -> None:
        """Give the buffer back: a set_flag from the consumer that its next alloc waits on."""
        slot = self._slot_of(tensor)
        ctx = current()
        issue_again(ctx, slot.free_set)
        issue_again(ctx, slot.free_mark if slot.handed else slot.own_free_mark)
        slot.freed, slot.busy = True, False

    def _slot_of(self, tensor) -> _Slot:
        addr = tensor.addr
        for slot in self.slots:
            if slot.addr == addr and tensor.store is self._buffer:
                return slot
        raise NpusimError(f"tensor at {tensor.where()} does not belong to queue {self.name!r}")

    def drain(self) -> None:
        """Wait for every free still outstanding (the pipe's ``destroy()`` at kernel end)."""
        for slot in self.slots:
            if slot.freed:
                issue_again(current(), slot.alloc_wait)
                slot.freed = False


class TBuf:
    """A scratch buffer at a position, no synchronisation (Ascend C TBuf<VECCALC>)."""

    def __init__(self, position: str = "VECCALC", name: str = ""):
        if position not in POSITIONS:
            raise NpusimError(f"unknown position {position!r}; known: {', '.join(POSITIONS)}")
        self.position, self.name = position, name or position
        self.buffer_name = POSITIONS[position][0]
        self.addr = None
        self.length = 0
        self._buffer = None  # set by TPipe.init_buffer
        self._tensors: dict = {}   # dtype spec -> the LocalTensor get returns

    def get(self, dtype="float16") -> LocalTensor:
        """The buffer as a LocalTensor of ``dtype`` (no synchronisation: order users by flags)."""
        if self.addr is None:
            raise NpusimError(f"TBuf {self.name!r} used before pipe.init_buffer")
        return _typed(self._tensors, dtype, self._buffer, self.addr, self.length, self.name)


def _typed(cache: dict, dtype, buffer, addr: int, length: int, name: str) -> LocalTensor:
    """The LocalTensor of ``length`` bytes at ``addr`` seen as ``dtype``, made once per dtype
    (windows are immutable, so every alloc or get of that buffer can hand out the same one)."""
    tensor = cache.get(dtype)
    if tensor is None:
        dt = dtype_of(dtype)
        tensor = cache[dtype] = LocalTensor(buffer, addr, dt, length // dt.itemsize,
                                            addr + length, name)
    return tensor
