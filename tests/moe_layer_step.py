"""One MoE transformer layer's training step (forward and backward) as operator calls.

DeepSeek-V3-like sizes: hidden 7168, 256 routed experts of which each token takes 8, expert
FFNs 2048 wide (SwiGLU), one shared expert, RMS norms; attention as 128 heads of 128 (an MHA
stand-in for MLA). One micro-batch of 4096 tokens in bf16 on one device with expert
parallelism 32: the device holds 8 of the 256 experts and, with uniform routing, receives as
many token copies as it sends (4096 x 8 = 32,768). Written out layer by layer here; identical
calls merged with a count; ``tests/test_workload_step.py`` holds
``models/workloads/moe-llm-layer-train-step.toml`` to it, and ``python tests/moe_layer_step.py``
rewrites it.
"""

from pathlib import Path

from resnet50_step import Step

T, H, E, LOCAL, TOPK, F = 4096, 7168, 256, 8, 8, 2048
HEADS, HEAD_DIM = 128, 128
QKV = 3 * HEADS * HEAD_DIM
COPIES = T * TOPK
ATTN = (1, T, HEADS, HEAD_DIM)       # query, key and value in BSND
CAUSAL = {"causal": "true"}
DT = "bfloat16"
WORKLOAD = Path(__file__).resolve().parents[1] / "models/workloads/moe-llm-layer-train-step.toml"


def linear(step, m, k, n, note):
    """y = x W^T (x m x k, W n x k as nn.Linear keeps it): forward."""
    step.add("forward", "matmul", (m, n, k), note, {"mat2": "transposed"}, dtype=DT)


def linear_backward(step, m, k, n, note):
    step.add("backward", "matmul", (m, k, n), f"{note}: gradient by its input",
             {"mat2": "plain"}, dtype=DT)
    step.add("backward", "matmul", (n, k, m), f"{note}: gradient by its weight",
             {"mat2": "plain"}, dtype=DT, batch_dim=2)


def experts(step, phase):
    up = {"experts": str(LOCAL), "n": str(2 * F)}
    down = {"experts": str(LOCAL), "n": str(H)}
    if phase == "forward":
        step.add("forward", "grouped_matmul", (COPIES, H), "routed experts' gate and up", up,
                 dtype=DT)
        step.add("forward", "swi_glu", (COPIES, 2 * F), "routed experts' SwiGLU", dtype=DT)
        step.add("forward", "grouped_matmul", (COPIES, F), "routed experts' down", down,
                 dtype=DT)
        return
    step.add("backward", "grouped_matmul", (COPIES, H), "routed experts' down: gradient by "
             "its input", {"experts": str(LOCAL), "n": str(F), "weight": "transposed"},
             dtype=DT)
    step.add("backward", "grouped_matmul", (F, COPIES), "routed experts' down: gradient by "
             "its weight", {**down, "group_type": "2"}, dtype=DT, batch_dim=1)
    step.add("backward", "swi_glu_grad", (COPIES, 2 * F), "routed experts' SwiGLU gradient",
             dtype=DT)
    step.add("backward", "grouped_matmul", (COPIES, 2 * F), "routed experts' gate and up: "
             "gradient by its input", {"experts": str(LOCAL), "n": str(H),
                                       "weight": "transposed"}, dtype=DT)
    step.add("backward", "grouped_matmul", (H, COPIES), "routed experts' gate and up: "
             "gradient by its weight", {**up, "group_type": "2"}, dtype=DT, batch_dim=1)


