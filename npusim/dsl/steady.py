"""``steady(items, key, mode)``: a tile loop whose repeated iterations a fast run leaves out.

Ascend C has no such call: it marks a loop for npusim's fast mode (``fast=True`` of
``npusim.cases.run.run_case``, ``--fast`` of the studies), and in every other run it is the
loop itself. ``key(item)`` names what an iteration's instructions depend on besides GM
addresses: two items with equal keys, reached in the same state of the loop, issue the same
instructions with the same costs and flags.

In a fast run the loop records its iterations, each with a signature of its instructions (class,
pipe, kind, cycles, flags and GM bytes; not addresses, nor which event id or buffer of a double
buffer it takes). Once the last ``2 p`` recorded iterations repeat with an even period of ``p``
(p up to ``MAX_PERIOD``; even, so that a double buffer's two halves, which alternate in time,
are both in a measured period), or, when ``p`` is twice an odd ``q`` of at least 3, the last
``p`` repeat with period ``q`` (each half of the measured period is then a whole period of keys
and signatures, and the two halves of a double buffer swap between them: a loop whose core takes
every 32nd of 13 M blocks repeats every 13 tasks, and waiting for two periods of 26 left a
batch-256 gradInput 104 tasks a core one period to leave out), and the keys ahead keep that
period, the whole periods ahead are not run: the stream gets one ``SteadySkip`` per pipe
(``isa/steady.py``) and the timed run advances each pipe over the periods left out by the ones
it ran, each left-out transfer waiting for the shared L2 and HBM as they are then. ``mode`` says
what else a pipe spends there: ``"pace"``, its measured time less its waits on those servers
(for loops whose pipes wait on each other's flags: the cube kernels); ``"stream"``, its own work
alone (for loops bound by GM traffic shared with every core: TransData, whose vector pipe's
measured time is its wait on a contended copy). The iterations after them (another key, or the
last few) run as usual.

One steady loop skips per core and launch: a loop opened inside another is the loop itself, so
is every loop after one that skipped (its measured periods could hold the other pipes' skips
of the earlier one: a pace fed by a skip fed the next skip, and the batch-256 layer3 gradWeight
ran away to 1.4e9 us). A loop whose keys hold no period to leave out does not count as open, so
the loop inside it may skip (gradWeight's images inside its few distinct tasks).

What this assumes (and a fast run's error measures, ``docs/guide/demo-and-bench.md``): the
pipes have reached their steady state within the recorded periods; the shared HBM and L2 serve
the left-out iterations' transfers as the other cores' traffic then allows, and the L2's hits
are those of the recorded periods; the kernel's Python state that the loop body carries from
one iteration to the next is the same after a whole period (the signatures check what it
issues, not the state itself). Outputs are not computed: a fast run is timing only.
"""

from collections import Counter

from npusim.dsl.context import current, issue
from npusim.errors import NpusimError
from npusim.isa.base import Pipe
from npusim.isa.steady import SteadySkip, SteadyTick

MAX_PERIOD = 64     # iterations: longer periods are not looked for
MODES = ("pace", "stream")
_TICK = SteadyTick()


def steady(items, key, mode: str = "pace"):
    """Yield ``items`` (see the module docstring); a fast run leaves out repeated periods."""
    if mode not in MODES:
        raise NpusimError(f"steady(mode={mode!r}): allowed {', '.join(MODES)}")
    ctx = current()
    # One steady loop at a time per core, and none after a loop that skipped: a later
    # loop's measured periods could hold the other pipes' skips of the earlier one.
    if not ctx.fast or ctx.steady_depth or ctx.steady_skipped:
        yield from items
        return
    items = list(items)
    keys = [key(x) for x in items]
    if not _periodic(keys):   # no period of keys could be left out: an inner loop may
        yield from items
        return
    ctx.steady_depth += 1
    try:
        yield from _fast(ctx, items, keys, mode)
    finally:
        ctx.steady_depth -= 1


