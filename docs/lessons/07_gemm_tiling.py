"""Lesson 7: tiling a GEMM, base_k against L0, blocks against cores.

Run: python docs/lessons/07_gemm_tiling.py
"""

import importlib

import numpy as np

from npusim import load_chip
from npusim.cases import find_case
from npusim.cases.run import run_case
from npusim.dsl import Kernel, TPosition, TQue, cube, get_block_idx, get_block_num
from npusim.errors import TilingError
from npusim.face.lesson_specs import ESTIMATES
from npusim.studies.validate.study import load_table

lesson6 = importlib.import_module("06_cube")
F = 16


class TiledMatmul(Kernel):
    """C = A.B on Atlas A2; each core takes m / block_num rows, K in steps of base_k."""

    core_type = "aic"
    base_k = 128         # k elements per L0A/L0B tile
    l0_buffers = 2       # L0A/L0B double buffered: MTE1 loads step i+1 while M runs step i

    def init(self, a, b, c, m, n, k):
        rows = m // get_block_num()                      # this core's block of C: rows x n
        self.a, self.b = a[get_block_idx() * rows * k], b
        self.c, self.m, self.n, self.k = c[get_block_idx() * rows * n], rows, n, k
        bk, nb = self.base_k, self.l0_buffers
        self.a1, self.b1 = TQue(TPosition.A1, 1, name="A1"), TQue(TPosition.B1, 1, name="B1")
        self.a2, self.b2 = TQue(TPosition.A2, nb, name="A2"), TQue(TPosition.B2, nb, name="B2")
        self.co1 = TQue(TPosition.CO1, 1, name="CO1")
        for que, num, nbytes in ((self.a1, 1, rows * k * 2), (self.b1, 1, k * n * 2),
                                 (self.a2, nb, rows * bk * 2), (self.b2, nb, bk * n * 2),
                                 (self.co1, 1, rows * n * 4)):
            self.pipe.init_buffer(que, num, nbytes)

    def process(self):
        m, n, k = self.m, self.n, self.k
        a1, b1 = self.a1.alloc_tensor("float16"), self.b1.alloc_tensor("float16")
        cube.data_copy_nd2nz(a1, self.a, cube.Nd2NzParams(
            n_value=m, d_value=k, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
        cube.data_copy_nd2nz(b1, self.b, cube.Nd2NzParams(
            n_value=k, d_value=n, src_d_value=n, dst_nz_c0_stride=k, dst_nz_n_stride=1))
        self.a1.enque(a1)
        self.b1.enque(b1)
        a1, b1 = self.a1.deque(), self.b1.deque()
        c = self.co1.alloc_tensor("float32")
        for step, k_lo in enumerate(range(0, k, self.base_k)):
            self.load_step(a1, b1, k_lo)
            a2, b2 = self.a2.deque(), self.b2.deque()
            cube.mmad(c, a2, b2, cube.MmadParams(m=m, n=n, k=self.base_k,
                                                 cmatrix_init_val=step == 0))
            self.a2.free_tensor(a2)
            self.b2.free_tensor(b2)
        self.a1.free_tensor(a1)
        self.b1.free_tensor(b1)
        self.co1.enque(c)
        c = self.co1.deque()
        cube.fixpipe(self.c, c, cube.FixpipeParamsV220(m_size=m, n_size=n, src_stride=m,
                                                       dst_stride=n))
        self.co1.free_tensor(c)

    def load_step(self, a1, b1, k_lo):
        """MTE1: the base_k-deep slices of A and B from L1 into L0A / L0B."""
        m1, n1, k1, kt = self.m // F, self.n // F, self.k // F, self.base_k // F
        a2, b2 = self.a2.alloc_tensor("float16"), self.b2.alloc_tensor("float16")
        for mb in range(m1):
            cube.load_data(a2[mb * kt * F * F], a1, cube.LoadData2DParams(
                start_index=(k_lo // F) * m1 + mb, repeat_times=kt, src_stride=m1))
        for kk in range(kt):
            cube.load_data(b2[kk * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=k_lo // F + kk, repeat_times=n1, src_stride=k1, if_transpose=True))
        self.a2.enque(a2)
        self.b2.enque(b2)


def with_base_k(base_k, buffers=2):
    return type(f"TiledMatmul_{base_k}", (TiledMatmul,), {"base_k": base_k,
                                                          "l0_buffers": buffers})


def run(kernel, m=256, n=128, k=512, cores=2):
    return lesson6.run(kernel, m=m, n=n, k=k, block_dim=cores)


def catlass(row):
    """A CATLASS row of the validation table run as the table runs it (npusim's CATLASS-shaped
    kernel, ``ops/catlass/matmul.py``, timing only): (cores, the kernel's cycles)."""
    case = find_case(row.op)
    run = run_case(case, row.model, row.shape, row.dtype, case.parse_params(row.params),
                   tiling=row.tiling or None, numerics=False, trace=False)
    kernel = next(k for k in run.result.stats["kernels"] if k["name"] == row.kernel)
    return kernel["cores"], kernel["cycles"]


def main():
    print(ESTIMATES[7].lines())
    chip = load_chip("atlas-a2")
    print(f"l0a_bytes = {chip.l0a_bytes:,}")
    print(f"l0c_bytes = {chip.l0c_bytes:,}")
    for base_k in (64, 128, 256, 512):
        try:
            r, want = run(with_base_k(base_k))
        except TilingError as exc:
            print(f"base_k {base_k}: TilingError: {exc}")
            continue
        assert np.array_equal(r.outputs["c"].view(np.uint32), want.view(np.uint32))
        print(f"gemm_base_k_{base_k}_cycles = {r.cycles:,}")
    single, _ = run(with_base_k(128, buffers=1))
    print(f"gemm_single_l0_cycles = {single.cycles:,}")
    one, _ = run(with_base_k(64), cores=1)        # 256 rows: base_k 128 would not fit L0A
    print(f"gemm_one_core_cycles = {one.cycles:,}")
    b3 = load_chip("atlas-a2-910b3")
    print(f"catlass_chip_cube_cores = {b3.ai_core_count}")
    rows = {row.id: row for row in load_table()}
    us = {}
    for name, base_m, base_n in (("default", 128, 256), ("tuned", 256, 128)):
        row = rows[f"catlass-1024x576x6144-{name}"]
        blocks = -(-1024 // base_m) * -(-576 // base_n)
        cores, cycles = catlass(row)
        us[name] = (cycles / b3.clock_hz * 1e6, row.value)
        print(f"catlass_{name}_blocks = {blocks}")
        print(f"catlass_{name}_rounds = {-(-blocks // cores)}")
        print(f"catlass_{name}_cycles = {cycles:,}")
        print(f"catlass_{name}_us = {us[name][0]:.1f}")
        print(f"catlass_{name}_measured_us = {row.value}")
    print(f"catlass_ratio = {us['default'][0] / us['tuned'][0]:.2f}")
    print(f"catlass_measured_ratio = {us['default'][1] / us['tuned'][1]:.2f}")


if __name__ == "__main__":
    main()
