"""Scalar-unit DSL calls beyond GetValue/SetValue: reading an input in GM, and the scalar
read-modify-write of one UB element (see ``isa/scalar_gm.py`` for what is modelled)."""

from npusim.dsl.context import issue
from npusim.isa.scalar_gm import GmGetValue, ScalarGetValues, ScalarSetValues, ScalarSubValue


def gm_get_value(tensor, index: int):
    """GlobalTensor.GetValue(index) of an operator input: the value, as a Python number.

    Only for tensors no instruction of the launch writes: the value is read when the kernel is
    recorded (which also makes it available with numerics off)."""
    inst = GmGetValue(src=tensor, index=int(index))
    issue(inst)
    return inst.value()


def scalar_sub_value(dst, index: int, src, src_index: int, src_loaded: bool = False) -> None:
    """dst.SetValue(index, dst.GetValue(index) - src.GetValue(src_index)) on the scalar unit;
    ``src_loaded``: src was read into scalar registers earlier (``get_values``)."""
    issue(ScalarSubValue(dst=dst, index=int(index), src=src, src_index=int(src_index),
                         src_loaded=src_loaded))


def set_values(dst, values) -> None:
    """dst.SetValue(i, values[i]) for every i, consecutive elements (one traced instruction)."""
    issue(ScalarSetValues(dst=dst, values=tuple(values)))


def get_values(src, count: int) -> None:
    """src.GetValue(i) for i < count into scalar registers (one traced instruction)."""
    issue(ScalarGetValues(src=src, count=int(count)))
