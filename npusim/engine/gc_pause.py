"""Python's cyclic garbage collector paused while a run or its graph makes many objects."""

import gc
from contextlib import contextmanager

FULL_EVERY = 32       # a full collection after this many paused blocks (see gc_paused)
_ended = 0


@contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the block (a launch makes and keeps hundreds of
    thousands of objects, and each full collection walked them all: a fifth of a large run's
    wall time). Reference counting still frees what is dropped; cycles wait for the block's end.

    At the end the objects made in the block join the oldest generation untraversed (``freeze``
    then ``unfreeze``, both O(1)), instead of the first young collection after ``enable`` walking
    them all (0.1-0.3 s after a conv launch); cycles among them wait for a full collection.
    Skipped when the caller froze objects of its own (``gc.get_freeze_count()``).

    CPython starts a full collection only when the oldest generation has grown by a quarter,
    and objects moved there this way do not count towards it, so a process that runs many
    launches (a notebook's loop, the fuzzer: 0.5 MB a small operator call, 20 GB after 45,000)
    would keep their cycles, the run's GM among them, for ever: every ``FULL_EVERY`` blocks a
    full collection frees them."""
    global _ended
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()
            _ended += 1
            if _ended % FULL_EVERY == 0:
                gc.collect()
