"""Which gradWeight kernel aclnnConvolutionBackward launches for a 3-D convolution on Atlas A2.

ops-nn's host code (``conv/convolution_backward/op_api/convolutionbackward.cpp``,
``IsConv3DBackpropFilterV2``, non-regbase branch) picks the Ascend C ``Conv3DBackpropFilterV2``
when the input is float32, any dilation is above 1, groups is above 1, the call is
deterministic, or the shape is a "basic block" (a 2-byte dtype and a kernel of H x W = 1, or of
4, 9 or 16 with gradOutput's channels and kD x kH x kW x input channels, each rounded up to
C0 = 16, at least 128); otherwise the TBE ``Conv3DBackpropFilter``, whose output CANN zeroes
with a MemSet kernel before it (the TBE kernel adds its parts atomically). The V2 kernel
zeroes its output itself (``ops/convolution/cube_dw.py``).

Not modelled: the shape whitelists of that file (``CONV3D_BACKPROP_FILTER_V2_WHITE_LIST`` and
the transdata-merge list), which route a few listed shapes to V2.
"""

from npusim.dtypes import name_of
from npusim.ops.common import round_up

BASIC_BLOCK = 128            # ops-nn BASIC_BLOCK_SIZE_128
BASIC_KERNEL_HW = (4, 9, 16)  # ops-nn KERNEL_HW_4 / 9 / 16


def aclnn_dw_v2(spec, chip) -> bool:
    """Whether aclnn runs gradWeight of ``spec`` (a ConvSpec) as Conv3DBackpropFilterV2."""
    if not chip.separated:
        return False
    if spec.input.ndim != 5:           # 1-D and 2-D: only a deterministic dw is routed to V2
        return False
    dtype = name_of(spec.input.dtype)
    if dtype == "float32" or spec.groups > 1 or any(a.d > 1 for a in spec.axes):
        return True
    return _basic_block(spec, dtype)


def _basic_block(spec, dtype: str) -> bool:
    if dtype not in ("float16", "bfloat16"):
        return False
    kd, kh, kw = spec.weight.shape[2:]
    m = round_up(spec.cout, 16)
    n = kd * kh * kw * round_up(spec.cin, 16)
    return kh * kw == 1 or (kh * kw in BASIC_KERNEL_HW and m >= BASIC_BLOCK and n >= BASIC_BLOCK)
