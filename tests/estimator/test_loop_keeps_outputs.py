"""A loop that writes ``outputs = model(**batch)`` holds one step's outputs into the next forward.

A tiny T5 (d_model 64, d_kv 16, 4 heads, 2 encoder and 2 decoder layers, vocabulary
512) fine-tuned in fp32 with LoRA on 32-token inputs and 4-token labels, as peft's
seq2seq example scripts run it: the decoder returns its cache (config.use_cache), so
each decoder layer's self-attention keys and values (4 tokens) and cross-attention
keys and values (32 source tokens), the fp32 logits and the encoder output are what
``outputs`` holds.
"""

from __future__ import annotations

from dataclasses import replace

from estimator import Workload
from tests.estimator.phase_terms import activations_at

T5 = {
    "model_type": "t5",
    "architectures": ["T5ForConditionalGeneration"],
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 128,
    "num_heads": 4,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "vocab_size": 512,
    "feed_forward_proj": "relu",
    "tie_word_embeddings": True,
}
W = Workload(
    method="lora",
    batch=2,
    seq_len=32,
    target_len=4,
    precision="fp32",
    lora_targets=("q", "v"),
    cache_in_training=True,
)
LOGITS = 4 * 512 * 4  # fp32, vocabulary x label tokens
CACHE = 2 * (2 * 64 * 4 * 4 + 2 * 64 * 4 * 32)  # 2 decoder layers: self K/V, cross K/V (fp32)
ENCODER_OUTPUT = 4 * 64 * 32


def gained(phase: str, w: Workload = W) -> float:
    """Bytes per sample the loop's ``outputs`` adds at ``phase``."""
    kept = activations_at(T5, replace(w, loop_keeps_outputs=True), phase)
    return (kept - activations_at(T5, w, phase)) / w.batch


def test_the_previous_steps_outputs_are_alive_when_the_next_forward_ends() -> None:
    assert gained("end of forward") == LOGITS + CACHE + ENCODER_OUTPUT


def test_this_steps_logits_outlive_the_loss_and_everything_outlives_backward() -> None:
    assert gained("start of backward (loss gradients)") == 0  # the loss holds them anyway
    assert gained("backward through the last layer") == LOGITS
    assert gained("backward through the first layer") == LOGITS + CACHE + ENCODER_OUTPUT
    assert gained("optimizer step") == LOGITS + CACHE + ENCODER_OUTPUT


def test_without_a_returned_cache_only_logits_and_encoder_output_are_held() -> None:
    assert gained("end of forward", replace(W, cache_in_training=False)) == LOGITS + ENCODER_OUTPUT
