"""img2col (LoadData3D) cost of large kernels, held against the published band (issue 16,
item 3b). PERF-LOAD (asc-devkit tests/perf/load_data_perf) gives Load3Dv2 on dav-2201 as
32-256 B/cycle into L0A and 28.4-128 B/cycle into L0B, 50 cycles of latency; npusim charges
one rate per output byte for each (``mte.load3d_bytes_per_cycle`` into L0A,
``mte.load3d_l0b_bytes_per_cycle`` into L0B), each inside its band, and a k x k kernel's
img2col costs k^2 times the bytes of a 1x1 on the same map.
"""

import numpy as np
import pytest
from test_op_convolution_backward import make_case

from npusim import load_chip, ops
from npusim.chip import models_dir
from npusim.errors import ChipModelError

A2S = ("atlas-a2", "atlas-a2-910b1", "atlas-a2-910b3", "atlas-a2-910b4")


@pytest.mark.parametrize("chip", A2S)
def test_a2_load3d_rates_inside_their_published_bands(chip):
    c = load_chip(chip)
    assert 32 <= c.load3d_bytes_per_cycle <= 256
    assert 28.4 <= c.load3d_l0b_bytes_per_cycle <= 128
    assert c.load3d_startup_cycles == 50


@pytest.mark.parametrize("chip", ["atlas-a2", "atlas-training"])
def test_large_kernel_img2col_is_charged_per_output_byte(chip):
    """dx of a 5 x 5 kernel against a 1 x 1 on the same 16 x 16 map (one channel block): 25
    times the img2col bytes into L0A, and the MTE1 time of the cube cores at least those bytes
    over the chip's LoadData3D rate."""
    c = load_chip(chip)
    got = {}
    for k, p in ((1, 0), (5, 2)):
        cfg = dict(stride=[1, 1], padding=[p, p], dilation=[1, 1])
        dy, x, w = make_case(np.float16, 1, 16, 16, (16, 16), (k, k), cfg)
        r = ops.convolution_backward(dy, x, w, bias_sizes=[16], **cfg, chip=chip,
                                     output_mask=(True, False, False), numerics=False)
        mte1 = sum(pipes["MTE1"]["busy_cycles"] for pipes in r.stats["per_core"].values()
                   if "MTE1" in pipes)
        got[k] = (r.stats["bytes_by_path"]["L1->L0A (img2col)"], mte1)
    assert got[5][0] == 25 * got[1][0] == 25 * 256 * 16 * 2
    assert got[5][1] >= got[5][0] / c.load3d_bytes_per_cycle


def test_a_model_written_before_the_l0b_rate_charges_its_l0a_rate(tmp_path):
    """A chip file without ``load3d_l0b_bytes_per_cycle`` (written before the key) loads, with
    L0B img2col at its one Load3D rate, as npusim charged then; without either rate it is an
    error naming the missing key."""
    text = (models_dir() / "atlas-a2.toml").read_text()
    keyed = ("load3d_l0b", "mte.load3d_l0b")   # the value and its source
    old = "\n".join(line for line in text.splitlines() if not line.lstrip('"').startswith(keyed))
    assert len(old.splitlines()) == len(text.splitlines()) - 2
    path = tmp_path / "old.toml"
    path.write_text(old)
    c = load_chip(path)
    assert c.load3d_l0b_bytes_per_cycle == c.load3d_bytes_per_cycle == 128
    path.write_text("\n".join(line for line in old.splitlines()
                              if not line.startswith("load3d_bytes_per_cycle")))
    with pytest.raises(ChipModelError, match="missing key mte.load3d_bytes_per_cycle"):
        load_chip(path)
