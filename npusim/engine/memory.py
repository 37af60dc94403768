"""Memories and tensor views: GM as one flat byte space, on-chip buffers as byte arrays.

``GlobalMemory`` holds the operator's tensors at 512-byte aligned addresses in one ``uint8``
array (allocated with ``np.zeros``, so untouched pages cost no RAM). ``Buffer`` is one on-chip
memory of one core (UB, L1, L0A, L0B, L0C, BT, FB). ``GlobalTensor`` and ``LocalTensor`` are
typed windows on them; indexing gives a window starting further in, as ``xGm[offset]`` does in
Ascend C. Every window knows the end of the allocation it lives in, and an access past it is a
``MemoryAccessError``.

Modelled: addresses, sizes, alignment, bounds. Not modelled: UB bank conflicts, ECC, the
non-coherent scalar data cache.
"""

import mmap

import numpy as np

from npusim.chip import host_memory_bytes
from npusim.dtypes import dtype_of
from npusim.errors import MemoryAccessError, OutOfMemoryError

GM_ALIGN_BYTES = 512  # allocation alignment of GM tensors (ALIGN512 best practice)
_new = object.__new__


class Buffer:
    """One on-chip memory of one core, e.g. the UB of ``aiv3``."""

    __slots__ = ("name", "core", "size", "data")

    def __init__(self, name: str, core: str, size: int, data: np.ndarray | None = None):
        self.name, self.core, self.size = name, core, size
        self.data = np.zeros(size, np.uint8) if data is None else data

    def __repr__(self):
        return f"{self.core}.{self.name}"


