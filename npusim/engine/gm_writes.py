"""Two cores writing the same GM bytes without atomics: the sanitizer's GM finding.

On the chip, cores that write the same GM bytes with plain copies race: the last write wins,
and which one is last follows timing (lesson 4's kernel without ``get_block_idx``: every core
writes the whole output). The race detector (``npusim/engine/sanitizer.py``) checks on-chip
buffers only, one core of each on-chip program; this check looks at every core's GM writes,
from the recorded streams, before the run:

- a write is a move to GM (``data_copy``, ``data_copy_pad``, ``fixpipe``: each block of its
  GM-side geometry, the bytes it writes) or a scalar store to GM, not an atomic add
  (``set_atomic_add``: adds into the same bytes are how cores combine results);
- two writes conflict when they come from cores of different groups of peers (an AIC and its
  AIVs order each other with cross-core flags, which this check does not follow) in the same
  phase: between the same two ``sync_all`` calls of the launch (``sync_all`` orders everything
  before it against everything after it);
- the finding names the cores that write the first such range, and the range (tensor and
  bytes): ``GmWriteConflictError`` (a ``HazardError``).

Not checked here: a GM read racing with another core's write (the numerics beside the run,
``npusim/engine/beside.py``, look at those to decide where numerics may run).
"""

import numpy as np

from npusim.engine.memory import GlobalMemory
from npusim.errors import GmWriteConflictError


def check(specs: list, gm) -> None:
    """Raise HazardError when two cores (not peers) write common GM bytes in one phase."""
    group = _groups(specs)
    rows: list = []                             # (lo, hi, core, phase) tuples
    blocks: list = []                           # (n, 4) arrays of the same, strided moves
    for core, spec in enumerate(specs):
        _writes(spec.stream, core, rows, blocks)
    arr = np.concatenate([np.array(rows, np.int64).reshape(-1, 4), *blocks])
    if len(arr) < 2:
        return
    for phase in _distinct(arr[:, 3]):
        part = arr[arr[:, 3] == phase]
        if len(_distinct(group[part[:, 2]])) < 2:
            continue
        found = _overlap(part, group)
        if found is not None:
            raise GmWriteConflictError(_message(specs, gm, part, *found))


def _distinct(values: np.ndarray) -> list:
    """The distinct values, ascending (``np.unique`` imports ``numpy.ma``: 20 ms a run)."""
    return sorted(set(values.tolist()))


def _groups(specs: list) -> np.ndarray:
    """Each core's group of peers (cores joined by cross-core flags), as an int array."""
    group = list(range(len(specs)))

    def root(i):
        while group[i] != i:
            i = group[i]
        return i

    for i, spec in enumerate(specs):
        for j in spec.peers:
            group[root(j)] = root(i)
    return np.array([root(i) for i in range(len(specs))], np.int64)


def _writes(stream: list, core: int, rows: list, blocks: list) -> None:
    """Add ``core``'s plain GM writes to ``rows`` (a strided move's to ``blocks``), each with
    its phase (the sync_alls before it)."""
    types = set(map(type, stream))
    writers = {t for t in types if (t.kind == "exec" and t.touches_gm)
               or t.kind == "scalar_write"}
    if not writers:
        return
    if not any(t.kind == "syncall" for t in types):
        unique = dict(zip(map(id, stream), stream, strict=True)).values()  # re-issued: once
        entries = ((inst, 0) for inst in unique if type(inst) in writers)
    else:
        entries = _phased(stream, writers)
    for inst, phase in entries:
        _spans(inst, core, phase, rows, blocks)


def _phased(stream: list, writers: set):
    phase, seen = 0, set()
    for inst in stream:
        if inst.kind == "syncall":
            phase += 1
        elif type(inst) in writers and (id(inst), phase) not in seen:
            seen.add((id(inst), phase))
            yield inst, phase


def _spans(inst, core: int, phase: int, rows: list, blocks: list) -> None:
    """The GM bytes ``inst`` writes without adding: a scalar store's span, a move's blocks
    (one row when they are contiguous, an array of rows when strided)."""
    if inst.kind != "exec":
        rows += [(lo, hi, core, phase) for store, lo, hi in inst.writes()
                 if type(store) is GlobalMemory]
        return
    if not inst.gm_write or getattr(inst, "atomic", False):
        return
    for addr, count, length, stride in inst.gm_blocks():
        if count <= 0 or length <= 0:
            continue
        if count == 1 or stride == length:
            rows.append((addr, addr + (count - 1) * stride + length, core, phase))
        else:
            lo = addr + stride * np.arange(count, dtype=np.int64)
            blocks.append(np.stack([lo, lo + length, np.full(count, core, np.int64),
                                    np.full(count, phase, np.int64)], axis=1))


def _overlap(rows: np.ndarray, group: np.ndarray) -> tuple | None:
    """The first [lo, hi) that writes of two groups share, or None: each group's ranges
    merged, then sorted together; a range starting before the furthest end so far overlaps."""
    merged = []
    for g in _distinct(group[rows[:, 2]]):
        m = _merged(rows[group[rows[:, 2]] == g])
        merged.append(m)
    allm = np.concatenate(merged)
    allm = allm[np.argsort(allm[:, 0], kind="stable")]
    ends = np.maximum.accumulate(allm[:, 1])
    hit = np.flatnonzero(allm[1:, 0] < ends[:-1])
    if not len(hit):
        return None
    j = hit[0] + 1
    return int(allm[j, 0]), int(min(allm[j, 1], ends[j - 1]))


def _merged(rows: np.ndarray) -> np.ndarray:
    """Sorted, merged [lo, hi) ranges of ``rows`` (columns lo, hi, ...) as (n, 2)."""
    arr = rows[rows[:, 1] > rows[:, 0], :2]
    arr = arr[np.argsort(arr[:, 0], kind="stable")]
    if len(arr) < 2:
        return arr
    ends = np.maximum.accumulate(arr[:, 1])
    starts = np.flatnonzero(np.r_[True, arr[1:, 0] > ends[:-1]])   # touching: one
    return np.stack([arr[starts, 0], np.r_[ends[starts[1:] - 1], ends[-1]]], axis=1)


def _message(specs, gm, rows, lo: int, hi: int) -> str:
    cores = sorted(set(rows[(rows[:, 0] < hi) & (rows[:, 1] > lo), 2].tolist()))
    labels = [specs[c].label for c in cores]
    who = ", ".join(labels[:4]) + (f" and {len(labels) - 4} more" if len(labels) > 4 else "")
    where = f"GM bytes [{lo}, {hi})"
    for name, addr, nbytes in getattr(gm, "allocations", ()):
        if addr <= lo < addr + max(nbytes, 1):
            where = f"bytes [{lo - addr}, {hi - addr}) of GM tensor {name!r}"
            break
    return (f"{len(labels)} cores write the same {where} without atomics, with no sync_all "
            f"between them: {who}. The last write wins and which is last follows timing; give "
            "each core its own part (offsets from get_block_idx()), or add with "
            "set_atomic_add()")
