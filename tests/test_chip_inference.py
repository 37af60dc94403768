"""The Atlas inference series (Ascend 310P3) chip model, and what the engine refuses on it.

Small kernels issue, on ``atlas-inference``, each instruction the chip lacks (FixPipe, SyncAll,
cross-core flags, a bf16 cast, an fp32 Mmad); each is a clear NpusimError naming the chip and
the instruction, raised by the instruction's ``validate`` at issue, not by any operator's
convention. The same kernels run on a chip that has the feature, so the refusal is the chip's.
The 310P's own paths (UB->L1, L1->UB) move bytes at the chip model's rates.
"""

import numpy as np
import pytest

import npusim
from npusim.chip import models_dir
from npusim.dsl import (
    Kernel,
    TBuf,
    TPosition,
    cross_core_set_flag,
    cross_core_wait_flag,
    data_copy,
    set_flag,
    sync_all,
    wait_flag,
)
from npusim.dsl import vector as vec
from npusim.dsl.cube import FixpipeParams, MmadParams, fixpipe, mmad
from npusim.dtypes import bfloat16
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import ChipModelError, NpusimError

CHIP = "atlas-inference"


def test_models_say_what_the_310p_is():
    c = npusim.load_chip(CHIP)
    assert (c.soc, c.product, c.topology) == ("Ascend310P3", "atlas-inference", "coupled")
    assert (c.ai_core_count, c.clock_hz, c.vector_core_count) == (8, 1.06e9, 8)
    assert (c.memory_kind, c.hbm_bytes_per_s, c.hbm_bytes) == ("LPDDR4X", 204.8e9, 24 * 2**30)
    assert (c.l1_bytes, c.l0c_bytes, c.ub_bytes, c.l2_bytes) == (1 << 20, 256 << 10, 256 << 10,
                                                                 16 << 20)
    assert not (c.has_fixpipe or c.has_inter_core_sync or c.has_gm_nd2nz) and c.has_l0c_to_ub
    assert c.input_dtypes == ["float16", "int8"] and "bfloat16" not in c.cast_dtypes
    assert c.peak_flops("float16") == pytest.approx(8 * 4096 * 2 * 1.06e9)   # 69.5 TFLOPS
    assert "LPDDR4X 24 GiB at 0.20 TB/s" in repr(c)
    p1 = npusim.load_chip("atlas-inference-310p1")
    assert (p1.soc, p1.ai_core_count, p1.product) == ("Ascend310P1", 10, "atlas-inference")
    for name in ("atlas-a2", "atlas-training"):
        assert npusim.load_chip(name).memory_kind == "HBM"   # the default of older models
        assert npusim.load_chip(name).has_inter_core_sync


def test_every_310p_number_names_its_source():
    for name in ("atlas-inference", "atlas-inference-310p1"):
        sources = npusim.load_chip(name).sources
        assert "cube_freq=1060" in sources["chip.clock_hz"]
        for key, text in sources.items():   # a hardware-310p.md source, derived or assumed
            assert any(w in text for w in ("INI-310P3", "hardware-310p.md", "asc-devkit",
                                           "assumed", "derived")), key


