"""Ctrl-C that always ends a command.

Python turns SIGINT into a KeyboardInterrupt wherever the main thread happens to be, and a few
places swallow it (an exception raised in a weakref callback, in a ``__del__``, in the import
system's locks, is "ignored" and the program goes on). ``install`` puts a handler in place that
also remembers the request, and ``check`` raises it again at the places a long command passes
through often (each finished point of a study, each case of the demo and the bench), so one
Ctrl-C ends the command even when its first KeyboardInterrupt was lost. Python prints a lost
exception ("Exception ignored in: ... Traceback"); a lost KeyboardInterrupt is not printed, as
it is not lost any more.

Once the work is stopped (workers killed, partial outputs removed or kept whole), the command
leaves with ``leave``: stdout and stderr flushed, then ``os._exit``. Interpreter finalization
would run the atexit hooks (``concurrent.futures`` joins its threads there), and CPython exits
by SIGINT itself, not with status 130, when a KeyboardInterrupt once escaped C-level code run
during an import (measured: 1 of 20 interrupted ``predict`` runs exited -2 after printing).

Not handled: a SIGINT before ``install`` runs (Python's start-up and the first imports, some
tens of milliseconds) ends the process by the signal, as it does any Python program.
"""

import os
import signal
import sys
import threading

_requested = False


def _handler(signum, frame):
    global _requested
    _requested = True
    raise KeyboardInterrupt


def install() -> None:
    """Catch SIGINT in this (main) thread; nothing elsewhere, or where it is ignored."""
    global _requested
    _requested = False
    if (threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler):
        signal.signal(signal.SIGINT, _handler)
        if sys.unraisablehook is sys.__unraisablehook__:
            sys.unraisablehook = _unraisable


def _unraisable(info) -> None:
    if info.exc_type is not None and issubclass(info.exc_type, KeyboardInterrupt):
        return        # remembered by _handler; check() raises it where it can be handled
    sys.__unraisablehook__(info)


def requested() -> bool:
    return _requested


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came and was swallowed on its way."""
    if _requested:
        raise KeyboardInterrupt


def ignore() -> None:
    """Ignore SIGINT from now on (the command is ending; a second Ctrl-C must not cut that)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def leave(status: int) -> None:
    """Flush the output and end the process now, with ``status``."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
