"""MemSet: the zeroing kernel the runtime launches before a kernel that atomically adds into
an output or workspace.

A TBE kernel whose output is written with atomic adds (Conv2DBackpropFilter splitting its
reduction over cores, kernels.md §2(e)) needs that output zeroed first; CANN does it with a
separate kernel of op type ``MemSet`` (the dynamic-shape TIK op registered as "MemSet" in CANN's
``impl/dynamic/mem_set.py``; MindSpore registers the same TBE op, and the older name was
AtomicAddrClean), which is what msprof lists before the atomic kernel. The TIK kernel splits the
bytes over the cores, fills a UB tile with a vector Duplicate and copies it out tile after
tile: npusim runs ``ZerosKernel`` (``ops/common/fill_cast.py``), which does exactly that.

Modelled: the GM writes, the vector fill, the split over the vector cores. Not modelled: the
TIK kernel's handling of several workspaces in one launch (npusim launches one per tensor).
"""

from npusim.ops.common.fill_cast import ZerosKernel, core_split

OP_TYPE = "MemSet"


def launch_memset(run, dst, total: int) -> None:
    """Zero ``total`` elements of the GM tensor ``dst`` with a MemSet kernel on ``run``."""
    cores, per = core_split(total, dst.dtype.itemsize, run.chip.vector_core_count)
    run.launch(ZerosKernel, block_dim=cores, name=f"MemSet({dst.label})", op_type=OP_TYPE,
               impl="tik", args=dict(dst=dst, total=total, per_core=per))
