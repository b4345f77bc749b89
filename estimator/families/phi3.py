"""Phi-3: Llama with Q/K/V packed in ``qkv_proj`` and gate/up packed in ``gate_up_proj``."""

from __future__ import annotations

from estimator.architecture import Architecture, AttentionSpec, FeedForwardSpec, MoeSpec
from estimator.blocks import attention, mlp
from estimator.blocks.layer import LayerParts
from estimator.config import Config
from estimator.families.decoder import (
    DECODER_HEADS,
    Defaults,
    build_decoder,
    layer_types,
    llama_layer,
    read_shape,
    stamp,
    window_of,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=32064,
    hidden_size=3072,
    intermediate_size=8192,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=None,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)


def build(cfg: Config, req: Request) -> Architecture:
    """Phi-3's tensors for ``req.architecture``; absent keys take ``Phi3Config``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    windows = layer_types(cfg, shape, window_of(cfg))

    def attn(parts: LayerParts, window: int | None) -> AttentionSpec:
        attention.fused_qkv(
            parts,
            "self_attn.qkv_proj",
            "self_attn.o_proj",
            shape.hidden_size,
            shape.num_heads,
            shape.num_kv_heads,
            shape.head_dim,
            qkv_bias=False,
            out_bias=False,
        )
        return attention.spec(
            shape.num_heads, shape.num_kv_heads, shape.head_dim, causal=True, sliding_window=window
        )

    def ffn(parts: LayerParts) -> tuple[FeedForwardSpec | None, MoeSpec | None]:
        spec = mlp.fused_gated(
            parts,
            "mlp.gate_up_proj",
            "mlp.down_proj",
            shape.hidden_size,
            shape.intermediate_size,
            shape.activation,
        )
        return spec, None

    layers = stamp(
        shape.num_layers,
        lambda i: windows[i],
        lambda w: llama_layer(shape, lambda p: attn(p, w), ffn),
    )
    return build_decoder(cfg, req, shape, layers, family="phi3")


FAMILY = Family("phi3", "Phi3", "Phi3ForCausalLM", DECODER_HEADS, build)