def _fast(ctx, items: list, keys: list, mode: str):
    history: list = []        # (item index, signature, stream start, stream end), since a skip
    sigs: dict = {}           # or since the last iteration that found a queue buffer unused
    j = 0
    while j < len(items):
        p = _period(history, keys)
        if p:
            ahead = _ahead(keys, j, p)
            if ahead:
                _skip(ctx, history[-p:], p, ahead, mode)
                ctx.steady_skipped = True
                j += ahead * p
                history = []
                continue
        issue(_TICK)
        start, fresh = len(ctx.stream), ctx.fresh_allocs
        yield items[j]
        end = len(ctx.stream)
        if ctx.fresh_allocs != fresh:    # the queues were still filling: not a steady state
            history = []
        else:
            history.append((j, _signature(ctx, start, end, sigs), start, end))
        j += 1


def _period(history: list, keys: list) -> int:
    """The smallest even p with the last 2p recorded iterations periodic in signature and key
    (even: the two halves of a double buffer alternate in time though not in signature, so a
    pace measured over one iteration would be one half's); for p twice an odd q of at least
    3, the last p recorded periodic with period q (``_step``)."""
    n = len(history)
    for p in range(2, min(MAX_PERIOD, n) + 1, 2):
        step = _step(p)
        if 2 * step > n:
            continue
        if all(history[-k][1] == history[-k - step][1]
               and keys[history[-k][0]] == keys[history[-k - step][0]]
               for k in range(1, step + 1)):
            return p
    return 0


def _step(p: int) -> int:
    """The period two of which confirm an even period ``p``: p // 2 when it is odd and at
    least 3 (each half then a whole period), else p itself."""
    q = p // 2
    return q if q % 2 and q >= 3 else p


def _periodic(keys: list) -> bool:
    """Whether some keys repeat long enough for an even period ``p``: two of its ``_step`` to
    measure and one ``p`` to leave out (3 p keys, or 4 q for p twice an odd q)."""
    n = len(keys)
    for p in range(2, min(MAX_PERIOD, n // 2) + 1, 2):
        step = _step(p)
        if 2 * step + p > n:
            continue
        run = 0
        for x in range(step, n):
            run = run + 1 if keys[x] == keys[x - step] else 0
            if run >= step + p:
                return True
    return False


def _ahead(keys: list, j: int, p: int) -> int:
    """Whole periods from item ``j`` on whose keys repeat those ``p`` items back."""
    x = j
    while x < len(keys) and keys[x] == keys[x - p]:
        x += 1
    return (x - j) // p


def _skip(ctx, period: list, p: int, repeats: int, mode: str) -> None:
    """One SteadySkip per pipe, the scalar's last (it counts what was left out: the last
    period's instructions ``repeats`` times); the timed run measures each pipe over that
    period (isa/steady.py)."""
    skipped = Counter()
    for _j, _sig, start, end in period:
        skipped.update(inst.name for inst in ctx.stream[start:end] if inst.kind != "mark")
    for name in skipped:
        skipped[name] *= repeats
    template = hash(tuple(sig for _j, sig, _s, _e in period))
    for pipe in ctx.pipes:
        if pipe != Pipe.S:
            issue(SteadySkip(pipe=pipe, period=p, repeats=repeats, template=template,
                             mode=mode))
    issue(SteadySkip(pipe=Pipe.S, period=p, repeats=repeats, template=template,
                     skipped=skipped, mode=mode))


def _signature(ctx, start: int, end: int, cache: dict) -> int:
    """A hash of what the timed run sees of stream[start:end] (not GM addresses)."""
    chip, out = ctx.chip, []
    for inst in ctx.stream[start:end]:
        sig = cache.get(id(inst))
        if sig is None:
            sig = cache[id(inst)] = (inst, _instr_signature(inst, chip))
        out.append(sig[1])
    return hash(tuple(out))


def _instr_signature(inst, chip) -> tuple:
    kind = inst.kind
    if kind == "exec":
        sig = (type(inst), inst.pipe, inst.body(chip), inst.head(chip))
        if inst.touches_gm:
            sig += (inst.charged_bytes(chip), inst.gm_write, inst.serialises_at_l2)
        return sig
    if kind in ("set", "wait"):     # not the event id: double buffers alternate them
        return (kind, inst.key[:2])
    if kind == "mark":
        return (kind, inst.pipe, getattr(inst, "delta", None))
    return (type(inst), inst.pipe, inst.body(chip), getattr(inst, "flag_id", None),
            getattr(inst, "target", None))
