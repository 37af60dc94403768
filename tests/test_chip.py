"""Chip models: every shipped model loads and is consistent; malformed models are refused."""

import re
from pathlib import Path

import numpy as np
import pytest

import npusim
from npusim.chip import models_dir
from npusim.errors import ChipModelError, NpusimError

A2 = (models_dir() / "atlas-a2.toml").read_text()


def write(tmp_path, text, name="chip.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_chips_lists_every_model():
    assert npusim.chips() == ["atlas-a2", "atlas-a2-910b1", "atlas-a2-910b3", "atlas-a2-910b4",
                              "atlas-inference", "atlas-inference-310p1", "atlas-training"]


def test_shipped_models_match_the_issue(any_chip):
    c = any_chip
    assert c.l0a_bytes == c.l0b_bytes == 64 * 1024
    if c.name == "atlas-training":
        assert (c.topology, c.ai_core_count, c.clock_hz) == ("coupled", 32, 1.0e9)
        assert (c.l1_bytes, c.l0c_bytes, c.ub_bytes) == (1 << 20, 256 << 10, 256 << 10)
        assert c.has_l0c_to_ub and not c.has_fixpipe
        assert "bfloat16" not in c.input_dtypes and "float32" not in c.input_dtypes
        assert c.vector_core_count == 32
    elif c.product == "atlas-inference":   # tests/test_chip_inference.py checks the rest
        assert (c.topology, c.clock_hz, c.memory_kind) == ("coupled", 1.06e9, "LPDDR4X")
        assert c.has_l0c_to_ub and not c.has_fixpipe and not c.has_inter_core_sync
    else:
        assert c.topology == "separated" and c.aiv_per_ai_core == 2
        assert (c.l1_bytes, c.l0c_bytes, c.ub_bytes) == (512 << 10, 128 << 10, 192 << 10)
        assert (c.bias_table_bytes, c.fixpipe_buffer_bytes) == (1024, 7 * 1024)
        assert c.has_fixpipe and {"bfloat16", "float32", "hfloat32"} <= set(c.input_dtypes)
        assert c.b32_cycles_per_fractal == 2 * c.b16_cycles_per_fractal


def test_a2_is_910b2_with_48_aiv():
    c = npusim.load_chip("atlas-a2")
    assert (c.soc, c.ai_core_count, c.vector_core_count, c.clock_hz) == \
        ("Ascend910B2", 24, 48, 1.8e9)
    assert c.l2_bytes == 192 * 2**20 and c.hbm_bytes == 64 * 2**30
    assert c.peak_flops("float16") == pytest.approx(24 * 4096 * 2 * 1.8e9)


def test_every_number_names_a_source(any_chip):
    for key, text in _flat(any_chip.sources).items():
        assert text.strip(), key


def _flat(d, prefix=""):
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {prefix + k: v})
    return out


def test_load_by_path(tmp_path):
    assert npusim.load_chip(write(tmp_path, A2)).ub_bytes == 196608


def test_unknown_chip_names_the_chips():
    with pytest.raises(NpusimError, match="atlas-training"):
        npusim.load_chip("ascend-999")


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("ub_bytes = 196608", "ub_bytes = 196608\nub_kilobytes = 3"),
     r"unknown key buffers\.ub_kilobytes"),
    (lambda t: t.replace("ub_bytes = 196608\n", ""), r"missing key buffers\.ub_bytes"),
    (lambda t: t.replace("l1_bytes = 524288", "l1_bytes = 0"), r"l1_bytes must be positive"),
    (lambda t: t.replace("l1_bytes = 524288", "l1_bytes = -5"), r"l1_bytes must be positive"),
    (lambda t: t.replace("clock_hz = 1.8e9", 'clock_hz = "fast"'), r"chip\.clock_hz must be float"),
    (lambda t: t.replace('topology = "separated"', 'topology = "coupled"'), r"aiv_per_ai_core"),
    (lambda t: t.replace("ub_bytes = 196608", "ub_bytes = 196600"), r"ub_bytes .* multiple of"),
    (lambda t: t.replace("l2_bytes_per_s = 4.8e12", "l2_bytes_per_s = 1.0e12"), r"l2_bytes_per_s"),
    (lambda t: t.replace('"buffers.ub_bytes" = "INI-B2 ub_size=196608; VEC-ARCH"\n', ""),
     r"buffers\.ub_bytes has no entry in \[sources\]"),
    (lambda t: t.replace('"buffers.ub_bytes"', '"buffers.ub_size"'), r"sources\.buffers\.ub_size"),
    (lambda t: t.replace("[features]", "[extras]\nx = 1\n[features]"),
     r"unknown section \[extras\]"),
    (lambda t: t.replace('product = "atlas-a2"', 'product = "atlas-9000"'), r"product"),
    (lambda t: t.replace("add = { f16", "add = { f8 = [1.0, 1.0], f16"), r"vector\.cost\.add\.f8"),
    (lambda t: t + "\n[[", r"not valid TOML"),
])
def test_bad_models_are_refused_naming_file_and_key(tmp_path, edit, message):
    path = write(tmp_path, edit(A2))
    with pytest.raises(ChipModelError, match=message) as info:
        npusim.load_chip(path)
    assert str(path.resolve()) in str(info.value)