def forward(step):
    step.add("forward", "rms_norm", (T, H), "attention's RMS norm", dtype=DT)
    for _ in range(3):      # q, k and v apart: their fused weight (352 M elements) is too big
        linear(step, T, H, QKV // 3, "attention q, k and v projections, one each")
    step.add("forward", "flash_attention_score", ATTN, "attention core: flash attention, "
             "causal (an MHA stand-in for MLA)", CAUSAL, dtype=DT)
    linear(step, T, HEADS * HEAD_DIM, H, "attention output projection")
    step.add("forward", "add", (T, H), "residual add after the attention", dtype=DT)
    step.add("forward", "rms_norm", (T, H), "experts' RMS norm", dtype=DT)
    linear(step, T, H, E, "router logits")
    step.add("forward", "moe_gating_top_k_softmax", (T, E), "router: softmax and top-8",
             {"k": str(TOPK)}, dtype=DT)
    step.add("forward", "moe_token_permute", (T, H), "tokens -> expert order (8 copies each)",
             {"topk": str(TOPK), "experts": str(E)}, dtype=DT)
    experts(step, "forward")
    step.add("forward", "moe_token_unpermute", (T, H), "expert order -> tokens, weighted "
             "by the router's probabilities", {"topk": str(TOPK)}, dtype=DT)
    linear(step, T, H, 2 * F, "shared expert's gate and up")
    step.add("forward", "swi_glu", (T, 2 * F), "shared expert's SwiGLU", dtype=DT)
    linear(step, T, F, H, "shared expert's down")
    step.add("forward", "add", (T, H), "routed and shared experts summed", dtype=DT)
    step.add("forward", "add", (T, H), "residual add after the experts", dtype=DT)


def backward(step):
    linear_backward(step, T, F, H, "shared expert's down")
    step.add("backward", "swi_glu_grad", (T, 2 * F), "shared expert's SwiGLU gradient",
             dtype=DT)
    linear_backward(step, T, H, 2 * F, "shared expert's gate and up")
    step.add("backward", "moe_token_unpermute_grad", (T, H), "unpermute's gradient (and the "
             "probabilities')", {"topk": str(TOPK)}, dtype=DT)
    experts(step, "backward")
    step.add("backward", "moe_token_permute_grad", (T, H), "permute's gradient: each token's "
             "8 copies summed", {"topk": str(TOPK)}, dtype=DT)
    step.add("backward", "softmax_backward", (T, E), "router's gradient through the softmax "
             "(the chosen experts' probabilities' gradients scattered into the row)", dtype=DT)
    linear_backward(step, T, H, E, "router logits")
    step.add("backward", "add", (T, H), "the experts' input gradients summed (routed, shared)",
             dtype=DT)
    step.add("backward", "rms_norm_grad", (T, H), "experts' RMS norm gradient", dtype=DT)
    step.add("backward", "add", (T, H), "residual and experts' branch gradients summed",
             dtype=DT)
    linear_backward(step, T, HEADS * HEAD_DIM, H, "attention output projection")
    step.add("backward", "flash_attention_score_grad", ATTN, "attention core's gradient: P "
             "recomputed from the saved max and sum", CAUSAL, dtype=DT)
    for _ in range(3):
        linear_backward(step, T, H, QKV // 3, "attention q, k and v projections, one each")
    step.add("backward", "rms_norm_grad", (T, H), "attention's RMS norm gradient", dtype=DT)
    step.add("backward", "add", (T, H), "residual and attention's branch gradients summed",
             dtype=DT)


def build() -> Step:
    step = Step()
    forward(step)
    backward(step)
    return step


DESCRIPTION = f"""One training step of one MoE transformer layer (DeepSeek-V3-like: hidden \
{H}, {E} routed experts of which each token takes {TOPK}, {F}-wide SwiGLU experts, one shared \
expert, RMS norms; attention as {HEADS} heads of {HEAD_DIM}, an MHA stand-in for MLA) for one \
micro-batch of {T} tokens in bf16, forward and backward: the norms, the attention's \
projections, the router (logits GEMM, softmax and top-{TOPK}), the permute of the tokens into \
expert order, the experts' grouped GEMMs and SwiGLU, the unpermute weighted by the router's \
probabilities, the shared expert, the residual adds, the attention core (flash attention, \
causal), and every gradient of these (the router's through its softmax). Expert \
parallelism 32: the device holds {LOCAL} of the {E} experts and, with uniform routing, its \
grouped GEMMs see as many token copies as it sends ({COPIES:,}); the all-to-all exchanges \
between permute and experts are communication, not modelled. Not modelled: the optimizer \
(its update belongs to the whole model's step). Generated by \
tests/moe_layer_step.py (python tests/moe_layer_step.py rewrites it), which a test holds it \
to. The batch is the micro-batches of {T} tokens."""


def toml_text(step: Step) -> str:
    from resnet50_step import call_lines

    head = ['name = "moe-llm-layer-train-step"', f'description = """{DESCRIPTION}"""',
            "batch = 1", f'batch_unit = "micro-batches of {T} tokens"', 'formats = "aclnn"']
    return "\n".join(head + call_lines(step)) + "\n"


if __name__ == "__main__":
    WORKLOAD.write_text(toml_text(build()), encoding="utf-8")
    print(f"wrote {WORKLOAD}")
