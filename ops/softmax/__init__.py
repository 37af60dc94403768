"""aclnnSoftmaxBackward (``backward.py``: CANN's SoftmaxGrad vector kernel) and its argument
rules (``args.py``)."""

from npusim.ops.softmax.backward import softmax_backward

__all__ = ["softmax_backward"]