def test_missing_file_is_a_chip_model_error(tmp_path):
    with pytest.raises(ChipModelError, match="no such chip model file"):
        npusim.load_chip(tmp_path / "absent.toml")


def test_vector_cost_falls_back_to_f32():
    c = npusim.load_chip("atlas-a2")
    assert c.vector_cost("exp", "f16") == (0.07, 3.89)   # msKPP VEXP FP16
    assert c.vector_cost("div", "int") == c.vector_cost("div", "f32")
    assert re.search("no vector cost", _raises(lambda: c.vector_cost("fly", "f32")))


def _raises(fn) -> str:
    with pytest.raises(NpusimError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("clock_hz = 1.8e9", "clock_hz = nan"), r"chip\.clock_hz must be a finite"),
    (lambda t: t.replace("clock_hz = 1.8e9", "clock_hz = inf"), r"chip\.clock_hz must be a finite"),
    (lambda t: t.replace("hbm_bytes_per_s = 1.6e12", "hbm_bytes_per_s = inf"),
     r"memory\.hbm_bytes_per_s must be a finite"),
    (lambda t: t.replace("ub_to_gm_atomic_bytes_per_cycle = 32.9",
                         "ub_to_gm_atomic_bytes_per_cycle = nan"),
     r"mte\.ub_to_gm_atomic_bytes_per_cycle must be a finite"),
    (lambda t: t.replace("add = { f16 = [4.06, 2.0]", "add = { f16 = [nan, 2.0]"),
     r"vector\.cost\.add\.f16 = \[nan, 2\.0\]"),
    (lambda t: t.replace("add = { f16 = [4.06, 2.0]", "add = { f16 = [4.06, inf]"),
     r"vector\.cost\.add\.f16 = \[4\.06, inf\]"),
    (lambda t: t.replace("add = { f16 = [4.06, 2.0]", 'add = { f16 = [4.06, "x"]'),
     r"vector\.cost\.add\.f16 = \[4\.06, 'x'\]: must be"),
    (lambda t: t.replace("ub_bytes = 196608", "ub_bytes = 1024"), r"ub_bytes .* smallest tiling"),
    (lambda t: t.replace("l1_bytes = 524288", "l1_bytes = 4096"), r"l1_bytes .* smallest tiling"),
    (lambda t: t.replace("ub_bytes = 196608", "ub_bytes = 1099511627776"),
     r"ub_bytes .* more than this host"),
])
def test_non_finite_tiny_or_huge_values_are_refused(tmp_path, edit, message):
    path = write(tmp_path, edit(A2))
    with pytest.raises(ChipModelError, match=message) as info:
        npusim.load_chip(path)
    assert str(path.resolve()) in str(info.value)
    assert len(str(info.value).splitlines()) == 1


def test_a_bad_cost_entry_names_the_key_not_the_whole_table(tmp_path):
    path = write(tmp_path, A2.replace("add = { f16 = [4.06, 2.0]", "add = { f16 = [-1, 2.0]"))
    message = _raises(lambda: npusim.load_chip(path))
    assert "vector.cost.add.f16 = [-1, 2.0]" in message
    assert "exp" not in message and len(message) < 300


