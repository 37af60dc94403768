"""Lesson 6: the cube path, a small matmul from scratch. Run: python docs/lessons/06_cube.py

C (m x n, float32) = A (m x k, float16) . B (k x n, float16) on one cube core. The whole
problem sits in L1 and in L0A/L0B/L0C at once: m, n, k multiples of 16 and small.
"""

from pathlib import Path

import numpy as np

from npusim.dsl import DataCopyParams, Kernel, TPosition, TQue, cube, current, data_copy
from npusim.engine.launch import launch
from npusim.engine.memory import GlobalMemory
from npusim.face import plot
from npusim.face.lesson_specs import ESTIMATES, matmul_golden

FIGURES = Path(__file__).parent / "figures"
F = 16      # a fractal is 16 x 16 float16 values: 512 bytes, what the cube takes per step


class SmallMatmul(Kernel):
    core_type = "aic"          # on Atlas A2, a cube core (AIC) runs it

    def init(self, a, b, c, m, n, k):
        self.a, self.b, self.c, self.m, self.n, self.k = a, b, c, m, n, k
        self.fixpipe = current().chip.has_fixpipe      # Atlas A2: yes; Atlas training: no
        self.q = {pos: TQue(pos, 1, name=name) for pos, name in (
            (TPosition.A1, "A1"), (TPosition.B1, "B1"), (TPosition.A2, "A2"),
            (TPosition.B2, "B2"), (TPosition.CO1, "CO1"), (TPosition.CO2, "CO2"))}
        sizes = {TPosition.A1: m * k * 2, TPosition.B1: k * n * 2, TPosition.A2: m * k * 2,
                 TPosition.B2: k * n * 2, TPosition.CO1: m * n * 4, TPosition.CO2: m * n * 4}
        for pos, nbytes in sizes.items():
            if pos != TPosition.CO2 or not self.fixpipe:   # CO2 (UB) only on the 910
                self.pipe.init_buffer(self.q[pos], 1, nbytes)

    def process(self):
        self.copy_in()
        self.split()
        self.compute()
        self.copy_out()

    def copy_in(self):
        """MTE2: GM (row-major, ND) -> L1 in the cube's fractal layout (NZ)."""
        m, n, k = self.m, self.n, self.k
        a1, b1 = self.q["A1"].alloc_tensor("float16"), self.q["B1"].alloc_tensor("float16")
        if self.fixpipe:     # A2's MTE2 converts ND -> NZ on the way
            cube.data_copy_nd2nz(a1, self.a, cube.Nd2NzParams(
                n_value=m, d_value=k, src_d_value=k, dst_nz_c0_stride=m, dst_nz_n_stride=1))
            cube.data_copy_nd2nz(b1, self.b, cube.Nd2NzParams(
                n_value=k, d_value=n, src_d_value=n, dst_nz_c0_stride=k, dst_nz_n_stride=1))
        else:                # the 910: one strided copy per 16-column block
            for kb in range(k // F):
                data_copy(a1[kb * m * F], self.a[kb * F], DataCopyParams(
                    block_count=m, block_len=1, src_stride=(k - F) // F))
            for nb in range(n // F):
                data_copy(b1[nb * k * F], self.b[nb * F], DataCopyParams(
                    block_count=k, block_len=1, src_stride=(n - F) // F))
        self.q["A1"].enque(a1)
        self.q["B1"].enque(b1)

    def split(self):
        """MTE1: L1 -> L0A (A's fractals row by row) and L0B (B's, each transposed)."""
        m1, n1, k1 = self.m // F, self.n // F, self.k // F
        a1, b1 = self.q["A1"].deque(), self.q["B1"].deque()
        a2, b2 = self.q["A2"].alloc_tensor("float16"), self.q["B2"].alloc_tensor("float16")
        for mb in range(m1):
            cube.load_data(a2[mb * k1 * F * F], a1, cube.LoadData2DParams(
                start_index=mb, repeat_times=k1, src_stride=m1))
        for kb in range(k1):
            cube.load_data(b2[kb * n1 * F * F], b1, cube.LoadData2DParams(
                start_index=kb, repeat_times=n1, src_stride=k1, if_transpose=True))
        self.q["A2"].enque(a2)
        self.q["B2"].enque(b2)
        self.q["A1"].free_tensor(a1)
        self.q["B1"].free_tensor(b1)

    def compute(self):
        """M: one Mmad, C = A.B into L0C in float32."""
        a2, b2 = self.q["A2"].deque(), self.q["B2"].deque()
        c = self.q["CO1"].alloc_tensor("float32")
        cube.mmad(c, a2, b2, cube.MmadParams(m=self.m, n=self.n, k=self.k))
        self.q["CO1"].enque(c)
        self.q["A2"].free_tensor(a2)
        self.q["B2"].free_tensor(b2)

    def copy_out(self):
        """A2: FixPipe L0C -> GM (NZ -> ND). The 910: V copies L0C -> UB, MTE3 UB -> GM."""
        m, n = self.m, self.n
        c = self.q["CO1"].deque()
        if self.fixpipe:
            cube.fixpipe(self.c, c, cube.FixpipeParamsV220(m_size=m, n_size=n, src_stride=m,
                                                           dst_stride=n))
            self.q["CO1"].free_tensor(c)
            return
        co2 = self.q["CO2"].alloc_tensor("float32")
        cube.data_copy_l0c_to_ub(co2, c, DataCopyParams(block_len=(m // F) * (n // F)))
        self.q["CO2"].enque(co2)
        self.q["CO1"].free_tensor(c)
        co2 = self.q["CO2"].deque()
        for nb in range(n // F):     # NZ column block nb: m rows of 16 float32 = 64 bytes
            data_copy(self.c[nb * F], co2[nb * m * F], DataCopyParams(
                block_count=m, block_len=2, dst_stride=(n - F) * 4 // 32))
        self.q["CO2"].free_tensor(co2)


def run(kernel, chip="atlas-a2", m=64, n=64, k=64, seed=0, block_dim=1):
    rng = np.random.default_rng(seed)
    a0 = rng.uniform(-1, 1, (m, k)).astype(np.float16)
    b0 = rng.uniform(-1, 1, (k, n)).astype(np.float16)
    gm = GlobalMemory()
    a, b = gm.tensor("a", "float16", m * k, a0), gm.tensor("b", "float16", k * n, b0)
    c = gm.tensor("c", "float32", m * n)
    r = launch(kernel, chip=chip, block_dim=block_dim, gm=gm,
               args=dict(a=a, b=b, c=c, m=m, n=n, k=k),
               outputs={"c": (c, (m, n))})
    return r, matmul_golden(a0, b0)


def main():
    print(ESTIMATES[6].lines())
    FIGURES.mkdir(exist_ok=True)
    runs = {}
    for chip in ("atlas-a2", "atlas-training"):
        r, want = run(SmallMatmul, chip)
        runs[chip] = r
        key = chip.replace("-", "_")
        print(f"{key}_exact =", np.array_equal(r.outputs["c"].view(np.uint32),
                                              want.view(np.uint32)))
        print(f"{key}_cycles = {r.cycles:,}")
        for pipe, cycles in r.stats["per_core"][r.stats["core_labels"][0]].items():
            print(f"{key}_{pipe.lower()}_busy = {cycles['busy_cycles']:,.0f}")
        plot.pipeline(r, FIGURES / f"06_matmul_{chip}.png")
    print(runs["atlas-a2"].line_trace(core=0))


if __name__ == "__main__":
    main()
