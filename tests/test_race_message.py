"""The race detector as a teacher (issue 42, item 1): for each flag of a pair missing, the
message says which access came first (read after write, write after read), which run of each
instruction it was, the queue's name, and the hand-off that would order the two; and the two
flags of a pair give two different messages, each naming its own fix."""

import pytest

import npusim.engine.timed as engine
from npusim.errors import HazardError
from npusim.micro.vector import run_vector

_INIT = engine.TimedEngine.__init__


def _without(monkeypatch, src: str, dst: str) -> str:
    """The HazardError message of the vector micro-kernel (3 tiles, one buffer per queue) with
    one tile's ``wait_flag(src, dst)`` removed (both of them between MTE2 and V: x's and y's
    queues are handed over together, so the one left would order both)."""
    count = 2 if "MTE2" in (src, dst) else 1

    def init(self, chip, cores, gm, **kw):
        (core,) = cores
        waits = [j for j, inst in enumerate(core.stream)
                 if inst.kind == "wait" and inst.key[:2] == (src, dst)][:count]
        assert len(waits) == count, f"no wait_flag({src}, {dst}) in the stream"
        core.stream = [inst for j, inst in enumerate(core.stream) if j not in waits]
        _INIT(self, chip, cores, gm, **kw)

    monkeypatch.setattr(engine.TimedEngine, "__init__", init)
    with pytest.raises(HazardError) as caught:
        run_vector("add", tiles=3, tile_length=1024, buffer_num=1, numerics=False)
    return str(caught.value)


def test_missing_mte2_to_v_is_a_read_after_write_fixed_by_enque_and_deque(monkeypatch):
    msg = _without(monkeypatch, "MTE2", "V")
    assert "(read after write)" in msg
    assert "'inQueueX'" in msg or "'inQueueY'" in msg
    assert "the 1st data_copy on aiv0 PIPE-MTE2 writes them, then the 1st add on aiv0 " \
        "PIPE-V reads them" in msg
    assert "enque the tensor of" in msg and "deque it before the add" in msg
    assert "set_flag(HardEvent.MTE2_V, id)" in msg


def test_missing_v_to_mte2_is_a_write_after_read_fixed_by_free_and_alloc(monkeypatch):
    msg = _without(monkeypatch, "V", "MTE2")
    assert "(write after read)" in msg
    assert "add on aiv0 PIPE-V reads them, then the 3rd data_copy on aiv0 PIPE-MTE2 " \
        "writes them" in msg
    assert "free_tensor the tensor of" in msg and "alloc_tensor it again before the " \
        "data_copy" in msg
    assert "set_flag(HardEvent.V_MTE2, id)" in msg


def test_missing_v_to_mte3_is_a_read_after_write_on_the_output_queue(monkeypatch):
    msg = _without(monkeypatch, "V", "MTE3")
    assert "of 'outQueueZ' (read after write)" in msg
    assert "the 1st add on aiv0 PIPE-V writes them, then the 1st data_copy on aiv0 " \
        "PIPE-MTE3 reads them" in msg
    assert "enque the tensor of 'outQueueZ' after the add and deque it before the " \
        "data_copy" in msg
    assert "set_flag(HardEvent.V_MTE3, id)" in msg


def test_missing_mte3_to_v_is_a_write_after_read_on_the_output_queue(monkeypatch):
    msg = _without(monkeypatch, "MTE3", "V")
    assert "of 'outQueueZ' (write after read)" in msg
    assert "the 1st data_copy on aiv0 PIPE-MTE3 reads them, then the 2nd add on aiv0 " \
        "PIPE-V writes them" in msg
    assert "free_tensor the tensor of 'outQueueZ' after the data_copy and alloc_tensor " \
        "it again before the add" in msg
    assert "set_flag(HardEvent.MTE3_V, id)" in msg


def test_the_two_flags_of_a_pair_give_different_messages(monkeypatch):
    for a, b in (("MTE2", "V"), ("V", "MTE3")):
        assert _without(monkeypatch, a, b) != _without(monkeypatch, b, a)


@pytest.mark.parametrize("dropped", ["V_S", "S_V", "MTE2_V"])
def test_a_kernel_with_sync_all_names_the_flag_it_lost(monkeypatch, dropped):
    """CrossEntropyLossGrad's cores meet at a SyncAll, so the program-order check cannot give
    the verdict; it still gives the words: the fix named is the flag taken out (V_S: the scalar
    read nll before V wrote it, a read after write, not the write after read of simulated
    time, where the scalar ran ahead)."""
    from test_op_cross_entropy_loss_grad import inputs

    import npusim.ops.cross_entropy.kernel as ce_kernel
    from npusim import ops

    keep = ce_kernel.sync
    monkeypatch.setattr(ce_kernel, "sync", lambda event: None if event == dropped else
                        keep(event))
    with pytest.raises(HazardError) as caught:
        ops.cross_entropy_loss_grad(*inputs(8, 300, "float16", ignored=0.0))
    assert "(read after write)" in str(caught.value)
    assert f"set_flag(HardEvent.{dropped}, id)" in str(caught.value)
