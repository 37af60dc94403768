"""The discrete-event kernel of the timed run: the part of SimPy the engine uses, without its cost.

The engine's processes are generators that yield events; this module runs them exactly as SimPy
4 does, so a run gives the same cycles event for event: a time-ordered queue of
``(time, priority, sequence number, event)``, a sequence number taken at every scheduling (a
timeout when it is made, an event when it succeeds, a process when it starts, urgently, and
when it ends), the callbacks of an event run in the order they were added, a process resumed
the moment the event it waits on is processed. A process that raises ends the run with a copy of
its exception (as SimPy raises it), once its end is processed.

What is left out: interrupts, conditions, resources, ``until``: the engine uses none of them. What
makes it cheaper than SimPy: slotted events, no per-event type checks, the run loop inlined.
"""

from heapq import heappop, heappush
from itertools import count

URGENT, NORMAL = 0, 1   # process starts before anything else at the same time (as SimPy)


class Event:
    """An event a process can wait on; ``succeed()`` schedules it now."""

    __slots__ = ("env", "callbacks", "triggered")

    def __init__(self, env):
        self.env = env
        self.callbacks = []     # None once processed
        self.triggered = False

    def succeed(self) -> "Event":
        if self.triggered:
            raise RuntimeError("event already triggered")
        self.triggered = True
        env = self.env
        heappush(env.queue, (env.now, NORMAL, next(env.eid), self))
        return self


class Process:
    """A generator run by the environment; it is itself scheduled when it ends."""

    __slots__ = ("env", "generator", "callbacks", "error")

    def __init__(self, env, generator):
        self.env, self.generator, self.callbacks, self.error = env, generator, [], None
        start = Event(env)
        start.triggered = True
        start.callbacks.append(self.resume)
        heappush(env.queue, (env.now, URGENT, next(env.eid), start))

    def resume(self, _event) -> None:
        send = self.generator.send
        try:
            event = send(None)
            while event.callbacks is None:      # already processed: go on at once
                event = send(None)
        except StopIteration:
            self._end()
            return
        except BaseException as exc:  # noqa: BLE001 - raised by the run loop, as SimPy does
            self.error = exc
            self._end()
            return
        event.callbacks.append(self.resume)

    def _end(self) -> None:
        env = self.env
        heappush(env.queue, (env.now, NORMAL, next(env.eid), self))


class Environment:
    """Simulated time and the event queue (the API subset of ``simpy.Environment``)."""

    def __init__(self):
        self.now = 0
        self.queue: list = []
        self.eid = count()

    def event(self) -> Event:
        return Event(self)

    def timeout(self, delay) -> Event:
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        ev = Event(self)
        ev.triggered = True
        heappush(self.queue, (self.now + delay, NORMAL, next(self.eid), ev))
        return ev

    def process(self, generator) -> Process:
        return Process(self, generator)

    def run(self) -> None:
        """Process events in order until none is left."""
        queue = self.queue
        while queue:
            self.now, _, _, event = heappop(queue)
            callbacks, event.callbacks = event.callbacks, None
            for callback in callbacks:
                callback(event)
            if event.__class__ is Process and event.error is not None:
                err = event.error
                exc = type(err)(*err.args)
                exc.__cause__ = err
                raise exc
