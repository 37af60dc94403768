"""Fast runs: ``with fast_runs():`` makes every launch inside it leave out the repeated
periods of its steady-state loops (``npusim/dsl/steady.py``), where that cannot change outputs.

A launch is recorded fast only when it is timed, computes no outputs (``numerics=False``), has
no sanitizer (the race check needs every instruction) and no jitter; any other launch inside
the block runs whole. ``npusim.cases.run.run_case(fast=True)`` and the studies' ``--fast`` use
it; its error against whole runs is measured by ``npusim bench --group fast``.
"""

from contextlib import contextmanager
from contextvars import ContextVar

_FAST = ContextVar("npusim_fast", default=False)


@contextmanager
def fast_runs(on: bool = True):
    """Launches inside the block are fast runs where they can be (see the module docstring)."""
    token = _FAST.set(bool(on))
    try:
        yield
    finally:
        _FAST.reset(token)


def fast_launch(*, mode: str, numerics: bool, sanitize: bool, jitter, eager: bool) -> bool:
    """Whether a launch with these options records fast."""
    return (_FAST.get() and mode == "timed" and not numerics and not sanitize
            and jitter is None and not eager)
