"""TPipe, which carves the on-chip buffers into queues, and the Kernel base class."""

from typing import ClassVar

from npusim.dsl.context import current, issue
from npusim.dsl.core import ALIGN_KEYS, TBuf, TQue, _Slot
from npusim.errors import NpusimError, TilingError
from npusim.isa.base import Pipe
from npusim.isa.sync import BufferMark


class TPipe:
    """Ascend C TPipe: ``init_buffer`` carves buffers of this core's memories in order."""

    def __init__(self):
        self.ctx = current()
        self.next_free: dict[str, int] = {}
        self.allocations: list[tuple[str, str, int, int]] = []  # (buffer, name, offset, bytes)
        self.next_event: dict[tuple, int] = {}
        self.queues: list[TQue] = []

    def init_buffer(self, que, num: int = 1, length: int = 0) -> None:
        """Give ``que`` (a TQue) ``num`` buffers, or a TBuf ``length`` bytes (``num`` ignored)."""
        if isinstance(que, TBuf):
            length, num = (length or num), 1
        if num < 1 or length <= 0:
            raise TilingError(f"init_buffer({que.name!r}, num={num}, length={length}): "
                              "need num >= 1 and length > 0 bytes")
        buffer = self._buffer(que.buffer_name, que.name)
        length = self._aligned(que.buffer_name, length)
        offset = self.next_free.get(que.buffer_name, 0)
        if offset + num * length > buffer.size:
            self._overflow(buffer, que.name, num, length, offset)
        self.next_free[que.buffer_name] = offset + num * length
        self.allocations.append((que.buffer_name, que.name, offset, num * length))
        que._buffer = buffer
        if isinstance(que, TBuf):
            que.addr, que.length, que._tensors = offset, length, {}
            issue(BufferMark(pipe=Pipe.S, buffer=buffer, delta=length, label=que.name))
            return
        if que.position == "CO1" and que.consumer is None:
            que.consumer = Pipe.FIX if self.ctx.chip.has_fixpipe else Pipe.V
        que.length = length
        self._check_events(que, num)
        que.slots = [_Slot(offset + i * length, self._event(que.producer, que.consumer),
                           self._event(que.consumer, que.producer)) for i in range(num)]
        for slot in que.slots:
            slot.bind(que)
        self.queues.append(que)

    def destroy(self) -> None:
        """Wait for the frees still outstanding, as the end of an Ascend C kernel does."""
        for que in self.queues:
            que.drain()

    def used_bytes(self) -> dict[str, int]:
        return dict(self.next_free)

    def _buffer(self, name: str, what: str):
        try:
            return self.ctx.buffers[name]
        except KeyError:
            raise TilingError(f"{what}: core {self.ctx.label} has no {name} "
                              f"(it has {', '.join(self.ctx.buffers)})") from None

    def _aligned(self, name: str, length: int) -> int:
        key = ALIGN_KEYS.get(name)
        align = getattr(self.ctx.chip, key) if key else 32
        return -(-length // align) * align

    def _overflow(self, buffer, name, num, length, offset):
        have = [f"{n} {b} bytes at {o}" for buf, n, o, b in self.allocations if buf == buffer.name]
        raise TilingError(
            f"init_buffer({name!r}, {num} x {length} bytes) needs {num * length} bytes of "
            f"{buffer.name} but only {buffer.size - offset} of {buffer.size} are free on "
            f"{self.ctx.chip.name}; already allocated: {', '.join(have) or 'nothing'}")

    def _check_events(self, que, num: int) -> None:
        """Each buffer of a queue takes one event id of its pipe pair each way."""
        ids = self.ctx.chip.event_ids
        for src, dst in ((que.producer, que.consumer), (que.consumer, que.producer)):
            taken = self.next_event.get((src, dst), 0)
            if src is not None and dst is not None and taken + num > ids:
                raise TilingError(
                    f"queue {que.name!r}: out of event ids for {src}->{dst}: its {num} "
                    f"buffers take one each, {taken} are taken and {self.ctx.chip.name} has "
                    f"{ids} per pipe pair; lower the tiling field that sets this queue's "
                    f"buffer count (a buffer count or a step) to at most {ids - taken}")

    def _event(self, src, dst) -> int:
        if src is None or dst is None:
            return -1
        key = (src, dst)
        n = self.next_event.get(key, 0)
        self.next_event[key] = n + 1
        return n


class Kernel:
    """Base of every kernel: subclasses define ``init(**args)`` and ``process()``.

    ``core_type`` says where it runs on a separated chip: ``"aiv"`` (vector cores), ``"aic"``
    (cube cores) or ``"mix"`` (one AIC with its two AIVs per block). Coupled chips run every
    kernel on their coupled cores. ``reads_data`` kernels read on-chip values into the scalar
    (``get_value``), so they are recorded eagerly and cannot run with numerics off.
    """

    core_type: ClassVar[str] = "aiv"
    reads_data: ClassVar[bool] = False

    def __init__(self):
        self.pipe = TPipe()

    def init(self, **args) -> None:
        """Once per core, with launch's ``args``: bind this core's GM slice, carve buffers."""
        raise NpusimError(f"{type(self).__name__} defines no init()")

    def process(self) -> None:
        """The kernel's body, usually the tile loop: issues the core's instructions."""
        raise NpusimError(f"{type(self).__name__} defines no process()")