def test_memory_kind_is_checked(tmp_path):
    text = (models_dir() / f"{CHIP}.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace('memory_kind = "LPDDR4X"', 'memory_kind = "SRAM"'))
    with pytest.raises(ChipModelError, match=r"memory_kind = 'SRAM' .*allowed: HBM, LPDDR4X"):
        npusim.load_chip(bad)
    bad.write_text(text.replace("has_inter_core_sync = false", "has_inter_core_sync = 0"))
    with pytest.raises(ChipModelError, match="has_inter_core_sync must be bool"):
        npusim.load_chip(bad)


# --- kernels that issue what the chip lacks --------------------------------------------------

class SyncAllKernel(Kernel):
    core_type = "aiv"

    def init(self, z):
        self.z = z

    def process(self):
        sync_all()


class CrossSetKernel(SyncAllKernel):
    core_type = "mix"

    def process(self):
        cross_core_set_flag(0)


class CrossWaitKernel(SyncAllKernel):
    core_type = "mix"

    def process(self):
        cross_core_wait_flag(0)


class CastKernel(Kernel):
    """fp32 -> ``dst`` cast of 64 values in UB."""

    def init(self, z, dst):
        self.z, self.dst = z, dst
        self.buf = TBuf(TPosition.VECCALC)
        self.pipe.init_buffer(self.buf, 1024)

    def process(self):
        src = self.buf.get("float32")
        out = self.buf.get(self.dst)[256]
        vec.cast(out, src, "rint", 64)


class CubeKernel(Kernel):
    """One Mmad of ``dtype`` inputs; with ``out_gm`` its L0C goes out through FixPipe."""

    core_type = "aic"

    def init(self, z, dtype, use_fixpipe=False):
        self.z, self.dtype, self.use_fixpipe = z, dtype, use_fixpipe
        self.bufs = {pos: TBuf(pos) for pos in (TPosition.A2, TPosition.B2, TPosition.CO1)}
        for buf in self.bufs.values():
            self.pipe.init_buffer(buf, 4096)

    def process(self):
        a, b = (self.bufs[p].get(self.dtype) for p in (TPosition.A2, TPosition.B2))
        c = self.bufs[TPosition.CO1].get("float32")
        if self.use_fixpipe:
            fixpipe(self.z, c, FixpipeParams(m_size=16, n_size=16, src_stride=16,
                                             dst_stride=16))
            return
        mmad(c, a, b, MmadParams(m=16, n=16, k=32 // np.dtype(self.dtype).itemsize))


def run_kernel(kernel, chip=CHIP, block_dim=2, **args):
    gm = GlobalMemory()
    z = gm.tensor("z", np.float32, 256)
    # these kernels read buffers they never filled (the instructions' cost and path are what
    # is tested, not their values): the sanitizer's read-of-unwritten-bytes check is off
    return launch(kernel, chip=chip, block_dim=block_dim, gm=gm, args=dict(z=z, **args),
                  outputs={"z": (z, (256,))}, sanitize=False)


@pytest.mark.parametrize("kernel, args, instruction", [
    (SyncAllKernel, {}, "sync_all"),
    (CrossSetKernel, {}, "cross_core_set_flag"),
    (CrossWaitKernel, {}, "cross_core_wait_flag"),
    (CastKernel, {"dst": bfloat16}, "cast"),
    (CubeKernel, {"dtype": np.float32}, "mmad"),
    (CubeKernel, {"dtype": np.float16, "use_fixpipe": True}, "fixpipe"),
])
@pytest.mark.parametrize("mode", ["timed", "functional"])
def test_missing_features_are_refused_naming_chip_and_instruction(kernel, args, instruction,
                                                                  mode):
    gm = GlobalMemory()
    z = gm.tensor("z", np.float32, 256)
    with pytest.raises(NpusimError) as info:
        launch(kernel, chip=CHIP, block_dim=2, gm=gm, args=dict(z=z, **args),
               outputs={"z": (z, (256,))}, mode=mode)
    text = str(info.value)
    assert text.startswith(f"core core0: {instruction}: ") and "'atlas-inference'" in text, text


@pytest.mark.parametrize("kernel, args, chip", [
    (SyncAllKernel, {}, "atlas-training"),
    (SyncAllKernel, {}, "atlas-a2"),
    (CastKernel, {"dst": bfloat16}, "atlas-a2"),
    (CubeKernel, {"dtype": np.float32}, "atlas-a2"),
    (CubeKernel, {"dtype": np.float16, "use_fixpipe": True}, "atlas-a2"),
    (CubeKernel, {"dtype": np.float16}, CHIP),
    (CastKernel, {"dst": np.float16}, CHIP),
])
def test_the_same_kernels_run_where_the_feature_exists(kernel, args, chip):
    assert run_kernel(kernel, chip=chip, **args).cycles > 0


def test_refusal_messages_say_why():
    with pytest.raises(NpusimError, match=r"has_inter_core_sync = false\): no SyncAll"):
        run_kernel(SyncAllKernel)
    with pytest.raises(NpusimError, match=r"has no FixPipe unit \(has_fixpipe = false\)"):
        run_kernel(CubeKernel, dtype=np.float16, use_fixpipe=True)
    with pytest.raises(NpusimError, match=r"input type 'float32' .*allowed: float16, int8"):
        run_kernel(CubeKernel, dtype=np.float32)
    with pytest.raises(NpusimError, match=r"bfloat16 .*atlas-inference"):
        run_kernel(CastKernel, dst=bfloat16)


# --- the 310P's own paths: UB -> L1 and L1 -> UB ------------------------------------------

class L1RoundTrip(Kernel):
    """z = x through GM -> UB -> L1 -> UB (second half of UB) -> GM, ordered by flags."""

    def init(self, x, z, n):
        self.x, self.z, self.n = x, z, n
        self.ub, self.l1 = TBuf(TPosition.VECCALC), TBuf(TPosition.A1)
        self.pipe.init_buffer(self.ub, 2 * n * 4)
        self.pipe.init_buffer(self.l1, n * 4)

    def process(self):
        ub, l1 = self.ub.get("float32"), self.l1.get("float32")
        data_copy(ub, self.x, self.n)               # MTE2
        set_flag("MTE2_MTE3")
        wait_flag("MTE2_MTE3")
        data_copy(l1, ub, self.n)                   # UB -> L1 on MTE3
        set_flag("MTE3_MTE1")
        wait_flag("MTE3_MTE1")
        data_copy(ub[self.n], l1, self.n)          # L1 -> UB on MTE1
        set_flag("MTE1_MTE3")
        wait_flag("MTE1_MTE3")
        data_copy(self.z, ub[self.n], self.n)      # MTE3


def round_trip(chip, n=4096, offset=0):
    gm = GlobalMemory()
    x0 = np.arange(n, dtype=np.float32) * 0.5
    x, z = gm.tensor("x", np.float32, n, x0), gm.tensor("z", np.float32, n)
    r = launch(L1RoundTrip, chip=chip, block_dim=1, gm=gm, args=dict(x=x, z=z, n=n),
               outputs={"z": (z, (n,))})
    return r, x0


def test_ub_l1_paths_move_the_bytes_at_the_chip_rates(tmp_path):
    r, x0 = round_trip(CHIP)
    assert np.array_equal(r.outputs["z"], x0)
    paths = r.stats["bytes_by_path"]
    assert paths["UB->L1"] == paths["L1->UB"] == 4096 * 4
    # each move is on the critical path: halving a rate adds its bytes over the rate once more
    text = (models_dir() / f"{CHIP}.toml").read_text()
    for key, rate in (("l1_to_ub_bytes_per_cycle", 128.0), ("ub_to_l1_bytes_per_cycle", 256.0)):
        assert getattr(npusim.load_chip(CHIP), key) == rate     # INI-310P3 rates
        slow = tmp_path / f"{key}.toml"
        slow.write_text(text.replace(f"{key} = {rate}", f"{key} = {rate / 2}"))
        assert round_trip(slow)[0].cycles - r.cycles == pytest.approx(4096 * 4 / rate, abs=2)


def test_ub_l1_paths_are_refused_on_a2():
    """A2's vector cores have no L1, its cube cores no UB: no kernel can issue these moves."""
    with pytest.raises(NpusimError, match=r"core aiv0 has no L1"):
        round_trip("atlas-a2")
