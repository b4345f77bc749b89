"""DeepSeek-V3: multi-head latent attention, the first ``first_k_dense_replace`` layers
dense, the rest routed experts plus ``n_shared_experts`` shared ones. The router's
``e_score_correction_bias`` is a buffer, not a parameter; MTP layers are not built."""

from __future__ import annotations

from estimator.architecture import Architecture, FeedForwardSpec, MoeSpec
from estimator.blocks import attention, mlp, moe
from estimator.blocks.layer import LayerParts, LayerTemplate
from estimator.config import MAX_EXPERTS, MAX_HEADS, MAX_LAYERS, MAX_WIDTH, Config
from estimator.families.decoder import (
    DECODER_HEADS,
    Defaults,
    build_decoder,
    dense_mlp,
    llama_layer,
    read_shape,
    stamp,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=129280,
    hidden_size=7168,
    intermediate_size=18432,
    num_hidden_layers=61,
    num_attention_heads=128,
    num_key_value_heads=128,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
    head_dim=64,
)


def mla_shape(cfg: Config, heads: int) -> attention.MlaShape:
    """MLA's ranks and head widths; an explicit null ``q_lora_rank`` means Q is not low-rank."""
    return attention.MlaShape(
        num_heads=heads,
        q_lora_rank=cfg.optional_size("q_lora_rank", limit=MAX_WIDTH)
        if "q_lora_rank" in cfg.raw
        else 1536,
        kv_lora_rank=cfg.size("kv_lora_rank", 512, limit=MAX_WIDTH),
        qk_nope_head_dim=cfg.size("qk_nope_head_dim", 128, limit=MAX_WIDTH),
        qk_rope_head_dim=cfg.size("qk_rope_head_dim", 64, limit=MAX_WIDTH),
        v_head_dim=cfg.size("v_head_dim", 128, limit=MAX_WIDTH),
    )


def build(cfg: Config, req: Request) -> Architecture:
    """DeepSeek-V3's tensors; absent keys take ``DeepseekV3Config``'s defaults."""
    shape = read_shape(cfg, DEFAULTS)
    heads = cfg.size("num_attention_heads", DEFAULTS.num_attention_heads, limit=MAX_HEADS)
    mla = mla_shape(cfg, heads)
    bias = cfg.flag("attention_bias", False)
    experts = cfg.size("n_routed_experts", 256, limit=MAX_EXPERTS)
    top_k = cfg.size("num_experts_per_tok", 8, limit=experts)
    moe_inter = cfg.size("moe_intermediate_size", 2048, limit=MAX_WIDTH)
    shared = cfg.size("n_shared_experts", 1, limit=MAX_EXPERTS, minimum=0)
    first_dense = cfg.size("first_k_dense_replace", 3, limit=MAX_LAYERS, minimum=0)

    def routed(parts: LayerParts) -> tuple[FeedForwardSpec | None, MoeSpec | None]:
        h = shape.hidden_size
        expert = moe.fused_experts(parts, "mlp.experts.", h, moe_inter, experts, shape.activation)
        moe.router(parts, "mlp.gate", h, experts, bias=False)
        names = mlp.GatedNames(
            "mlp.shared_experts.gate_proj",
            "mlp.shared_experts.up_proj",
            "mlp.shared_experts.down_proj",
        )
        # transformers builds the shared MLP even for n_shared_experts 0 (zero-width tensors).
        shared_spec = mlp.gated(
            parts, names, h, moe_inter * shared, shape.activation, role="expert"
        )
        return None, MoeSpec(experts, top_k, expert, shared_spec if shared else None)

    def layer(dense: bool) -> LayerTemplate:
        return llama_layer(
            shape,
            lambda p: attention.mla(p, "self_attn.", shape.hidden_size, mla, bias=bias),
            dense_mlp(shape) if dense else routed,
        )

    layers = stamp(shape.num_layers, lambda i: i < first_dense, layer)
    return build_decoder(cfg, req, shape, layers, family="deepseek_v3")


FAMILY = Family("deepseek_v3", "DeepseekV3", "DeepseekV3ForCausalLM", DECODER_HEADS, build)
