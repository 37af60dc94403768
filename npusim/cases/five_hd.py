"""An operator's graph form: its kernels on activations already in NC1HWC0 (5HD).

A framework in graph mode keeps activations and their gradients in NC1HWC0 between layers and
runs no TransData of them around each operator. A case with a ``FiveHD`` (``OpCase.five_hd``)
can run that way: ``run(args, kwargs, **options)`` takes the case's own inputs (NCHW, as
``make`` gives them), places the activations in GM in NC1HWC0 and runs the kernels CANN runs on
that format; the activations it returns are in NC1HWC0, and ``outputs(args, kwargs)`` names
them with their channel count, for ``to_nchw`` (the check against the golden, the tests).

- convolution, convolution_backward: Conv2D / Conv2DBackpropInput / Conv2DBackpropFilter
  (``ops/convolution/graph.py``; the weight's TransData kept).
- batch_norm, batch_norm_backward: the TBE pairs (``ops/batch_norm/graph.py``).
- max_pool2d_with_mask and its backward (the training series): MaxPoolWithArgmaxV1 /
  MaxPoolGradWithArgmaxV1, fp16 (``ops/pooling/mask_graph.py``).
- relu, threshold_backward, add: the same elementwise kernels over the C0-padded element count
  (``elementwise``): a 5HD tensor is a flat array like any other.

Operators without one run as aclnn does in both formats (the study says so per call): A2's
pooling operators, whose CANN kernels read NCHW (NCDHW, ND), the GEMMs and the loss on ND, and
the optimizer on flat parameters.
"""

import copy
from collections.abc import Callable
from dataclasses import dataclass

from npusim.ops.common.five_hd import C0, from_5hd, to_5hd


def four_d(shape, dtype, params) -> str:
    """"" when the graph form takes ``shape`` (an N x C x H x W activation), else why not."""
    return "" if len(shape) == 4 else f"a {len(shape)}-D shape is not an NCHW activation"


def no_padding(shape, dtype, params) -> bool:
    return False


@dataclass(frozen=True, kw_only=True)
class FiveHD:
    """An operator's graph form (module doc)."""

    run: Callable          # (args, kwargs, **run options) -> Result, activations in NC1HWC0
    outputs: Callable      # (args, kwargs) -> {output name: channels} of the NC1HWC0 outputs
    kernels: str           # what runs, for the report
    applies: Callable = four_d        # (shape, dtype, params) -> "" or why it does not apply
    # (shape, dtype, params) -> True when the graph form's kernels do other work than the aclnn
    # run's (elementwise: channels padded to C0); then it is its own point even where the
    # aclnn run converts nothing
    pads: Callable = no_padding

    def to_nchw(self, result, args, kwargs):
        """A copy of ``result`` with its NC1HWC0 outputs read back as NCHW."""
        view = copy.copy(result)
        view.outputs = dict(result.outputs)
        for name, channels in self.outputs(args, kwargs).items():
            if view.outputs.get(name) is not None:
                view.outputs[name] = from_5hd(view.outputs[name], channels)
        return view


def elementwise(name: str, inputs: int, output: str) -> FiveHD:
    """The graph form of an elementwise operator: ``npusim.ops.<name>`` on its first
    ``inputs`` arguments laid out in NC1HWC0 (channels padded to C0 = 16 with zeros)."""
    def run(args, kwargs, **options):
        import npusim.ops

        fives = [to_5hd(a) for a in args[:inputs]]
        return getattr(npusim.ops, name)(*fives, *args[inputs:], **kwargs, **options)

    return FiveHD(run=run, outputs=lambda args, kwargs: {output: args[0].shape[1]},
                  kernels=f"{name}'s kernels over the NC1HWC0 elements (C padded to "
                          f"{C0})",
                  pads=lambda shape, dtype, params: len(shape) == 4 and shape[1] % C0 != 0)
