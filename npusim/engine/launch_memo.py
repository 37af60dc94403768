"""Identical timing-only launches in one study are simulated once (issue 39).

A prediction runs many operators whose kernels repeat: the TransData of one activation shape
serves several calls, and a call's graph form (``npusim/cases/five_hd.py``) runs the aclnn
form's cube kernels again on the same NC1HWC0 tensors. A timing-only launch (``numerics=False``:
nothing is computed, GM is not written) is a function of what this module keys:

- the kernel class (module and qualified name; the code is that of the one study);
- the chip model's values, the core count, the kernel's name, op type and implementation;
- its arguments by value: scalars, dtypes, dataclasses field by field, numpy arrays by a
  sha256 of their bytes, and GM tensors by dtype, size, offset into their allocation and
  which of the launch's allocations they lie in (the allocation's address does not count:
  allocations are ``GM_ALIGN_BYTES`` aligned, a multiple of the L2 line and of the burst, and
  every launch starts with L2 cold, so the bandwidth model serves two allocations' lines alike);
- the run's options: fast or whole, sanitizer.

Within ``scope()``, a launch whose key was seen takes the first launch's cycles, statistics and
critical-path share instead of being simulated again. The trace does not change a launch's
times, so it is not in the key: a launch without one takes an entry kept with a critical path
(less ``peak_live_bytes``, which only a trace gives), and a launch that needs the path does not
take an entry kept without one (it runs, and keeps its own). The first launch's own values are
the result: nothing is approximated (``tests/test_launch_memo.py`` holds a study's records
equal with and without the scope). Launches with numerics, a full trace, jitter or an argument
of another kind (a kernel class defined in a function, an object the key does not know) always
run. The studies open the scope through the registry (``npusim.cases.run.same_launches``); its
pool workers share it through a private temporary directory, removed when the scope ends;
nothing is kept from one study to the next (``studies/cache.py`` does that for whole points).
"""

import dataclasses
import hashlib
import json
import os
import pickle
from contextlib import contextmanager
from enum import Enum

import numpy as np

from npusim.engine.memory import GM_ALIGN_BYTES, GlobalTensor

_STATE = {"depth": 0, "dir": None}
COUNTS = {"reused": 0}     # launches this process took from a scope (the tests read it)
_CHIP_PRINTS: dict = {}


class _Unkeyable(Exception):
    """An argument of a kind the key does not cover: the launch runs."""


@contextmanager
def scope(directory: str | None = None):
    """Launches inside share their results (a nested scope uses the outer one). ``directory``:
    a pool worker joins its parent's scope there."""
    if _STATE["depth"]:
        _STATE["depth"] += 1
        try:
            yield _STATE["dir"]
        finally:
            _STATE["depth"] -= 1
        return
    import shutil
    import tempfile

    own = directory is None
    path = tempfile.mkdtemp(prefix="npusim-launches-") if own else directory
    _STATE.update(depth=1, dir=path)
    try:
        yield path
    finally:
        _STATE.update(depth=0, dir=None)
        if own:
            shutil.rmtree(path, ignore_errors=True)


def join(directory: str | None) -> None:
    """A pool worker's start: its launches use the parent's scope in ``directory`` from now
    on (the worker ends with the pool, so the scope is never closed)."""
    if directory:
        _STATE.update(depth=1, dir=directory)


def active() -> bool:
    return bool(_STATE["depth"])


def launch_key(kernel_cls, chip, block_dim: int, args: dict, gm, labels: tuple,
               options: tuple) -> str | None:
    """The launch's key, or None when it must run (see the module docstring)."""
    qual = kernel_cls.__qualname__
    if not active() or "<locals>" in qual or GM_ALIGN_BYTES % chip.l2_line_bytes \
            or GM_ALIGN_BYTES % chip.gm_burst_bytes:
        return None
    bases = (gm, [a for _, a, _ in gm.allocations])
    try:
        body = (kernel_cls.__module__, qual, int(block_dim), labels, options,
                _canon(args, bases, {}))
    except _Unkeyable:
        return None
    digest = hashlib.sha256()
    for part in (_chip_print(chip), repr(body)):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()


def _canon(value, bases: tuple, allocs: dict):
    """``value`` as nested tuples of plain values (see the module docstring)."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return (type(value).__name__, value)
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.item())
    if isinstance(value, np.dtype):
        return ("dtype", value.str)
    if isinstance(value, GlobalTensor):
        return _canon_tensor(value, bases, allocs)
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return ("array", data.dtype.str, data.shape, hashlib.sha256(data.view(np.uint8))
                .hexdigest())
    if isinstance(value, type):
        if "<locals>" in value.__qualname__:
            raise _Unkeyable(value.__qualname__)
        return ("type", value.__module__, value.__qualname__)
    if isinstance(value, Enum):
        return ("enum", type(value).__qualname__, value.name)
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(_canon(v, bases, allocs) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((repr(k), _canon(v, bases, allocs))
                              for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__module__, type(value).__qualname__,
                tuple((f.name, _canon(getattr(value, f.name), bases, allocs))
                      for f in dataclasses.fields(value)))
    raise _Unkeyable(type(value).__qualname__)


def _canon_tensor(t, bases: tuple, allocs: dict) -> tuple:
    """A GM tensor: which of the launch's allocations (numbered as met), offset, dtype, size.
    ``bases``: (the launch's GM, its allocations' addresses)."""
    from bisect import bisect_right

    gm, addrs = bases
    i = bisect_right(addrs, t.addr) - 1
    if i < 0 or t.store is not gm:
        raise _Unkeyable("a tensor outside the launch's GM allocations")
    base = addrs[i]
    n = allocs.setdefault(base, len(allocs))
    return ("gm", n, t.addr - base, t.dtype.str, t.size, t.limit - t.addr)


def _chip_print(chip) -> str:
    """The chip model's values as text (rate tables by their rows)."""
    key = id(chip)
    if key not in _CHIP_PRINTS:
        _CHIP_PRINTS[key] = (chip, json.dumps(chip.values, sort_keys=True, default=_plain))
    return _CHIP_PRINTS[key][1]


def _plain(value):
    rows = getattr(value, "sizes", None), getattr(value, "rates", None)
    return rows if rows[0] is not None else repr(value)


def lookup(key: str | None):
    """The entry kept under ``key`` in this scope, or None. Entries live in the scope's
    directory only (a critical path at batch 256 pickles to megabytes: no process holds
    them)."""
    if key is None or not active():
        return None
    try:
        with open(os.path.join(_STATE["dir"], f"{key}.pkl"), "rb") as f:
            entry = pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None
    COUNTS["reused"] += 1
    return entry


def keep(key: str | None, entry) -> None:
    """Keep ``entry`` (a picklable value) under ``key`` for the scope's later launches, its
    other processes' too (written whole, then renamed)."""
    if key is None or not active():
        return
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(dir=_STATE["dir"], prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(entry, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, os.path.join(_STATE["dir"], f"{key}.pkl"))
    except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
        pass        # no memo, never a failed run (the scope's end removes what is left)
