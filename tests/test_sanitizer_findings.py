"""The sanitizer's findings beyond races (issue 42, items 2 and 3): a read of on-chip bytes that
nothing wrote, and two cores writing the same GM bytes without atomics."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from kernels import RotateKernel
from npusim.dsl import (
    DataCopyParams,
    cube,
    get_block_idx,
    get_block_num,
    set_atomic_add,
    set_atomic_none,
    sync_all,
)
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.errors import HazardError

LESSONS = Path(__file__).parent.parent / "docs" / "lessons"


def _lesson(name: str):
    spec = importlib.util.spec_from_file_location(f"lesson_{name}", LESSONS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_half_length_l0c_to_ub_copy_is_a_read_of_bytes_never_written():
    lesson6 = _lesson("06_cube")

    class HalfCopy(lesson6.SmallMatmul):
        """The 910's copy-out with data_copy_l0c_to_ub given half the fractals."""

        def copy_out(self):
            real = cube.data_copy_l0c_to_ub

            def half(dst, src, params, *rest):
                real(dst, src, DataCopyParams(block_len=params.block_len // 2), *rest)

            cube.data_copy_l0c_to_ub = half
            try:
                super().copy_out()
            finally:
                cube.data_copy_l0c_to_ub = real

    r, want = lesson6.run(lesson6.SmallMatmul, "atlas-training")     # the whole copy: clean
    assert np.array_equal(r.outputs["c"], want)
    half = 64 * 64 * 4 // 2
    with pytest.raises(HazardError, match=r"read of bytes never written: data_copy on core0 "
                       rf"PIPE-MTE3 .* reads core0.UB bytes \[{half}, .*\) of 'CO2'"):
        lesson6.run(HalfCopy, "atlas-training")
    with pytest.raises(HazardError, match="never written"):      # off-line, without numerics
        lesson6.launch = _numerics_off(lesson6.launch)
        lesson6.run(HalfCopy, "atlas-training")


def _numerics_off(launch):
    return lambda *a, **kw: launch(*a, **kw, numerics=False)


def _many_cores(kernel, cores=8, tile=1024, **launch_args):
    n = cores * 4 * tile
    gm = GlobalMemory()
    x, y = (gm.tensor(k, "float16", n, np.ones(n, np.float16)) for k in ("x", "y"))
    z = gm.tensor("z", "float16", n)
    return launch(kernel, chip="atlas-a2", block_dim=cores, gm=gm,
                  args=dict(x=x, y=y, z=z, length=n, tile=tile), outputs={"z": (z, (n,))},
                  **launch_args)


def test_cores_writing_the_same_gm_bytes_are_named_with_the_range():
    broken = _lesson("broken/04_many_cores")
    with pytest.raises(HazardError, match=r"8 cores write the same bytes \[0, 8192\) of GM "
                       r"tensor 'z' without atomics, with no sync_all between them: aiv0, "
                       r"aiv1, aiv2, aiv3 and 4 more\."):
        _many_cores(broken.HalfDiffKernel)
    _many_cores(broken.HalfDiffKernel, sanitize=False)          # the check is the sanitizer's
    solved = _lesson("solutions/04_many_cores")
    _many_cores(solved.HalfDiffKernel)                          # each core its own slice: clean


class _Phases(RotateKernel):
    """Core i writes ws slice i, then after sync_all its neighbour's slice (ordered)."""

    def process(self):
        i, n = get_block_idx(), get_block_num()
        self.move(self.x[i * self.per], self.ws[i * self.per])
        sync_all()
        self.move(self.x[i * self.per], self.ws[((i + 1) % n) * self.per])


class _NoSync(_Phases):
    def process(self):
        i, n = get_block_idx(), get_block_num()
        self.move(self.x[i * self.per], self.ws[i * self.per])
        self.move(self.x[i * self.per], self.ws[((i + 1) % n) * self.per])


class _Atomic(RotateKernel):
    """Every core adds its slice into the first slice of z."""

    def process(self):
        i = get_block_idx()
        set_atomic_add()
        self.move(self.x[i * self.per], self.z)
        set_atomic_none()


def _rotate(kernel):
    n, per = 4, 256
    gm = GlobalMemory()
    x, ws, z = (gm.tensor(k, np.float16, n * per, np.ones(n * per, np.float16))
                for k in ("x", "ws", "z"))
    return launch(kernel, chip="atlas-a2", block_dim=n, gm=gm,
                  args=dict(x=x, ws=ws, z=z, per_core=per), outputs={"z": (z, (n * per,))})


def test_writes_ordered_by_sync_all_or_added_atomically_are_not_findings():
    _rotate(_Phases)
    r = _rotate(_Atomic)
    assert (r.outputs["z"][:256] == 5).all()       # 1 + four adds of 1
    with pytest.raises(HazardError, match=r"2 cores write the same bytes \[0, 512\) of GM "
                       r"tensor 'ws' .*: aiv0, aiv3\."):
        _rotate(_NoSync)
