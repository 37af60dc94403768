"""Progress on stderr for work that takes more than a couple of seconds.

``Progress(label)`` says nothing for quick work. Once ``after`` seconds have passed it prints
``label ...`` and then the elapsed seconds (updated in place on a terminal, every ten seconds
otherwise), and ``done in N s`` at the end. It runs in a daemon thread that only sleeps and
writes, so the simulation's own timing is not touched.
"""

import sys
import threading
import time


class Progress:
    """A context manager that reports on ``stream`` when its work is slow."""

    def __init__(self, label: str, after: float = 2.0, stream=None):
        self.label, self.after = label, after
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.stop = threading.Event()
        self.shown = False
        self.start = 0.0

    def __enter__(self):
        self.start = time.perf_counter()
        self.thread = threading.Thread(target=self._tick, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, kind, value, tb):
        self.stop.set()
        self.thread.join()
        if self.shown:
            state = "done" if kind is None else "stopped"
            end = "\r" if self.tty else ""
            self._write(f"{end}{self.label} ... {state} in {self._elapsed():.1f} s\n")
        return False

    def _elapsed(self) -> float:
        return time.perf_counter() - self.start

    def _write(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def _tick(self) -> None:
        if self.stop.wait(self.after):
            return
        self.shown = True
        self._write(f"{self.label} ..." + ("" if self.tty else "\n"))
        period = 1.0 if self.tty else 10.0
        while not self.stop.wait(period):
            if self.tty:
                self._write(f"\r{self.label} ... {self._elapsed():.0f} s")
            else:
                self._write(f"{self.label} ... {self._elapsed():.0f} s\n")
