"""A newcomer's first minutes: what ``import npusim`` reaches, short reprs, the help that says
what an operator takes, derived tiling fields, and the defaults that let 1-D and 3-D
convolutions run without arguments they should not need."""

import subprocess
import sys

import numpy as np

import npusim
from npusim.face.cli import main


def test_import_npusim_reaches_ops_aclnn_and_golden_lazily():
    code = ("import sys, npusim; assert 'npusim.ops' not in sys.modules; "
            "print(npusim.ops.silu_backward.__name__, npusim.aclnn.aclnnSiluBackward.__name__, "
            "npusim.golden.silu_backward.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["silu_backward", "aclnnSiluBackward", "silu_backward"]


def test_result_and_chip_reprs_are_short_and_say_what_matters():
    x = np.ones((64, 64), np.float16)
    r = npusim.ops.silu_backward(x, x)
    text = repr(r)
    assert len(text) < 400, len(text)
    for part in ("atlas-a2", "cycles", "gradInput: float16 (64, 64)", "SiluBackwardTiling"):
        assert part in text
    chip = repr(npusim.load_chip("atlas-training"))
    assert len(chip) < 200 and "Ascend910" in chip and "32 coupled cores" in chip


def test_conv_help_says_dimensions_fields_and_an_example(capsys):
    try:
        main(["run", "convolution_backward", "--help"])
    except SystemExit:
        pass
    out = capsys.readouterr().out
    for text in ("1-D", "2-D", "3-D", "tiling fields", "base_n", "dw_k_parts", "deterministic",
                 "npusim run convolution_backward --shape"):
        assert text in out, text


def test_compare_functional_shows_dashes_not_zero_timing(capsys):
    assert main(["compare", "silu_backward", "--shape", "64x64", "--mode", "functional"]) == 0
    out = capsys.readouterr().out
    rows = {line.split("  ")[0]: line for line in out.splitlines()}
    for label in ("cycles", "time (us)", "achieved TB/s", "of roofline"):
        cells = rows[label].split()[-2:]
        assert cells == ["-", "-"], rows[label]
    assert "0.00" not in rows["achieved TB/s"]


def test_buffer_num_alone_derives_a_tile_that_fits():
    x = np.ones(100, np.float16)
    for buffers in (1, 2):
        r = npusim.ops.silu_backward(x, x, tiling={"buffer_num": buffers})
        assert r.tiling.buffer_num == buffers
        assert np.array_equal(r.outputs["gradInput"], npusim.golden.silu_backward(x, x))


def test_1d_and_3d_convolutions_need_no_output_padding():
    rng = np.random.default_rng(0)
    for sp, ks in (((10,), (3,)), ((4, 6, 6), (3, 3, 3))):
        x = rng.standard_normal((1, 16, *sp)).astype(np.float16)
        w = rng.standard_normal((16, 16, *ks)).astype(np.float16)
        dy = rng.standard_normal((1, 16, *(s - k + 1 for s, k in zip(sp, ks, strict=True))))
        nsp = len(sp)
        r = npusim.ops.convolution_backward(dy.astype(np.float16), x, w, bias_sizes=(16,),
                                            stride=(1,) * nsp, padding=(0,) * nsp,
                                            dilation=(1,) * nsp, mode="functional")
        assert r.outputs["gradWeight"].shape == w.shape
