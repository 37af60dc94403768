"""What the race detector says when it finds a race: which access came first, what each one was,
the queue or buffer's name, and the hand-off that would order them.

``npusim/engine/sanitizer.py`` finds a pair of accesses to overlapping on-chip bytes, one of
them a write, that no happens-before edge orders. This module turns the pair into a sentence a
learner can act on:

- the kind of hazard, from which access came first: read after write (the reader needs the
  writer's data), write after read (the writer overwrites what the reader still needs), write
  after write;
- each access: the instruction, its core and pipe, and which of that pipe's instructions of
  that name it was (``the 2nd muls on aiv0 PIPE-V``: with one such call per tile, the tile);
- the bytes, with the name of the queue or ``TBuf`` they belong to when an operand of either
  instruction carries one (``'outZ'``);
- the fix: on one core, a flag from the first access's pipe to the second's: the queue's own
  hand-off when the bytes belong to a queue between those pipes (``enque``/``deque`` when the
  first pipe produces into the queue, ``free_tensor``/``alloc_tensor`` when it consumes from
  it), else ``set_flag``/``wait_flag`` with that pipe pair; across cores, a cross-core flag or
  ``sync_all``.

"First" is the order the detector saw them in. The timed run sees them in simulated time, in
which a pipe that should have waited may run ahead (its read then comes before the write it
should have followed). ``raise_race`` therefore asks the program-order check
(``npusim/engine/race_order.py``), which takes accesses in the order the scalar issued them,
for its report whenever it can follow the launch in program order (no cross-core flags; a
SyncAll taken as a barrier of its own core): the first access is then the one the program
issued first, and the fix points the way the program meant. Kernels with cross-core flags (an
A2 mixed kernel's AIC and AIVs) keep the timed run's order, and their "first" is the first in
simulated time.
"""

from npusim.errors import HazardError

_KIND = {(True, False): "read after write", (False, True): "write after read",
         (True, True): "write after write"}


def raise_race(san, store, lo: int, hi: int, first: tuple, second: tuple) -> None:
    """Raise the HazardError for ``first`` and ``second`` ((thread, inst, write, ordinal)), the
    program-order check's own report where it decides the launch."""
    recheck = getattr(san, "recheck", None)
    if recheck is not None:
        found = recheck(san.recheck_cores)
        if found is not None:
            raise found
    raise HazardError(describe(san, store, lo, hi, first, second))


def describe(san, store, lo: int, hi: int, first: tuple, second: tuple) -> str:
    """The sentence for a race; ``san`` gives ``names`` and ``thread_info`` (core, pipe)."""
    t1, inst1, write1, n1 = first
    t2, inst2, write2, n2 = second
    label = operand_label(inst1, store, lo, hi) or operand_label(inst2, store, lo, hi)
    where = f"{store!r} bytes [{lo}, {hi})" + (f" of {label!r}" if label else "")
    one = f"the {nth(n1)} {inst1.name} on {san.names[t1]}"
    two = f"the {nth(n2)} {inst2.name} on {san.names[t2]}"
    kind = _KIND[(write1, write2)]
    return (f"race on {where} ({kind}): {one} {_verb(write1)} them, then {two} "
            f"{_verb(write2)} them, and no flag, queue hand-off or barrier orders the "
            f"{'write' if write2 else 'read'} after the {'write' if write1 else 'read'}; "
            f"to order them, {_fix(san, store, label, first, second)}")


def _verb(write: bool) -> str:
    return "writes" if write else "reads"


def nth(n: int) -> str:
    if n % 100 in (11, 12, 13):
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _fix(san, store, label, first, second) -> str:
    (core1, p1), (core2, p2) = san.thread_info[first[0]], san.thread_info[second[0]]
    a, b = first[1].name, second[1].name
    if core1 is not core2:
        return (f"{core1.label} must signal {core2.label} after the {a} "
                f"(cross_core_set_flag on PIPE-{p1}) and {core2.label} wait for it before the "
                f"{b} (cross_core_wait_flag on PIPE-{p2}), or put a sync_all between them")
    flags = (f"set_flag(HardEvent.{p1}_{p2}, id) after the {a} and "
             f"wait_flag(HardEvent.{p1}_{p2}, id) before the {b}")
    pipes = _queue_pipes(core1, store, label) if label else None
    if pipes == (p1, p2):
        return (f"enque the tensor of {label!r} after the {a} and deque it before the {b} "
                f"(the queue's {flags})")
    if pipes == (p2, p1):
        return (f"free_tensor the tensor of {label!r} after the {a} and alloc_tensor it "
                f"again before the {b} (the queue's {flags})")
    return flags


def operand_label(inst, store, lo: int, hi: int) -> str:
    """The queue or TBuf name of an operand of ``inst`` over bytes [lo, hi) of ``store``."""
    for name in getattr(inst, "__dataclass_fields__", ()):
        value = getattr(inst, name, None)
        for t in value if isinstance(value, list | tuple) else (value,):
            if (getattr(t, "store", None) is store and getattr(t, "label", "")
                    and t.addr < hi and lo < t.limit):
                return t.label
    return ""


def _queue_pipes(core, store, label: str) -> tuple | None:
    """(producer, consumer) pipes of the queue ``label`` on ``store``, from the buffer marks
    of the core's stream (an alloc's mark rides on the producer, a free's after a deque on
    the consumer); None for a TBuf or a queue whose buffers were never handed over."""
    producer = consumer = None
    for inst in getattr(core, "stream", ()):
        if inst.kind != "mark" or inst.buffer is not store:
            continue
        if inst.label != label and not inst.label.startswith(label + "["):
            continue
        if inst.delta > 0:
            producer = inst.pipe
        elif producer is not None and inst.pipe != producer:
            consumer = inst.pipe
    return (producer, consumer) if producer and consumer else None
