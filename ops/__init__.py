"""The aclnn operators npusim models, each a host tiling plus Ascend C-style kernels."""

from npusim.ops.silu_backward import silu_backward

__all__ = ["silu_backward"]
