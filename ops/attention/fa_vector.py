"""The vector cores' side of the FlashAttentionScore mix kernel (Atlas A2): the online softmax.

Each of a cube core's two vector cores takes its half of the block's query rows (sub-block 0
rows 0 .. s1_base / 2 - 1, sub-block 1 the rest; a core with no rows only keeps the flags in
step). Per key block g (CrossCoreWaitFlag ``FLAG_S`` on MTE2 first):

- S in (DataCopyPad of the rows' fp32 scores, rows W = the keys rounded up to 64 wide);
  Muls by scale_value; the columns past the keys set to -inf (a masked Duplicate); on a block
  crossing the causal diagonal the compressed attenMask's tile in (uint8), Cast to fp16, Compare
  with 0 (block stride 0 on a zero block) into a bit mask and Select(S, -inf) where it is 1;
- the row max m_g (Max of the 64-wide column chunks, BlockReduceMax, BlockReduceMax), m =
  max(m, m_g), alpha_g = exp(m_old - m), S - m (Brcb'd, block stride 0), Exp, the row sum l_g
  (Add of the chunks, BlockReduceSum twice), l = alpha_g * l + l_g;
- P = Cast(S) to q's dtype (CAST_RINT), out to the P slot, CrossCoreSetFlag on MTE3 of this
  core's ``FLAG_P`` id;
- then the O of block g - 1 (CrossCoreWaitFlag ``FLAG_O``): acc = acc * alpha_{g-1} + O.

After the task's last block: acc / l, Cast to the output dtype, out; softmaxMax and
softmaxSum as CANN stores them, each row's value in 8 fp32 lanes (Brcb). Not modelled: CANN's
SoftmaxFlashV2 API's own instruction mix and its double-buffered S tiles, dropout, pse.
"""

from npusim.dsl import (
    DataCopyExtParams,
    DataCopyParams,
    Pipe,
    TBuf,
    TPosition,
    TQue,
    cross_core_set_flag,
    cross_core_wait_flag,
    data_copy,
    data_copy_pad,
)
from npusim.dsl import vector as vec
from npusim.dsl.broadcast import brcb
from npusim.isa.vector import RepeatParams
from npusim.ops.attention.fa_cube import FLAG_O, FLAG_P, FLAG_S, S_SLOTS
from npusim.ops.attention.tiling import MASK_SIZE, mask_offset
from npusim.ops.common import ceil_div, round_up
from npusim.ops.common.rows import LANES, by_row, row_reduce, tail_mask

FP16_PER_REPEAT = 128


