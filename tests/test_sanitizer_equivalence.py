"""The race detector reports exactly what the plain reference detector reports
(tests/sanitizer_reference.py: a clock entry per pipe of the chip, an epoch per instruction, a
history per 64 KB page): report for report, in the same order, on random call sequences (flags,
cross-core flags, drains, SyncAll, accesses to another core's buffer, spans across segments), and
on micro-kernels with each wait_flag removed in turn."""

import random
from types import SimpleNamespace

import pytest
from sanitizer_reference import Sanitizer as Reference

import npusim.engine.timed as engine
from npusim.engine.memory import Buffer
from npusim.engine.sanitizer import Sanitizer
from npusim.errors import HazardError
from npusim.micro.matmul import run_matmul
from npusim.micro.vector import run_vector


def collecting(cls):
    """``cls`` with every race recorded as its message instead of raised."""
    class Collecting(cls):
        def __init__(self, cores, **options):
            super().__init__(cores, **options)
            self.reports = []

        def _report(self, *args):
            try:
                super()._report(*args)
            except HazardError as exc:
                self.reports.append(str(exc))
    return Collecting


class _Inst:
    checks_data = touches_gm = False

    def __init__(self, name, reads, writes):
        self.name, self.r, self.w = name, reads, writes

    def reads(self):
        return self.r

    def writes(self):
        return self.w


def _cores(rng):
    """One to three groups of peers: an AIC with one or two AIVs, a lone AIV or a lone AIC."""
    cores = []

    def core(label, pipes):
        cores.append(SimpleNamespace(index=len(cores), label=label, pipes=pipes, peers=[]))
        return cores[-1]

    for g in range(rng.randint(1, 3)):
        kind = rng.choice(["mix", "aiv", "aic"])
        if kind == "mix":
            aic = core(f"aic{g}", ("S", "MTE1", "MTE2", "M", "FIX"))
            aivs = [core(f"aiv{g}{s}", ("S", "V", "MTE2", "MTE3"))
                    for s in range(rng.randint(1, 2))]
            aic.peers = aivs
            for aiv in aivs:
                aiv.peers = [aic]
        else:
            core(f"{kind}{g}", ("S", "V", "MTE2", "MTE3") if kind == "aiv" else ("S", "MTE1", "M"))
    return cores


def _spans(rng, buffers, core):
    own = buffers[core.index] if rng.random() > 0.03 else rng.choice(list(buffers.values()))
    spans = []
    for _ in range(rng.choice([1, 1, 1, 2, 3, 5])):
        if rng.random() < 0.3:
            lo, n = rng.choice([0, 32768, 61440]), rng.choice([65536, 70000, 131072])
        else:
            lo, n = rng.choice([0, 512, 1024, 2048, 65024, 65536]), rng.choice([32, 512, 2048, 0])
        spans.append((own[0] if rng.random() < 0.7 else rng.choice(own), lo, lo + n))
    return tuple(spans)


class _Lockstep:
    """Both detectors fed the same calls; each pipe joins issue clocks in the order made."""

    def __init__(self, rng, cores):
        self.rng, self.cores = rng, cores
        self.sans = [collecting(Reference)(cores), collecting(Sanitizer)(cores)]
        self.versions = [{c.index: [s.issue_clock[c.index]] for c in cores} for s in self.sans]
        self.used: dict = {}

    def clock(self, core, pipe):
        if pipe == "S":
            return None
        last = self.used.get((core.index, pipe), 0)
        now = len(self.versions[0][core.index]) - 1
        self.used[(core.index, pipe)] = v = self.rng.randint(last, now)
        return v

    def call(self, name, *args, core=None, v=None):
        for san, versions in zip(self.sans, self.versions, strict=True):
            extra = () if v is None else (versions[core.index][v],)
            getattr(san, name)(*args, *extra)
        for c in self.cores:
            changed = [s.issue_clock[c.index] is not vs[c.index][-1]
                       for s, vs in zip(self.sans, self.versions, strict=True)]
            assert changed[0] == changed[1]
            if changed[0]:
                for s, vs in zip(self.sans, self.versions, strict=True):
                    vs[c.index].append(s.issue_clock[c.index])