class GlobalMemory:
    """GM: the tensors of one launch, at 512-byte aligned addresses of one byte array."""

    name = "GM"
    core = "chip"

    def __init__(self, hbm_bytes: int | None = None, chip_name: str = ""):
        self.allocations: list[tuple[str, int, int]] = []  # (name, addr, nbytes)
        self.hbm_bytes, self.chip_name = hbm_bytes, chip_name
        self.size = 0
        self.data = np.zeros(0, np.uint8)
        self._reserve = self.data     # what ``data`` is a view on (see materialize)
        self._pending: list = []  # (tensor, initial contents) copied in by load_inputs

    def alloc(self, name: str, nbytes: int) -> int:
        addr = self.size
        size = addr + -(-max(nbytes, 1) // GM_ALIGN_BYTES) * GM_ALIGN_BYTES
        self._check_fits(name, nbytes, size)
        self.allocations.append((name, addr, nbytes))
        self.size = size
        return addr

    def check_fits(self, chip) -> None:
        """OutOfMemoryError unless every tensor allocated so far fits ``chip``'s HBM."""
        self.hbm_bytes, self.chip_name = chip.hbm_bytes, chip.name
        self._check_fits("", 0, self.size)

    def _check_fits(self, name: str, nbytes: int, size: int) -> None:
        what = f" (with {name!r}, {nbytes:,} bytes)" if name else ""
        if self.hbm_bytes is not None and size > self.hbm_bytes:
            raise OutOfMemoryError(f"the operator's tensors and workspace need {size:,} bytes of "
                                   f"GM{what}; {self.chip_name or 'the chip'} has "
                                   f"{self.hbm_bytes:,} bytes of HBM")
        host = host_memory_bytes()
        if size > host // 2:
            raise OutOfMemoryError(f"the operator's tensors and workspace need {size:,} bytes"
                                   f"{what}; the simulator keeps GM in host memory and this "
                                   f"host has {host:,} bytes (at most half of it is used)")

    def materialize(self) -> None:
        """Create the byte array, or grow it (keeping its contents) for tensors added since.

        ``data`` is a view on one zeroed reservation as large as the HBM the host can hold
        (at most half the host's memory): untouched pages cost no RAM, so the workspaces the
        later kernels of an operator add extend the view instead of copying GM. Where the
        host refuses so large a reservation, it doubles when outgrown instead."""
        if len(self.data) >= self.size:
            return
        if len(self._reserve) < self.size:
            limit = host_memory_bytes() // 2
            if self.hbm_bytes is not None:
                limit = min(limit, self.hbm_bytes)
            grown = None
            if len(self._reserve) == 0:
                try:
                    grown = anonymous_zeros(max(self.size, limit), shared=True)
                except MemoryError:
                    grown = None
            if grown is None:
                grown = anonymous_zeros(max(self.size, min(2 * len(self._reserve), limit)),
                                        shared=True)
            grown[:len(self.data)] = self.data
            self._reserve = grown
        self.data = self._reserve[:self.size]

    @property
    def shared(self) -> bool:
        """Whether GM is shared memory (a forked process's writes reach it:
        npusim/engine/beside.py)."""
        return isinstance(getattr(self._reserve.base, "obj", None), mmap.mmap)

    def __getstate__(self):
        """Pickled (or deep-copied) without the reservation: just the bytes in use."""
        state = self.__dict__.copy()
        state["data"], state["_reserve"] = self.data.copy(), None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._reserve = self.data

    def tensor(self, name: str, dtype, count: int, init: np.ndarray | None = None):
        """Allocate ``count`` elements of ``dtype`` and return a GlobalTensor on them."""
        dt = dtype_of(dtype)
        addr = self.alloc(name, count * dt.itemsize)
        t = GlobalTensor(self, addr, dt, count, addr + count * dt.itemsize, name)
        if init is not None:
            self._pending.append((t, np.ascontiguousarray(init, dtype=dt).reshape(-1)))
        return t

    def load_inputs(self, pending: list | None = None) -> None:
        """Materialize GM and copy in the initial contents not yet copied (once per tensor:
        the kernels of one operator run one after another on the same GM); ``pending``: those
        of an earlier ``take_pending`` instead."""
        self.materialize()
        todo = self._pending if pending is None else pending
        for t, arr in todo:
            _copy_in(t, arr)
        if pending is None:
            self._pending.clear()

    def take_pending(self) -> list:
        """The initial contents not yet copied in, which another process copies (a forked
        process sharing this GM: npusim/engine/beside.py); this one forgets them."""
        pending, self._pending = self._pending, []
        return pending

    def load_tensor(self, tensor) -> None:
        """Copy in the initial contents of the allocation ``tensor`` lies in, if still pending
        (a value read while the kernel is recorded: ``gm_get_value``)."""
        for i, (t, arr) in enumerate(self._pending):
            if t.addr <= tensor.addr < t.limit:
                self.materialize()
                _copy_in(t, arr)
                del self._pending[i]
                return

    def read_back(self, tensor, shape, *, copy: bool = True) -> np.ndarray:
        """``tensor``'s first elements as an array of ``shape``: a copy, or (``copy=False``,
        for a run that computed nothing: ``numerics=False``, whose GM no instruction writes) a
        read-only view, so that outputs nobody reads cost no memory."""
        count = 1
        for d in shape:
            count *= int(d)
        self.load_inputs()
        view = tensor.array(count).reshape(shape)
        if copy:
            return view.copy()
        view = view.view()
        view.flags.writeable = False
        return view


def _copy_in(tensor, arr: np.ndarray) -> None:
    """Copy an initial content into GM, unless it is all zeros: GM starts zeroed and no
    address is allocated twice, so the bytes are zeros already (and untouched pages cost no
    memory: the timing-only inputs of ``npusim/cases/common.py:zero_inputs`` are zeros)."""
    if arr.size and (arr[:4096].any() or arr.any()):
        tensor.array(len(arr))[:] = arr


def anonymous_zeros(nbytes: int, shared: bool) -> np.ndarray:
    """A zeroed byte array in anonymous memory, ``shared`` with forked processes (GM:
    npusim/engine/beside.py) or private; ``np.zeros`` where the host has no such mapping. Untouched
    pages cost no RAM, and none is a huge page (numpy asks for them on arrays of 4 MB and
    more, and a 2 MB page is held whole once any byte of it is written). MemoryError when the
    host refuses the mapping."""
    mapping = anonymous_mapping(nbytes, shared)
    return np.zeros(nbytes, np.uint8) if mapping is None else np.frombuffer(mapping, np.uint8)


def anonymous_mapping(nbytes: int, shared: bool):
    """The ``mmap`` under ``anonymous_zeros`` (its slices are ``bytes``), or None where the
    host has no such mapping."""
    share = getattr(mmap, "MAP_SHARED" if shared else "MAP_PRIVATE", None)
    anonymous = getattr(mmap, "MAP_ANONYMOUS", None)
    if share is None or anonymous is None or nbytes == 0:
        return None
    try:
        return mmap.mmap(-1, nbytes, flags=share | anonymous)
    except (OSError, ValueError, OverflowError) as exc:
        raise MemoryError(f"cannot reserve {nbytes:,} bytes") from exc


class _Window:
    """Shared behaviour of GlobalTensor and LocalTensor: a typed window on a byte store."""

    __slots__ = ("store", "addr", "dtype", "size", "limit", "label")

    def __init__(self, store, addr: int, dtype, size: int, limit: int, label: str = ""):
        self.store, self.addr, self.dtype = store, addr, np.dtype(dtype)
        self.size, self.limit, self.label = size, limit, label

    def __getitem__(self, offset: int):
        if type(offset) is not int:
            if isinstance(offset, slice):
                raise TypeError("index a tensor with an element offset, as xGm[offset] in "
                                "Ascend C")
            offset = int(offset)
        dtype = self.dtype
        addr = self.addr + offset * dtype.itemsize
        if offset < 0 or addr > self.limit:
            raise MemoryAccessError(
                f"offset {offset} is outside {self.describe()} "
                f"({(self.limit - self.addr) // dtype.itemsize} elements)")
        size = self.size - offset
        return self._derive(addr, dtype, size if size > 0 else 0)

    def reinterpret_cast(self, dtype):
        dt = dtype_of(dtype)
        return self._derive(self.addr, dt, self.size * self.dtype.itemsize // dt.itemsize)

    def _derive(self, addr: int, dtype: np.dtype, size: int):
        """A window of the same class, store, limit and label (no dtype conversion)."""
        new = _new(type(self))
        new.store, new.addr, new.dtype = self.store, addr, dtype
        new.size, new.limit, new.label = size, self.limit, self.label
        return new

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def check(self, nbytes: int, what: str = "access") -> None:
        """Raise MemoryAccessError unless [addr, addr + nbytes) lies inside the allocation."""
        if self.addr < 0 or self.addr + nbytes > self.limit:
            raise MemoryAccessError(
                f"{what} of {nbytes} bytes at {self.where()} runs past the end of "
                f"{self.describe()} by {self.addr + nbytes - self.limit} bytes")

    def array(self, count: int | None = None) -> np.ndarray:
        """The numpy view of ``count`` elements (all by default). No copy."""
        n = self.size if count is None else count
        return self.store.data[self.addr:self.addr + n * self.dtype.itemsize].view(self.dtype)

    def bytes_view(self, nbytes: int, offset: int = 0) -> np.ndarray:
        return self.store.data[self.addr + offset:self.addr + offset + nbytes]

    def __repr__(self):
        return f"{type(self).__name__}({self.where()}, {self.dtype.name}, {self.size})"


class GlobalTensor(_Window):
    """A typed window on GM. ``label`` is the tensor's name."""

    __slots__ = ()
    kind = "GM"

    def where(self) -> str:
        return f"GM 0x{self.addr:x}"

    def describe(self) -> str:
        return f"GM tensor {self.label!r}"


class LocalTensor(_Window):
    """A typed window on an on-chip buffer. ``label`` names the queue or TBuf it came from;
    ``kind`` is the buffer's name (UB, L1, ...)."""

    __slots__ = ("kind",)

    def __init__(self, store, addr: int, dtype, size: int, limit: int, label: str = ""):
        _Window.__init__(self, store, addr, dtype, size, limit, label)
        self.kind = store.name

    def _derive(self, addr: int, dtype: np.dtype, size: int):
        new = _new(type(self))
        new.store, new.addr, new.dtype, new.kind = self.store, addr, dtype, self.kind
        new.size, new.limit, new.label = size, self.limit, self.label
        return new

    @property
    def buffer(self) -> Buffer:
        return self.store

    def where(self) -> str:
        return f"{self.store!r} offset 0x{self.addr:x}"

    def describe(self) -> str:
        return f"{self.store!r} allocation {self.label!r}"

    def get_value(self, index: int):
        """Read one element directly (host-side helper for tests; kernels use the DSL)."""
        return self.array(index + 1)[index]
