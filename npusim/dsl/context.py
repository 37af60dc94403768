"""The core a kernel is being recorded for, and ``issue()``, through which every DSL call goes.

While a kernel runs for one core, ``current()`` is that core's ``CoreContext``: its chip, its
buffers, its instruction stream. ``issue(inst)`` checks the instruction against the chip
(``inst.validate(chip)``), appends it to the stream and, when the launch records
eagerly (kernels that read data back into the scalar), executes it at once. ``issue_same``
re-issues the object issued before with the same operands (a tile loop repeats its
instructions on the same buffers), so it is built and checked once per core.
"""

import math

from npusim.errors import NpusimError

_CURRENT = []


class CoreContext:
    """One core of a launch while its kernel is recorded."""

    def __init__(self, chip, label: str, kind: str, block_idx: int, block_num: int,
                 buffers: dict, pipes: tuple, eager: bool = False, sub_block_idx: int = 0):
        self.chip, self.label, self.kind, self.pipes = chip, label, kind, pipes
        self.block_idx, self.block_num, self.sub_block_idx = block_idx, block_num, sub_block_idx
        self.buffers = buffers
        self.eager = eager
        self.atomic = False  # SetAtomicAdd in force for UB->GM copies
        self.hf32_mode = False        # SetHF32Mode: fp32 Mmad operands rounded to HF32
        self.hf32_trans_mode = False  # SetHF32TransMode: HF32 rounding ties away from zero
        self.stream: list = []
        self.issued: dict = {}   # operand key -> the instruction issued under it (issue_same)
        self.checked: set = set()   # ids of objects issue_again has checked on this core
        self.fast = False        # a fast run: steady loops leave out repeated periods
        self.steady_depth = 0    # steady loops open (npusim/dsl/steady.py)
        self.steady_skipped = False   # a steady loop of this core left iterations out
        self.fresh_allocs = 0    # allocs of a queue buffer not used before (no wait)

    def issue(self, inst):
        return issue_on(self, inst)


def current() -> CoreContext:
    if not _CURRENT:
        raise NpusimError("DSL call outside a kernel launch: kernels run through npusim.launch()")
    return _CURRENT[-1]


def issue(inst):
    """Issue one instruction on the current core."""
    if not _CURRENT:
        current()            # raises the error
    return issue_on(_CURRENT[-1], inst)


def issue_on(ctx: CoreContext, inst):
    """Check ``inst`` against the chip and the core's pipes, append it, execute if eager."""
    inst.validate(ctx.chip)
    if inst.pipe not in ctx.pipes:
        raise NpusimError(f"{inst.name}: core {ctx.label} has no PIPE-{inst.pipe} "
                          f"(its pipes: {', '.join(ctx.pipes)})")
    ctx.stream.append(inst)
    if ctx.eager:
        return inst.execute()
    return None


class recording:
    """``with recording(ctx):`` makes ``ctx`` the current core."""

    def __init__(self, ctx: CoreContext):
        self.ctx = ctx

    def __enter__(self):
        _CURRENT.append(self.ctx)
        return self.ctx

    def __exit__(self, *exc):
        _CURRENT.pop()
        return False


def issue_same(key, build):
    """Issue the instruction ``key`` describes (its class and every field, by value): the very
    object issued under ``key`` before on this core, which was checked then against this chip
    and core and is immutable, or else ``build()``, checked and issued as ``issue`` does."""
    if not _CURRENT:
        current()
    ctx = _CURRENT[-1]
    inst = ctx.issued.get(key)
    if inst is None:
        inst = build()
        result = issue_on(ctx, inst)
        ctx.issued[key] = inst
        return result
    ctx.stream.append(inst)
    if ctx.eager:
        return inst.execute()
    return None


def issue_keyed(cls, tensors: tuple, values: tuple, build):
    """``issue_same`` under the key of class ``cls``, its tensor operands and its other field
    values (see ``tensor_key``, ``value_key``); a plain ``issue(build())`` when a value or an
    operand is of a kind the key does not cover."""
    vkey = value_key(values)
    if vkey is None:
        return issue(build())
    try:
        key = (cls, vkey, *map(tensor_key, tensors))
    except AttributeError:       # not a tensor: the instruction's own check names it
        return issue(build())
    return issue_same(key, build)


def issue_again(ctx: CoreContext, inst):
    """``issue`` for an object its caller keeps and issues again on this core (a queue's flag
    and mark records): checked at its first issue only. The object must be kept alive."""
    key = id(inst)
    if key not in ctx.checked:
        result = issue_on(ctx, inst)
        ctx.checked.add(key)
        return result
    ctx.stream.append(inst)
    if ctx.eager:
        return inst.execute()
    return None


def tensor_key(t) -> tuple:
    """A tensor window by value: store, address, dtype, size, limit and label."""
    return (id(t.store), t.addr, t.dtype, t.size, t.limit, t.label)


def value_key(values: tuple):
    """Plain field values by value and type (floats by sign too: 0.0 and -0.0 differ; tuples
    element by element); None when a value is of another kind (no re-issue then)."""
    types = tuple(map(type, values))
    if not _PLAIN.issuperset(types):
        if any(kind is not tuple and kind not in _PLAIN for kind in types):
            return None
        nested = tuple(value_key(v) for v in values if type(v) is tuple)
        if None in nested:
            return None
        return (values, types, _signs(values), nested)
    if float in types:
        return (values, types, _signs(values))
    return (values, types)


_PLAIN = frozenset((int, bool, str, float, type(None)))


def _signs(values: tuple) -> tuple:
    return tuple(math.copysign(1.0, v) if type(v) is float else 0 for v in values)

