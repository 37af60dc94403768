"""Which cores the race detector must follow: one of each set of cores that run the same
on-chip program.

The detector (``npusim/engine/sanitizer.py``) checks accesses to on-chip buffers, which belong to
one core, against the happens-before order of that core's pipes. That order comes from the core's
own stream: program order per pipe, its set/wait pairs (matched in stream order per flag),
issue, barriers, and ``SyncAll`` (everything before it is ordered before everything after it).
GM accesses are not checked. So two cores whose streams agree entry by entry in everything the
detector reads (each instruction's type, pipe and kind, its flag, and the on-chip byte ranges
it reads and writes: buffer name and offsets; GM addresses may differ) get the same verdict,
and checking one of them is checking both. A race found is reported on that core.

SPMD kernels give most cores the same on-chip program (only their GM offsets differ): 48
SiluBackward cores are 2 programs (full tiles and the tail), the 24 cores of a 2048^3 cube
kernel 2 or 3. Cores with cross-core flags (an A2 mixed kernel's AIC and AIVs) are always
followed: which of two AIVs' sets an AIC's wait takes follows simulated time, so their order
is not the stream's alone.

An instruction's key is computed once per object (kernels re-issue the same objects; see
``npusim/dsl/context.py``), so finding the classes costs a dictionary lookup per entry.
"""

from npusim.engine.memory import Buffer

_ACCESS_KINDS = frozenset(("exec", "scalar_read", "scalar_write"))


def cores_to_check(cores) -> list:
    """The cores of ``cores`` (engine ``CoreSim``s, with ``stream`` and ``peers``) the race
    detector follows: every core with cross-core peers, and the first core of each on-chip
    program among the others."""
    keys: dict = {}        # id(instruction) -> small int naming its on-chip footprint
    names: dict = {}       # footprint -> that int
    seen, chosen = set(), []
    for core in cores:
        if core.peers:
            chosen.append(core)
            continue
        program = _program(core.stream, keys, names)
        if program not in seen:
            seen.add(program)
            chosen.append(core)
    return chosen


def _program(stream, keys: dict, names: dict) -> tuple:
    """The stream as the ints of its entries' footprints: C-level passes over the objects, and
    a footprint computed once per object not seen before."""
    ids = list(map(id, stream))
    program = list(map(keys.get, ids))
    if None in program:
        objects = dict(zip(ids, stream, strict=True))
        for ident in set(ids).difference(keys):
            keys[ident] = names.setdefault(_footprint(objects[ident]), len(names))
        program = list(map(keys.get, ids))
    return tuple(program)


def _footprint(inst) -> tuple:
    """What the race detector reads of one instruction (a buffer mark: nothing but its place)."""
    kind = inst.kind
    if kind == "mark":
        return ("mark",)
    if kind in _ACCESS_KINDS:
        return (type(inst), inst.pipe, kind, _on_chip(inst.reads()), _on_chip(inst.writes()))
    if kind in ("set", "wait"):
        return (type(inst), inst.pipe, kind, inst.key)
    return (type(inst), inst.pipe, kind, getattr(inst, "flag_id", None))


def _on_chip(spans) -> tuple:
    return tuple((store.name, lo, hi) for store, lo, hi in spans if type(store) is Buffer)
