"""GPT-OSS: attention with biases and per-head sinks, a biased router, and experts
stored transposed ``(E, H, 2I)`` with biases; alternating sliding/full layers."""

from __future__ import annotations

from estimator.architecture import Architecture, AttentionSpec, FeedForwardSpec, MoeSpec
from estimator.blocks import moe
from estimator.blocks.layer import LayerParts
from estimator.config import MAX_EXPERTS, Config
from estimator.families.decoder import (
    DECODER_HEADS,
    Defaults,
    build_decoder,
    llama_layer,
    read_shape,
    self_attention,
    stamp,
    window_of,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=201088,
    hidden_size=2880,
    intermediate_size=2880,
    num_hidden_layers=36,
    num_attention_heads=64,
    num_key_value_heads=8,
    max_position_embeddings=131072,
    tie_word_embeddings=False,
    head_dim=64,
)


def build(cfg: Config, req: Request) -> Architecture:
    """GPT-OSS's tensors; sliding and full attention alternate unless ``layer_types`` says."""
    shape = read_shape(cfg, DEFAULTS)
    bias = cfg.flag("attention_bias", True)
    experts = cfg.size("num_local_experts", 128, limit=MAX_EXPERTS, aliases=("num_experts",))
    top_k = cfg.size("num_experts_per_tok", 4, limit=experts)
    window = window_of(cfg) or 128
    types = cfg.texts("layer_types", length=shape.num_layers)
    if types is None:
        types = tuple(
            "sliding_attention" if (i + 1) % 2 else "full_attention"
            for i in range(shape.num_layers)
        )
    windows = tuple(window if t == "sliding_attention" else None for t in types)

    def ffn(parts: LayerParts) -> tuple[FeedForwardSpec | None, MoeSpec | None]:
        moe.router(parts, "mlp.router", shape.hidden_size, experts, bias=True)
        expert = moe.fused_experts(
            parts,
            "mlp.experts.",
            shape.hidden_size,
            shape.intermediate_size,
            experts,
            shape.activation,
            transposed=True,
            bias=True,
        )
        return None, MoeSpec(experts, top_k, expert)

    def attn(parts: LayerParts, w: int | None) -> AttentionSpec:
        spec = self_attention(parts, shape, w, qkv_bias=bias, out_bias=bias)
        parts.param("self_attn.sinks", (shape.num_heads,), "attention")
        return spec

    layers = stamp(
        shape.num_layers,
        lambda i: windows[i],
        lambda w: llama_layer(shape, lambda p: attn(p, w), ffn),
    )
    return build_decoder(cfg, req, shape, layers, family="gpt_oss")


FAMILY = Family("gpt_oss", "GptOss", "GptOssForCausalLM", DECODER_HEADS, build)
