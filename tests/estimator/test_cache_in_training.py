"""What lives until the loss is computed in transformers 4.x's GPTBigCode under autocast.

A tiny GPTBigCode (n_embd 64, 2 layers, 4 heads with one shared key/value head, so its
fused c_attn projects 64 + 2 x 16 = 96 wide; vocabulary 512) trained with QLoRA in bf16
autocast over 128-token samples, checkpointed: its forward kept ``config.use_cache``
under gradient checkpointing, so each layer's present, a view of the whole c_attn
output, lives until the loss is computed; the model's own loss runs cross-entropy on the
16-bit logits, which autocast and accelerate turn into 12 B per logit when it returns.
"""

from __future__ import annotations

from dataclasses import replace

from estimator import Workload
from tests.estimator.phase_terms import activations_at

CONFIG = {
    "model_type": "gpt_bigcode",
    "architectures": ["GPTBigCodeForCausalLM"],
    "n_embd": 64,
    "n_layer": 2,
    "n_head": 4,
    "n_inner": 256,
    "multi_query": True,
    "vocab_size": 512,
    "n_positions": 128,
    "activation_function": "gelu_pytorch_tanh",
}
W = Workload(
    method="qlora",
    batch=1,
    seq_len=128,
    grad_checkpointing=True,
    pure_16bit=False,
    kbit_prepare=False,
    loss_upcast=False,
    lora_targets=("c_attn",),
)


def end_of_forward(w: Workload) -> float:
    return activations_at(CONFIG, w, "end of forward") / w.batch


def test_every_layers_present_keeps_its_whole_fused_projection_until_the_loss() -> None:
    kept = end_of_forward(replace(W, cache_in_training=True))
    # 2 layers x 96 fp32 values (the 4-bit c_attn answers its fp32 LayerNorm input's dtype)
    assert kept - end_of_forward(W) == 2 * 96 * 4 * 128


def test_without_checkpointing_the_attention_keeps_those_outputs_anyway() -> None:
    plain = replace(W, grad_checkpointing=False)
    assert end_of_forward(replace(plain, cache_in_training=True)) == end_of_forward(plain)


def test_a_16_bit_loss_under_autocast_holds_12_bytes_per_logit_as_the_forward_returns() -> None:
    own = end_of_forward(W)
    upcast = end_of_forward(replace(W, loss_upcast=True))  # .float() first: 10 B per logit
    assert own - upcast == 2 * 512 * 128
