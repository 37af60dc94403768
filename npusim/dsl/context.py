"""The core a kernel is being recorded for, and ``issue()``, through which every DSL call goes.

While a kernel runs for one core, ``current()`` is that core's ``CoreContext``: its chip, its
buffers, its instruction stream. ``issue(inst)`` checks the instruction against the chip
(``inst.validate(chip)``), appends it to the stream and, when the launch records
eagerly (kernels that read data back into the scalar), executes it at once. ``issue_same``
re-issues the object issued before with the same operands (a tile loop repeats its
instructions on the same buffers), so it is built and checked once per core.
"""

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

