"""ResNet-50 v1.5's training step as a list of operator calls, derived from the architecture.

torchvision's ``resnet50`` (v1.5: the stride on the bottleneck's 3x3), 224x224 inputs, 1000
classes, trained with mixed precision (fp16 activations and convolutions, fp32 loss, fp32
master weights updated by SGD with momentum). Every layer is written out here from the layer
sizes alone, then identical calls are merged with a count. ``tests/test_workload_step.py``
holds ``models/workloads/resnet50-train-step.toml`` to this list and its FLOPs to the
architecture's published 4.1 GMACs an image; ``python tests/resnet50_step.py`` rewrites the
file.
"""

from pathlib import Path

BATCH = 32
ACT = "float16"
LAYERS = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))   # width, blocks, first stride
WORKLOAD = Path(__file__).resolve().parents[1] / "models/workloads/resnet50-train-step.toml"


class Step:
    """Calls in program order, each (phase, op, shape, dtype, params, note, batch_dim)."""

    def __init__(self):
        self.calls, self.params = [], []

    def add(self, phase, op, shape, note, params=None, dtype=ACT, batch_dim=0):
        self.calls.append((phase, op, "x".join(map(str, shape)), dtype,
                           tuple(sorted((params or {}).items())), note, batch_dim))


def conv_params(cout, k, stride):
    return {"weight": f"{cout}x{k}", "padding": str(k // 2), "stride": str(stride)}


def conv_bn(step, shape, cout, k, stride, note, relu=True):
    """Forward conv -> batch norm (-> ReLU); the shape after it."""
    n, _, h, w = shape
    out = (n, cout, (h + 2 * (k // 2) - k) // stride + 1, (w + 2 * (k // 2) - k) // stride + 1)
    step.add("forward", "convolution", shape, f"{note} conv", conv_params(cout, k, stride))
    step.add("forward", "batch_norm", out, f"{note} batch norm")
    if relu:
        step.add("forward", "relu", out, f"{note} ReLU")
    step.params += [("conv", cout * shape[1] * k * k), ("bn", cout), ("bn", cout)]
    return out


def conv_bn_backward(step, shape, cout, k, stride, note, relu=True, dx=True):
    """The backward of conv_bn, in reverse order."""
    n, _, h, w = shape
    out = (n, cout, (h + 2 * (k // 2) - k) // stride + 1, (w + 2 * (k // 2) - k) // stride + 1)
    if relu:
        step.add("backward", "threshold_backward", out, f"{note} ReLU's gradient")
    step.add("backward", "batch_norm_backward", out, f"{note} batch norm's gradient")
    mask = "1,1,0" if dx else "0,1,0"
    step.add("backward", "convolution_backward", shape, f"{note} conv's gradient",
             {**conv_params(cout, k, stride), "output_mask": mask})


def blocks():
    """(input shape, width, stride, downsample, name) of each bottleneck block."""
    shape, out = (BATCH, 64, 56, 56), []
    for li, (width, count, stride) in enumerate(LAYERS, 1):
        for b in range(count):
            s = stride if b == 0 else 1
            out.append((shape, width, s, b == 0, f"layer{li}"))
            shape = (BATCH, 4 * width, shape[2] // s, shape[3] // s)
    return out


def bottleneck(step, shape, width, stride, down, name):
    mid = conv_bn(step, shape, width, 1, 1, f"{name} 1x1 {shape[1]}->{width}")
    mid = conv_bn(step, mid, width, 3, stride, f"{name} 3x3{'/2' if stride > 1 else ''}")
    out = conv_bn(step, mid, 4 * width, 1, 1, f"{name} 1x1 {width}->{4 * width}", relu=False)
    if down:
        conv_bn(step, shape, 4 * width, 1, stride, f"{name} downsample", relu=False)
    step.add("forward", "add", out, f"{name} residual add")
    step.add("forward", "relu", out, f"{name} ReLU after the add")


def bottleneck_backward(step, shape, width, stride, down, name):
    n, _, h, w = shape
    mid = (n, width, h, w)
    low = (n, width, h // stride, w // stride)
    out = (n, 4 * width, h // stride, w // stride)
    step.add("backward", "threshold_backward", out, f"{name} ReLU after the add, gradient")
    if down:
        conv_bn_backward(step, shape, 4 * width, 1, stride, f"{name} downsample", relu=False)
    conv_bn_backward(step, low, 4 * width, 1, 1, f"{name} 1x1 {width}->{4 * width}",
                     relu=False)
    conv_bn_backward(step, mid, width, 3, stride, f"{name} 3x3{'/2' if stride > 1 else ''}")
    conv_bn_backward(step, shape, width, 1, 1, f"{name} 1x1 {shape[1]}->{width}")
    step.add("backward", "add", shape, f"{name} gradients of the two branches summed")


def build() -> Step:
    step = Step()
    image = (BATCH, 3, 224, 224)
    stem = conv_bn(step, image, 64, 7, 2, "stem 7x7/2")
    pool = {"kernel_size": "3", "stride": "2", "padding": "1"}
    step.calls.append(("forward", "max_pool2d_with_indices", "x".join(map(str, stem)), ACT,
                       tuple(sorted(pool.items())), "stem max pool 3x3/2", 0, 1,
                       ("atlas-a2",)))
    step.calls.append(("forward", "max_pool2d_with_mask", "x".join(map(str, stem)), ACT,
                       tuple(sorted(pool.items())),
                       "stem max pool 3x3/2 (the training series: a bit mask)", 0, 1,
                       ("atlas-training",)))
    for b in blocks():
        bottleneck(step, *b)
    step.add("forward", "adaptive_avg_pool2d", (BATCH, 2048, 7, 7), "global average pool")
    step.add("forward", "matmul", (BATCH, 1000, 2048), "fc 2048->1000",
             {"mat2": "transposed"})
    step.params += [("fc", 1000 * 2048), ("fc", 1000)]
    loss = "x".join(map(str, (BATCH, 1000)))
    step.calls.append(("forward", "cross_entropy_loss", loss, "float32",
                       (("reduction", "mean"),), "the loss: log-softmax and NLL", 0, 1,
                       ("atlas-a2",)))
    step.calls.append(("forward", "log_softmax", loss, "float32", (),
                       "the loss's log-softmax (the training series)", 0, 1,
                       ("atlas-training",)))
    step.calls.append(("forward", "nll_loss", loss, "float32", (("reduction", "mean"),),
                       "the loss's NLL (the training series)", 0, 1, ("atlas-training",)))
    loss_backward(step)
    for b in reversed(blocks()):
        bottleneck_backward(step, *b)
    step.calls.append(("backward", "max_pool2d_with_indices_backward", "x".join(map(str, stem)),
                       "float32", tuple(sorted(pool.items())),
                       "stem max pool's gradient (fp32: the only dtype CANN's A2 kernel takes)",
                       0, 1, ("atlas-a2",)))
    step.calls.append(("backward", "max_pool2d_with_mask_backward", "x".join(map(str, stem)),
                       ACT, tuple(sorted(pool.items())),
                       "stem max pool's gradient (the training series, by the mask)", 0, 1,
                       ("atlas-training",)))
    conv_bn_backward(step, image, 64, 7, 2, "stem 7x7/2", dx=False)
    optimizer(step)
    return step


def loss_backward(step):
    loss = "x".join(map(str, (BATCH, 1000)))
    step.calls.append(("backward", "cross_entropy_loss_grad", loss, "float32",
                       (("reduction", "mean"),), "the loss's gradient", 0, 1,
                       ("atlas-a2",)))
    step.calls.append(("backward", "nll_loss_backward", loss, "float32",
                       (("reduction", "mean"),), "the NLL's gradient (the training series)", 0,
                       1, ("atlas-training",)))
    step.calls.append(("backward", "log_softmax_backward", loss, "float32", (),
                       "the log-softmax's gradient (the training series)", 0, 1,
                       ("atlas-training",)))
    step.add("backward", "matmul", (BATCH, 2048, 1000), "fc's gradient by its input",
             {"mat2": "plain"})
    step.add("backward", "matmul", (1000, 2048, BATCH), "fc's gradient by its weight",
             {"mat2": "plain"}, batch_dim=2)
    step.add("backward", "adaptive_avg_pool2d_backward", (BATCH, 2048, 7, 7),
             "global average pool's gradient")


LR, MOMENTUM, DECAY = 0.1, 0.9, 1e-4
FOREACH = (("foreach_add_list_v2", 16, {"alpha": str(DECAY)}, "grad + weight decay x param"),
           ("foreach_mul_scalar_v2", 48, {"scalar": str(MOMENTUM)}, "momentum x buf"),
           ("foreach_add_list_v2", 24, {"alpha": "1"}, "buf += grad"),
           ("foreach_add_list_v2", 24, {"alpha": str(-LR)}, "param -= lr x buf"))
PER_TENSOR = (("add", {"alpha": str(DECAY)}, "grad + weight decay x param"),
              ("muls", {"other": str(MOMENTUM)}, "momentum x buf"),
              ("add", {"alpha": "1"}, "buf += grad"),
              ("add", {"alpha": str(-LR)}, "param -= lr x buf"))


def optimizer(step):
    """torch.optim.SGD's step in model.parameters() order: on Atlas A2 its foreach kernels,
    the list cut as op-plugin cuts it (16 tensors an out-of-place add, 48 a mul_, 24 an add_);
    on the training series (no foreach there) one aclnnAdd / aclnnMuls per tensor."""
    sizes = [n for _, n in step.params]
    for op, chunk, params, what in FOREACH:
        for i in range(0, len(sizes), chunk):
            part = sizes[i:i + chunk]
            step.calls.append(("optimizer", op, str(sum(part)), "float32",
                               tuple(sorted({**params, "sizes": ",".join(map(str, part))}
                                            .items())),
                               f"SGD on A2: {what}", None, 1, ("atlas-a2",)))
    for op, params, what in PER_TENSOR:
        for size in sorted(set(sizes), reverse=True):
            step.calls.append(("optimizer", op, str(size), "float32", tuple(params.items()),
                               f"SGD on the training series: {what}", None,
                               sizes.count(size), ("atlas-training",)))


def merged(step: Step) -> list:
    """[(phase, op, shape, dtype, params, notes, batch_dim, count, products)] in first-seen
    order."""
    out = {}
    for call in step.calls:
        phase, op, shape, dtype, params, note, dim = call[:7]
        n, products = (call[7], call[8]) if len(call) > 7 else (1, ())
        key = (phase, op, shape, dtype, params, products)
        if key in out:
            out[key][1] += n
            if note and note not in out[key][0]:
                out[key][0].append(note)
        else:
            out[key] = [[note] if note else [], n, dim]
    return [(*k[:5], v[0], v[2], v[1], k[5]) for k, v in out.items()]


DESCRIPTION = """One training step of ResNet-50 v1.5 (torchvision layout, 224x224 images, 1000 \
classes) at batch 32 with mixed precision: every call of the forward pass (53 convolutions, \
each followed by batch norm; the ReLUs, the stem's max pool, the 16 residual adds, the global \
average pool, the fully connected layer and the loss: fp16 activations, the loss in fp32), the \
backward pass (the loss's gradient, the fully connected layer's two GEMMs, every ReLU's, batch \
norm's and convolution's gradient, the sums where a block's two branches meet, the max pool's \
gradient) and the optimizer (SGD with momentum 0.9 and weight decay 1e-4 over the 161 parameter \
tensors, 25,557,032 fp32 parameters: as torch_npu runs torch.optim.SGD, its foreach kernels on \
Atlas A2 and one aclnnAdd or aclnnMuls a tensor on the training series, which has no foreach \
kernels; products = [...] says which calls each runs). The loss's forward \
(aclnnCrossEntropyLoss) and gradient are Atlas A2 only in CANN: the training series runs the \
loss as torch's cross_entropy runs there, aclnnLogSoftmax and aclnnNLLLoss, backward \
aclnnNLLLossBackward and aclnnLogSoftmaxBackward. The stem's max pool and its gradient \
(aclnnMaxPool2dWithIndices and its backward, A2 only) run on the training series as torch_npu \
runs them there: aclnnMaxPool2dWithMask and its backward (fp16, a bit mask for the \
indices). \
Each call says its phase; identical calls are merged with a count. \
Generated from the architecture by tests/resnet50_step.py (python tests/resnet50_step.py \
rewrites it), which a test holds it to. batch_dim marks each call's batch dimension, so npusim \
predict --batch N rescales the step."""


def toml_text(step: Step) -> str:
    head = ['name = "resnet50-train-step"', f'description = """{DESCRIPTION}"""',
            f"batch = {BATCH}", 'batch_unit = "images"', 'formats = "aclnn"']
    return "\n".join(head + call_lines(step)) + "\n"


def call_lines(step: Step) -> list:
    """The [[call]] tables of the merged calls, as TOML lines."""
    lines = []
    for phase, op, shape, dtype, params, notes, dim, count, products in merged(step):
        lines += ["", "[[call]]", f'phase = "{phase}"', f'op = "{op}"']
        if products:
            lines.append("products = [" + ", ".join(f'"{p}"' for p in products) + "]")
        if notes:
            lines.append(f'note = "{"; ".join(notes)}"')
        lines += [f'shape = "{shape}"', f'dtype = "{dtype}"']
        if params:
            lines.append("params = { " + ", ".join(f'{k} = "{v}"' for k, v in params) + " }")
        lines.append(f"count = {count}")
        if dim is not None:
            lines.append(f"batch_dim = {dim}")
    return lines


if __name__ == "__main__":
    WORKLOAD.write_text(toml_text(build()), encoding="utf-8")
    print(f"wrote {WORKLOAD}")