def test_non_utf8_file_is_refused(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(A2.replace("# ", "# caf\xe9 ", 1).encode("latin-1"))
    with pytest.raises(ChipModelError, match="not UTF-8"):
        npusim.load_chip(path)


@pytest.mark.parametrize("chip", ["", "   ", ".", 3.5, None])
def test_empty_directory_or_odd_chip_arguments_are_refused(chip):
    with pytest.raises(ChipModelError, match="chip"):
        npusim.load_chip(chip)


def test_an_operator_whose_tensors_exceed_hbm_names_both_sizes(tmp_path):
    small = A2.replace("hbm_bytes = 68719476736", "hbm_bytes = 1048576").replace(
        "l2_bytes = 201326592", "l2_bytes = 524288")
    path = write(tmp_path, small)
    x = np.zeros(1 << 18, np.float16)           # 512 KiB each: with gradInput, 1.5 MiB of GM
    with pytest.raises(npusim.OutOfMemoryError,
                       match=r"1,5\d\d,\d{3} bytes .* 1,048,576 bytes of HBM"):
        npusim.ops.silu_backward(x, x, chip=path)


def test_an_input_larger_than_the_host_is_refused_before_allocating():
    from npusim.chip import host_memory_bytes
    n = host_memory_bytes() // 2 + 1
    huge = np.broadcast_to(np.zeros(1, np.float16), (n,))   # no memory until made contiguous
    with pytest.raises(npusim.OutOfMemoryError, match="host"):
        npusim.ops.silu_backward(huge, huge, chip="atlas-a2", mode="functional")


# -- measured cost tables (npusim/chip/tables.py) ---------------------------------------------

TABLE = (models_dir() / "costs" / "910b" / "gm_to_ub.csv").read_text()


def with_table(tmp_path, text, model_edit=lambda t: t):
    (tmp_path / "costs" / "910b").mkdir(parents=True, exist_ok=True)
    (tmp_path / "costs" / "910b" / "gm_to_ub.csv").write_text(text)
    return write(tmp_path, model_edit(A2))


def test_a_table_is_interpolated_and_clamped():
    c = npusim.load_chip("atlas-a2")
    t = c.rate_tables["gm_to_ub_bytes_per_cycle"]
    gib = 2**30 / 1.8e9
    assert t.rate(1024) == pytest.approx(7.93008 * gib)           # first row
    assert t.rate(100) == t.rate(1024)                             # clamped below
    assert t.rate(1 << 30) == t.plateau == c.gm_to_ub_bytes_per_cycle   # clamped above
    mid = (t.rate(1024) + t.rate(2048)) / 2
    assert c.rate("gm_to_ub_bytes_per_cycle", 1536) == pytest.approx(mid)
    assert c.rate("ub_to_gm_atomic_bytes_per_cycle", 1536) == c.ub_to_gm_atomic_bytes_per_cycle
    assert "GM_TO_UB_910b3" in c.sources["mte.gm_to_ub_bytes_per_cycle"]


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace("2048,", "512,", 1), r"gm_to_ub\.csv:\d+: transfer_bytes 512 not above"),
    (lambda t: t.replace("2048,15.908", "2048,-1"), r"gm_to_ub\.csv:\d+: .*both positive"),
    (lambda t: t.replace("2048,15.908", "2048,x"), r"not 'transfer_bytes,gib_per_s'"),
    (lambda t: t.replace("# unit:", "# units:"), r"'# unit: \.\.\.' missing"),
    (lambda t: t.replace("@065b75cc", "@main"), "names no commit"),
    (lambda t: t.replace("# scale: 1.000000", "# scale: 0"),
     r"scale = '0': must be a positive number"),
    (lambda t: t.split("transfer_bytes,gib_per_s")[0] + "transfer_bytes,gib_per_s\n",
     r"no rows"),
])
def test_a_bad_cost_table_is_refused_with_its_line(tmp_path, edit, message):
    path = with_table(tmp_path, edit(TABLE))
    with pytest.raises(ChipModelError, match=message):
        npusim.load_chip(path)


def test_a_path_takes_its_table_or_its_number_not_both(tmp_path):
    both = with_table(tmp_path, TABLE, lambda t: t.replace(
        "[mte]\n", "[mte]\ngm_to_ub_bytes_per_cycle = 58.6\n"))
    assert "tables.gm_to_ub_bytes_per_cycle too" in _raises(lambda: npusim.load_chip(both))
    bad = write(tmp_path, A2.replace('gm_to_ub_bytes_per_cycle = "costs/910b/gm_to_ub.csv"',
                                     'gm_to_ub_bytes_per_cycle = "costs/910b/absent.csv"'))
    assert "no such cost table file" in _raises(lambda: npusim.load_chip(bad))
    odd = write(tmp_path, A2.replace("[tables]\n", '[tables]\nfly_bytes_per_cycle = "x.csv"\n'))
    assert "tables.fly_bytes_per_cycle names no data path" in _raises(
        lambda: npusim.load_chip(odd))


def test_an_edited_copy_of_a_shipped_model_keeps_its_tables(tmp_path):
    c = npusim.load_chip(write(tmp_path, A2))
    assert c.rate_tables.keys() == npusim.load_chip("atlas-a2").rate_tables.keys()