class FaVector:
    """The AIVs' methods of the mix kernel (``FlashAttentionKernel``)."""

    def init_vector(self, sub: int):
        t = self.t
        half = t.s1_base // 2
        self.r_off, self.half, self.flag_p = sub * half, half, FLAG_P[sub]
        rows, w, d = half, t.s2_base, t.d
        self.s_in = self._que(TPosition.VECIN, "inQueueS", rows * w * 4, 2)
        self.mask_in = self._que(TPosition.VECIN, "inQueueMask", rows * w)
        self.o_in = self._que(TPosition.VECIN, "inQueueO", rows * d * 4)
        # P's blocks and, at a task's end, its rows of attentionOut
        self.p_out = self._que(TPosition.VECOUT, "outQueuePY",
                               rows * max(w, d) * self.dtype.itemsize)
        self.st_out = self._que(TPosition.VECOUT, "outQueueStats", rows * 8 * 4, 2)
        r8 = round_up(rows, 8) * 4
        self.buf = {}
        for name, nbytes in (("acc", rows * d * 4), ("tmp", max(rows * LANES * 4, rows * w * 2)),
                             ("red8", rows * 8 * 4), ("rowb", round_up(rows, 8) * 32),
                             ("bits", round_up(rows * w // 8, 32)), ("zero", 32),
                             ("mj", r8), ("lj", r8), ("m0", r8), ("m1", r8), ("l", r8),
                             ("alpha0", r8), ("alpha1", r8)):
            self.buf[name] = TBuf(TPosition.VECCALC, name=name)
            self.pipe.init_buffer(self.buf[name], nbytes)

    def _que(self, pos, name, nbytes, num=1):
        que = TQue(pos, num, name=name)
        self.pipe.init_buffer(que, num, nbytes)
        return que

    def f32(self, name):
        return self.buf[name].get("float32")

    def process_vector(self):
        t, g = self.t, 0
        vec.duplicate(self.buf["zero"].get("float16"), 0.0, 16)
        for task in t.core_tasks(self.core):
            b, n, r0, rows = t.task(task)
            mine = max(0, min(self.half, rows - self.r_off))
            blocks = t.key_blocks(r0, rows)
            if mine:
                vec.duplicate(self.f32("acc"), 0.0, mine * t.d)
                vec.duplicate(self.f32("m1"), float("-inf"), mine)
                vec.duplicate(self.f32("l"), 0.0, mine)
            self.fetch_s(mine, g, blocks[0])
            for idx, block in enumerate(blocks):
                if idx + 1 < len(blocks):    # the next block's scores in before this O waits
                    self.fetch_s(mine, g + idx + 1, blocks[idx + 1])
                if mine:
                    self.softmax_block(r0 + self.r_off, mine, block, (g + idx) % 2, idx)
                cross_core_set_flag(self.flag_p, Pipe.MTE3)
                if idx:
                    self.update(mine, (g + idx - 1) % 2)
            self.update(mine, (g + len(blocks) - 1) % 2)
            if mine:
                self.finish(b, n, r0 + self.r_off, mine, len(blocks))
            g += len(blocks)

    def fetch_s(self, rows, gg, block):
        """CrossCoreWaitFlag FLAG_S on MTE2, then (with rows) the scores of global block
        ``gg`` in: DataCopyPad of the rows, W = the keys rounded up to 64 wide. A core with no
        rows keeps the flag only (on the same pipe: the engine wakes one waiter per flag id,
        so two pipes waiting on one id would hang)."""
        cross_core_wait_flag(FLAG_S, Pipe.MTE2)
        if not rows:
            return
        t, cols = self.t, block[1]
        w = round_up(cols, LANES)
        s = self.s_in.alloc_tensor("float32")
        at = self.slot_at("s", gg % S_SLOTS) + self.r_off * t.s2_base
        data_copy_pad(s, self.s_ws[at], DataCopyExtParams(
            block_count=rows, block_len=cols * 4, src_stride=(t.s2_base - cols) * 4,
            dst_stride=(w - round_up(cols, 8)) // 8))
        self.s_in.enque(s)

    def softmax_block(self, row0, rows, block, slot, idx):
        """The fetched block (first key, keys): the online softmax, P out to P slot ``slot``."""
        t, (c0, cols) = self.t, block
        w = round_up(cols, LANES)
        s = self.s_in.deque()
        vec.muls(s, s, self.scale, (rows - 1) * w + round_up(cols, 8))   # what the copy wrote
        if cols < w:
            vec.duplicate(s[w - LANES], float("-inf"), repeat=RepeatParams(
                mask=tail_mask(cols - (w - LANES)), repeat_times=rows, dst_rep_stride=w // 8))
        if t.masked(row0, c0, cols):
            self.apply_mask(s, row0, c0, rows, w)
        self.online_softmax(s, rows, w, idx, slot)
        p = self.p_out.alloc_tensor(self.dtype)
        vec.cast(p, s, "rint", rows * w)
        self.s_in.free_tensor(s)
        self.p_out.enque(p)
        p = self.p_out.deque()
        item = self.dtype.itemsize
        data_copy(self.p_ws[self.slot_at("p", slot) + self.r_off * t.s2_base], p,
                  DataCopyParams(block_count=rows, block_len=w * item // 32,
                                 dst_stride=(t.s2_base - w) * item // 32))
        self.p_out.free_tensor(p)

    def apply_mask(self, s, row0, c0, rows, w):
        """S = -inf where the compressed causal mask's tile is 1."""
        mr, mc = mask_offset(self.t, row0, c0)
        mk = self.mask_in.alloc_tensor("uint8")
        data_copy(mk, self.mask_gm[mr * MASK_SIZE + mc], DataCopyParams(
            block_count=rows, block_len=w // 32, src_stride=(MASK_SIZE - w) // 32))
        self.mask_in.enque(mk)
        mk = self.mask_in.deque()
        half = self.buf["tmp"].get("float16")
        vec.cast(half, mk, "none", rows * w)
        self.mask_in.free_tensor(mk)
        bits = self.buf["bits"].get("uint8")
        zero = self.buf["zero"].get("float16")
        full, rest = divmod(rows * w, FP16_PER_REPEAT)     # rest: 0 or 64 lanes
        for at, mask, repeats in ((0, FP16_PER_REPEAT, full), (full, rest, 1)):
            if mask and repeats:
                vec.compare(bits[at * FP16_PER_REPEAT // 8], half[at * FP16_PER_REPEAT], zero,
                            "eq", repeat=RepeatParams(mask=mask, repeat_times=repeats,
                                                      src1_blk_stride=0, src1_rep_stride=0))
        vec.select(s, bits, s, float("-inf"), rows * w)

    def online_softmax(self, s, rows, w, idx, slot):
        f = self.f32
        cur, prev = f(f"m{idx % 2}"), f(f"m{(idx + 1) % 2}")
        alpha = f(f"alpha{slot}")
        row_reduce(vec.max, vec.block_reduce_max, f("mj"), s, f("tmp"), f("red8"), rows, w)
        vec.max(cur, prev, f("mj"), rows)
        vec.sub(alpha, prev, cur, rows)
        vec.exp(alpha, alpha, rows)
        rowb = f("rowb")
        brcb(rowb, cur, ceil_div(rows, 8))
        by_row(vec.sub, s, s, rowb, rows, w)
        vec.exp(s, s, rows * w)
        row_reduce(vec.add, vec.block_reduce_sum, f("lj"), s, f("tmp"), f("red8"), rows, w)
        vec.mul(f("l"), f("l"), alpha, rows)
        vec.add(f("l"), f("l"), f("lj"), rows)

    def update(self, rows, slot):
        """acc = acc * alpha + O of the block in O slot ``slot``."""
        if not rows:
            cross_core_wait_flag(FLAG_O, Pipe.MTE2)
            return
        t = self.t
        cross_core_wait_flag(FLAG_O, Pipe.MTE2)
        o = self.o_in.alloc_tensor("float32")
        data_copy(o, self.o_ws[self.slot_at("o", slot) + self.r_off * t.d], rows * t.d)
        self.o_in.enque(o)
        o = self.o_in.deque()
        acc, rowb = self.f32("acc"), self.f32("rowb")
        brcb(rowb, self.f32(f"alpha{slot}"), ceil_div(rows, 8))
        by_row(vec.mul, acc, acc, rowb, rows, t.d)
        vec.add(acc, acc, o, rows * t.d)
        self.o_in.free_tensor(o)

    def finish(self, b, n, row0, rows, blocks):
        """attentionOut = acc / l in the output dtype; softmaxMax, softmaxSum 8 lanes a row."""
        t, acc, rowb = self.t, self.f32("acc"), self.f32("rowb")
        brcb(rowb, self.f32("l"), ceil_div(rows, 8))
        by_row(vec.div, acc, acc, rowb, rows, t.d)
        y = self.p_out.alloc_tensor(self.dtype)
        vec.cast(y, acc, "rint", rows * t.d)
        self.p_out.enque(y)
        y = self.p_out.deque()
        blk = t.d * self.dtype.itemsize // 32
        data_copy(self.out_gm[t.offset(b, n, row0, t.s1)], y, DataCopyParams(
            block_count=rows, block_len=blk, dst_stride=(t.row_stride() - t.d) * blk // t.d))
        self.p_out.free_tensor(y)
        at = ((b * t.n + n) * t.s1 + row0) * 8
        for gm, name in ((self.max_gm, f"m{(blocks - 1) % 2}"), (self.sum_gm, "l")):
            st = self.st_out.alloc_tensor("float32")
            brcb(st, self.f32(name), ceil_div(rows, 8))
            self.st_out.enque(st)
            st = self.st_out.deque()
            data_copy(gm[at], st, rows * 8)
            self.st_out.free_tensor(st)

