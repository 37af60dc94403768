"""What the four batch-norm kernels share: their UB buffers, the chunk loop over a unit's runs,
the per-channel vectors (loaded, summed over the parts' partials, broadcast to a 64-element
pattern) and the pattern-operand vector ops.

A per-channel value meets the activation through a pattern: on NC1HWC0 (16 lanes) the group's
16 fp32 values copied four times (Muls by 1.0, an exact copy) to fill one 256-byte repeat; on
NCHW (1 lane) the value broadcast over one 32-byte block (Brcb) and read with block stride 0.
Either way the vector op reads src1 with repeat stride 0, so one instruction covers a chunk.

CANN's TBE kernels keep these values in registers or broadcast tensors of their own; the
arithmetic (fp32, one rounding per step) is what the goldens (``npusim/golden/batch_norm.py``)
reproduce.
"""

from npusim.dsl import (
    DataCopyExtParams,
    DataCopyPadExtParams,
    Kernel,
    TBuf,
    TPosition,
    TQue,
    data_copy_pad,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.isa.vector import RepeatParams
from npusim.ops.batch_norm.tiling import BatchNormTiling, chunks, part_range
from npusim.ops.common.blocks import copy_exact

REPEAT = 64          # fp32 elements of one 256-byte repeat
MAX_REPEATS = 255
VEC_BYTES = 256      # one per-channel vector or pattern in the coefficient buffer
COEFS = 24           # vectors and patterns the coefficient buffer holds


class BatchNormKernelBase(Kernel):
    """Buffers and helpers; subclasses define ``process``."""

    def setup(self, t: BatchNormTiling, dtype, inputs: int, *, out_chunks: bool):
        self.t, self.dtype = t, dtype
        self.wide = dtype.itemsize == 2
        bn, tile, item = t.buffer_num, t.tile, dtype.itemsize
        self.ins = [TQue(TPosition.VECIN, bn, name=f"inQueue{i}") for i in range(inputs)]
        for q in self.ins:
            self.pipe.init_buffer(q, bn, tile * item)
        self.out = TQue(TPosition.VECOUT, bn if out_chunks else 1, name="outQueue")
        self.pipe.init_buffer(self.out, bn if out_chunks else 1,
                              max(tile * item, 4 * VEC_BYTES))
        self.vin = TQue(TPosition.VECIN, 1, name="inQueueChannel")
        self.part_pitch = 16 if t.lanes > 8 else 8
        self.pipe.init_buffer(self.vin, 1, max(4 * VEC_BYTES, 2 * t.parts * self.part_pitch * 4))
        self.bufs = {}
        names = ("xf", "dyf", "w", "acc0", "acc1")
        for name, size in (*((n, tile * 4) for n in names), ("coef", COEFS * VEC_BYTES)):
            self.bufs[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.bufs[name], size)

    def f32(self, name: str):
        return self.bufs[name].get("float32")

    def coef(self, i: int):
        return self.f32("coef")[i * REPEAT]

    # ---- the chunk loop ------------------------------------------------------------------
    def runs(self, group: int, part: int):
        """(GM offset, length) of every chunk of the unit, in order (n, then chunk)."""
        t = self.t
        first, count = part_range(t, part)
        for n in range(first, first + count):
            base = (n * t.groups + group) * t.run_len
            for start, length in chunks(t):
                yield base + start, length

    def copy_in(self, tensors, offset: int, length: int):
        for q, gm in zip(self.ins, tensors, strict=True):
            local = q.alloc_tensor(self.dtype)
            copy_exact(local, gm[offset], length)
            q.enque(local)

    def take(self, i: int, length: int, work: str):
        """Input ``i``'s chunk as fp32: cast into ``work`` (16-bit), or the queue tensor."""
        local = self.ins[i].deque()
        if not self.wide:
            return local, local
        f = self.f32(work)
        vec.cast(f, local, "none", length)
        self.ins[i].free_tensor(local)
        return f, None

    def release(self, i: int, local) -> None:
        if local is not None:
            self.ins[i].free_tensor(local)

    def store(self, gm, offset, f, length: int) -> None:
        """fp32 ``f`` -> the activation dtype (fp16: CAST_NONE, bf16: CAST_RINT) -> GM."""
        y = self.out.alloc_tensor(self.dtype)
        if self.wide:
            vec.cast(y, f, "none" if self.dtype.name == "float16" else "rint", length)
        else:
            vec.muls(y, f, 1.0, length)
        self.out.enque(y)
        y = self.out.deque()
        self.put(gm, offset, y, length)
        self.out.free_tensor(y)

    def put(self, gm, offset, y, length: int) -> None:
        copy_exact(gm[offset], y, length)

    # ---- per-channel vectors --------------------------------------------------------------
    def load_channels(self, group: int, sources: list, first: int = 0) -> None:
        """coef(first + i) = the group's lanes of channel tensor ``sources[i]`` (fp32, padded
        to a whole number of groups)."""
        t = self.t
        local = self.vin.alloc_tensor("float32")
        for i, gm in enumerate(sources):
            copy_exact(local[i * REPEAT], gm[group * t.lanes], t.lanes)
        self.vin.enque(local)
        local = self.vin.deque()
        for i in range(len(sources)):
            vec.muls(self.coef(first + i), local[i * REPEAT], 1.0, t.lanes)
        self.vin.free_tensor(local)

    def sum_partials(self, group: int, partials: list, first: int) -> None:
        """coef(first + k) = the parts' partials of ``partials[k]`` added in part order."""
        t, pitch = self.t, self.part_pitch
        local = self.vin.alloc_tensor("float32")
        for k, gm in enumerate(partials):
            data_copy_pad(local[k * t.parts * pitch], gm[group * t.lanes], DataCopyExtParams(
                block_count=t.parts, block_len=t.lanes * 4,
                src_stride=(t.groups - 1) * t.lanes * 4),
                DataCopyPadExtParams(is_pad=True, padding_value=0))
        self.vin.enque(local)
        local = self.vin.deque()
        for k in range(len(partials)):
            rows = local[k * t.parts * pitch]
            dst = self.coef(first + k)
            if t.parts == 1:
                vec.muls(dst, rows, 1.0, t.lanes)
            else:
                vec.add(dst, rows, rows[pitch], t.lanes)
            for p in range(2, t.parts):
                vec.add(dst, dst, rows[p * pitch], t.lanes)
        self.vin.free_tensor(local)

    def pattern(self, dst: int, src: int) -> None:
        """coef(dst) = coef(src) as a pattern operand."""
        lanes = self.t.lanes
        if lanes == 1:
            brcb(self.coef(dst), self.coef(src), 1)
            return
        for k in range(REPEAT // lanes):
            vec.muls(self.coef(dst)[k * lanes], self.coef(src), 1.0, lanes)

    def vop(self, fn, dst, src, pat: int, count: int) -> None:
        """dst = fn(src, pattern ``pat``) over ``count`` elements (src1 repeat stride 0)."""
        blk = 0 if self.t.lanes == 1 else 1
        full, rest = divmod(count, REPEAT)
        done = 0
        while done < full:
            n = min(MAX_REPEATS, full - done)
            at = done * REPEAT
            fn(dst[at], src[at], self.coef(pat), repeat=RepeatParams(
                mask=REPEAT, repeat_times=n, src1_blk_stride=blk, src1_rep_stride=0))
            done += n
        if rest:
            at = full * REPEAT
            fn(dst[at], src[at], self.coef(pat), repeat=RepeatParams(
                mask=rest, repeat_times=1, src1_blk_stride=blk, src1_rep_stride=0))

    # ---- statistics -----------------------------------------------------------------------
    def fold_out(self, accs: list, gms: list, group: int, part: int) -> None:
        """Halve each accumulator down to the lanes (a ReduceSum over the last 8 for one lane)
        and write it as the unit's partial."""
        t = self.t
        out = self.out.alloc_tensor("float32")
        for k, acc in enumerate(accs):
            self.fold_into(acc, out[k * REPEAT])
        self.out.enque(out)
        out = self.out.deque()
        for k, gm in enumerate(gms):
            copy_exact(gm[part * t.groups * t.lanes + group * t.lanes], out[k * REPEAT], t.lanes)
        self.out.free_tensor(out)

    def fold_into(self, acc, dst) -> None:
        """dst = ``acc`` halved down to the lanes (a ReduceSum over the last 8 for one lane)."""
        t, size = self.t, self.t.tile
        while size > max(t.lanes, 8):
            size //= 2
            vec.add(acc, acc, acc[size], size)
        if t.lanes == 1:
            vec.reduce_sum(dst, acc, 8)
        else:
            vec.muls(dst, acc, 1.0, t.lanes)

    def write_channels(self, group: int, pairs: list, valid: int) -> None:
        """Copy coef vectors to channel outputs: ``pairs`` of (coef index, GM tensor)."""
        out = self.out.alloc_tensor("float32")
        for k, (i, _) in enumerate(pairs):
            vec.muls(out[k * REPEAT], self.coef(i), 1.0, self.t.lanes)
        self.out.enque(out)
        out = self.out.deque()
        for k, (_, gm) in enumerate(pairs):
            copy_exact(gm[group * self.t.lanes], out[k * REPEAT], valid)
        self.out.free_tensor(out)
