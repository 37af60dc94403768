"""Progress on stderr for work that takes more than a couple of seconds.

``Progress(label)`` says nothing for quick work. Once ``after`` seconds have passed it prints
``label ...`` and then the elapsed seconds (updated in place on a terminal, every ten seconds
otherwise), and ``done in N s`` at the end. It runs in a daemon thread that only sleeps and
writes, so the simulation's own timing is not touched. ``Bar`` counts points of a study (a
sweep, a prediction) done, with an ETA.
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


class Bar:
    """Points done, elapsed and ETA on stderr (in place on a terminal)."""

    def __init__(self, total: int, done: int, stream=None, label: str = "sweep"):
        self.total, self.done, self.fresh, self.label = total, done, 0, label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start, self.last = time.perf_counter(), 0.0

    def step(self) -> None:
        self.done, self.fresh = self.done + 1, self.fresh + 1
        now = time.perf_counter()
        if self.tty or now - self.last >= 5.0 or self.done == self.total:
            self.last = now
            self._show(now)

    def grow(self, more: int) -> None:
        """``more`` points added to the run (a prediction's graph forms)."""
        self.total += more

    def _show(self, now: float) -> None:
        elapsed = now - self.start
        eta = elapsed / self.fresh * (self.total - self.done) if self.fresh else 0.0
        width = 24
        fill = int(width * self.done / max(self.total, 1))
        bar = "#" * fill + "." * (width - fill)
        text = (f"{self.label} [{bar}] {self.done}/{self.total} points, {elapsed:.0f} s, "
                f"ETA {eta:.0f} s")
        self.stream.write(("\r" + text) if self.tty else text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self.fresh:
            self.stream.write("\n")
