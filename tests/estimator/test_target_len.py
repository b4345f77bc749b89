"""An encoder-decoder's decoder runs over the label length, not the input length.

A tiny T5 (d_model 64, 3 encoder and 2 decoder layers, vocabulary 256) trained
on 16-token inputs: what the decoder and the loss keep follows ``target_len``,
what the encoder and the cross-attention keys keep follows ``seq_len``.
"""

from __future__ import annotations

from estimator import Workload
from estimator.families import describe
from estimator.memory.activations import (
    ActivationSettings,
    cross_source_bytes_per_token,
    loss_bytes,
    training_activations,
)
from estimator.memory.numerics import training_numerics
from estimator.memory.training import placements
from tests.estimator.archbuilder import llama_like
from tests.estimator.test_memory_training import T5_CONFIG

T5 = describe(T5_CONFIG)


def activations(arch: object, target_len: int, batch: int = 2, **extra: object):  # type: ignore[no-untyped-def]
    w = Workload(method="lora", batch=batch, seq_len=16, target_len=target_len, **extra)  # type: ignore[arg-type]
    settings = ActivationSettings(
        numerics=training_numerics(w, "lora", has_bf16=True),
        seq_len=16,
        target_len=target_len,
        eager=True,
        checkpointing=w.grad_checkpointing,
        lora_rank=8,
        lora_dropout=0.0,
        head_trains=False,
        norms_train=False,
    )
    groups = placements(T5 if arch is None else arch, False, None)  # type: ignore[arg-type]
    return (
        training_activations(T5 if arch is None else arch, groups, settings, batch),
        groups,
        settings,
    )  # type: ignore[arg-type]


def test_the_loss_runs_over_the_decoder_tokens() -> None:
    three, _, _ = activations(None, 3)
    assert (three.loss, three.loss_at_forward_end) == loss_bytes(T5, 2 * 3)


def test_zero_means_the_input_length() -> None:
    assert activations(None, 0)[0] == activations(None, 16)[0]


def test_a_short_decoder_keeps_less_but_the_cross_keys_stay() -> None:
    short, groups, settings = activations(None, 3)
    full, _, _ = activations(None, 16)
    assert short.saved < full.saved
    # Checkpointed, each layer keeps its input: 3 encoder layers over 2 x 16 tokens and
    # 2 decoder layers over 2 x 3 tokens, 16-bit, 64 wide.
    ckpt_short, _, _ = activations(None, 3, grad_checkpointing=True)
    ckpt_full, _, _ = activations(None, 16, grad_checkpointing=True)
    outside_per_token = (ckpt_full.saved - 5 * 2 * 64 * 32) / (32 + 32)
    assert ckpt_short.saved == 3 * 2 * 64 * 32 + 2 * 2 * 64 * 6 + outside_per_token * (32 + 6)
    # Per encoder token a decoder layer keeps cross-attention's K and V (4 heads x 16,
    # 16-bit) and, for the adapted k and v (all-linear, autocast), each adapter's 16-bit
    # cast of the 64-wide encoder output and its rank-8 intermediate.
    decoder, placed, _ = next(g for g in groups if g[0].cross_attention is not None)
    kv = 2 * 4 * (16 + 16)
    adapters = 2 * (2 * 64 + 2 * 8)
    assert cross_source_bytes_per_token(decoder, placed, settings) == kv + adapters


def test_decoder_only_models_ignore_it() -> None:
    llama = llama_like(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256)
    assert activations(llama, 3)[0] == activations(llama, 0)[0]