def _pending(san, core, cross):
    return [k for (c, k), d in san.flag_clocks.items()
            if c == core and d and (k[0] == "x") == cross]


def _step(run, rng, buffers, step, p_exec):
    core = rng.choice(run.cores)
    pipe = rng.choice(core.pipes)
    v, i, ref = run.clock(core, pipe), core.index, run.sans[0]
    r = rng.random()
    if r < p_exec:
        inst = _Inst(f"op{step}", _spans(rng, buffers, core) if rng.random() < 0.8 else (),
                     _spans(rng, buffers, core) if rng.random() < 0.6 else ())
        run.call("on_exec", i, pipe, inst, core=core, v=v)
    elif r < 0.65:
        key = (pipe, rng.choice(core.pipes), rng.randrange(2))
        run.call("on_set", i, pipe, key, core=core, v=v)
    elif r < 0.82:
        keys = [k for k in _pending(ref, i, False) if k[1] == pipe]
        if keys:
            run.call("on_wait", i, pipe, rng.choice(keys), core=core, v=v)
    elif r < 0.88:
        if core.peers:
            run.call("on_cross_set", i, pipe, [p.index for p in core.peers], rng.randrange(2),
                     core=core, v=v)
    elif r < 0.94:
        keys = _pending(ref, i, True)
        if keys:
            run.call("on_cross_wait", i, pipe, rng.choice(keys)[1], core=core, v=v)
    elif r < 0.98:
        run.call("on_drain", i)
    else:
        run.call("on_sync_all", [c.index for c in run.cores])


@pytest.mark.parametrize("seed", range(40))
def test_random_call_sequences_give_the_same_reports(seed):
    rng = random.Random(seed)
    cores = _cores(rng)
    buffers = {c.index: [Buffer("UB", c.label, 1 << 18), Buffer("L1", c.label, 1 << 18)]
               for c in cores}
    run = _Lockstep(rng, cores)
    p_exec = rng.choice([0.45, 0.2, 0.1])
    for step in range(300):
        _step(run, rng, buffers, step, p_exec)
    assert run.sans[0].reports == run.sans[1].reports


_INIT = engine.TimedEngine.__init__


def _outcome(monkeypatch, detector, run, drop):
    """The run's HazardError (or other error) with its ``drop``-th wait_flag removed."""
    def init(self, chip, cores, gm, **kw):
        waits = [(c, j) for c in cores for j, inst in enumerate(c.stream) if inst.kind == "wait"]
        c, j = waits[drop]
        c.stream = c.stream[:j] + c.stream[j + 1:]
        _INIT(self, chip, cores, gm, **kw)

    monkeypatch.setattr(engine.TimedEngine, "__init__", init)
    monkeypatch.setattr(engine, "Sanitizer", detector)
    try:
        run()
    except Exception as exc:   # noqa: BLE001 - the outcome compared is whichever error it is
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@pytest.mark.parametrize("kernel", ["vector", "matmul"])
def test_each_removed_wait_flag_gives_the_same_verdict(monkeypatch, kernel):
    run = {"vector": lambda: run_vector("exp_mul", tiles=3, tile_length=512, numerics=False),
           "matmul": lambda: run_matmul(m=32, n=32, k=64, base_k=32, numerics=False)}[kernel]
    outcomes = []
    for drop in range(100):
        ref = _outcome(monkeypatch, Reference, run, drop)
        if ref.startswith("IndexError"):    # every wait_flag has been removed once
            break
        assert _outcome(monkeypatch, Sanitizer, run, drop) == ref
        outcomes.append(ref.split(":")[0])
    assert len(outcomes) > 4 and "HazardError" in outcomes
