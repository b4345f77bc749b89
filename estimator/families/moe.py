"""Mixture-of-experts decoders on the Llama layout: Mixtral, Qwen2-MoE, Qwen3-MoE, GraniteMoE.

They differ in where the router and experts live, whether a shared expert
(with its own sigmoid gate) runs beside them, and which layers stay dense.
"""

from __future__ import annotations

from estimator.architecture import Architecture, FeedForwardSpec, MoeSpec
from estimator.blocks import mlp, moe
from estimator.blocks.layer import LayerParts, LayerTemplate
from estimator.config import MAX_EXPERTS, MAX_LAYERS, MAX_WIDTH, Config
from estimator.families.decoder import (
    DECODER_HEADS,
    DecoderShape,
    Defaults,
    FeedForward,
    build_decoder,
    dense_mlp,
    llama_layer,
    read_shape,
    self_attention,
    stamp,
)
from estimator.families.family import Family, Request
from estimator.families.mistral import DEFAULTS as MISTRAL
from estimator.families.mistral import windowed_layers
from estimator.families.qwen2 import qwen_windows


def routed(
    shape: DecoderShape,
    *,
    prefix: str,
    router: str,
    experts: int,
    top_k: int,
    intermediate: int,
    shared: int = 0,
    shared_name: str = "mlp.shared_expert",
    shared_gate: bool = False,
) -> FeedForward:
    """Router + fused experts (+ an optional shared expert of width ``shared``)."""

    def ffn(parts: LayerParts) -> tuple[FeedForwardSpec | None, MoeSpec | None]:
        h = shape.hidden_size
        expert = moe.fused_experts(
            parts, f"{prefix}experts.", h, intermediate, experts, shape.activation
        )
        moe.router(parts, router, h, experts, bias=False)
        shared_spec = None
        if shared:
            names = mlp.GatedNames(
                f"{shared_name}.gate_proj", f"{shared_name}.up_proj", f"{shared_name}.down_proj"
            )
            shared_spec = mlp.gated(parts, names, h, shared, shape.activation, role="expert")
            if shared_gate:
                parts.linear(f"{shared_name}_gate", h, 1, False, "router")
        return None, MoeSpec(experts, top_k, expert, shared_spec)

    return ffn


def _top_k(cfg: Config, default: int, experts: int) -> int:
    return cfg.size("num_experts_per_tok", default, limit=max(experts, 1))


MIXTRAL = MISTRAL
"""MixtralConfig's defaults are MistralConfig's: Mixtral 8x7B is Mistral 7B with 8 MLP experts."""


def build_mixtral(cfg: Config, req: Request) -> Architecture:
    """Mixtral's tensors; absent keys take ``MixtralConfig``'s defaults (8 experts, top 2)."""
    shape = read_shape(cfg, MIXTRAL)
    experts = cfg.size("num_local_experts", 8, limit=MAX_EXPERTS)
    ffn = routed(
        shape,
        prefix="mlp.",
        router="mlp.gate",
        experts=experts,
        top_k=_top_k(cfg, 2, experts),
        intermediate=shape.intermediate_size,
    )
    layers = windowed_layers(cfg, shape, ffn)
    return build_decoder(cfg, req, shape, layers, family="mixtral")


QWEN2_MOE = Defaults(
    vocab_size=151936,
    hidden_size=2048,
    intermediate_size=5632,
    num_hidden_layers=24,
    num_attention_heads=16,
    num_key_value_heads=16,
    max_position_embeddings=32768,
    tie_word_embeddings=False,
)
QWEN3_MOE = Defaults(
    vocab_size=151936,
    hidden_size=2048,
    intermediate_size=6144,
    num_hidden_layers=24,
    num_attention_heads=32,
    num_key_value_heads=4,
    max_position_embeddings=32768,
    tie_word_embeddings=False,
)


def _sparse_layers(cfg: Config, shape: DecoderShape, experts: int) -> tuple[bool, ...]:
    """Qwen's rule: a layer is MoE unless listed in mlp_only_layers or off the sparse step."""
    step = cfg.size("decoder_sparse_step", 1, limit=MAX_LAYERS)
    dense = set(cfg.ints("mlp_only_layers", limit=MAX_LAYERS) or ())
    return tuple(
        i not in dense and experts > 0 and (i + 1) % step == 0 for i in range(shape.num_layers)
    )


def _build_qwen_moe(cfg: Config, req: Request, d: Defaults, qwen3: bool) -> Architecture:
    shape = read_shape(cfg, d)
    experts = cfg.size("num_experts", 128 if qwen3 else 60, limit=MAX_EXPERTS, minimum=0)
    moe_inter = cfg.size("moe_intermediate_size", 768 if qwen3 else 1408, limit=MAX_WIDTH)
    shared = 0 if qwen3 else cfg.size("shared_expert_intermediate_size", 5632, limit=MAX_WIDTH)
    bias = cfg.flag("attention_bias", False) if qwen3 else cfg.flag("qkv_bias", True)
    sparse = _sparse_layers(cfg, shape, experts)
    windows = qwen_windows(cfg, shape)
    routed_ffn = routed(
        shape,
        prefix="mlp.",
        router="mlp.gate",
        experts=experts,
        top_k=_top_k(cfg, 8 if qwen3 else 4, experts),
        intermediate=moe_inter,
        shared=shared,
        shared_gate=True,
    )

    def layer(key: tuple[int | None, bool]) -> LayerTemplate:
        window, is_sparse = key
        return llama_layer(
            shape,
            lambda p: self_attention(
                p, shape, window, qkv_bias=bias, out_bias=bias and qwen3, qk_norm=qwen3
            ),
            routed_ffn if is_sparse else dense_mlp(shape),
        )

    layers = stamp(shape.num_layers, lambda i: (windows[i], sparse[i]), layer)
    return build_decoder(cfg, req, shape, layers, family=req.model_type)


def build_qwen2_moe(cfg: Config, req: Request) -> Architecture:
    """Qwen2-MoE: routed experts plus a gated shared expert; ``Qwen2MoeConfig`` defaults."""
    return _build_qwen_moe(cfg, req, QWEN2_MOE, qwen3=False)


def build_qwen3_moe(cfg: Config, req: Request) -> Architecture:
    """Qwen3-MoE's tensors: Qwen2-MoE's layout with Q/K norms; ``Qwen3MoeConfig`` defaults."""
    return _build_qwen_moe(cfg, req, QWEN3_MOE, qwen3=True)


GRANITE_MOE = Defaults(
    vocab_size=32000,
    hidden_size=4096,
    intermediate_size=11008,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=None,
    max_position_embeddings=2048,
    tie_word_embeddings=False,
)


def build_granitemoe(cfg: Config, req: Request) -> Architecture:
    """GraniteMoE's tensors; absent keys take ``GraniteMoeConfig``'s defaults."""
    shape = read_shape(cfg, GRANITE_MOE)
    experts = cfg.size("num_local_experts", 8, limit=MAX_EXPERTS)
    bias = cfg.flag("attention_bias", False)
    ffn = routed(
        shape,
        prefix="block_sparse_moe.",
        router="block_sparse_moe.router",
        experts=experts,
        top_k=_top_k(cfg, 2, experts),
        intermediate=shape.intermediate_size,
    )
    layer = llama_layer(
        shape, lambda p: self_attention(p, shape, None, qkv_bias=bias, out_bias=bias), ffn
    )
    return build_decoder(cfg, req, shape, [layer] * shape.num_layers, family="granitemoe")


MIXTRAL_FAMILY = Family("mixtral", "Mixtral", "MixtralForCausalLM", DECODER_HEADS, build_mixtral)
QWEN2_MOE_FAMILY = Family(
    "qwen2_moe", "Qwen2Moe", "Qwen2MoeForCausalLM", DECODER_HEADS, build_qwen2_moe
)
QWEN3_MOE_FAMILY = Family(
    "qwen3_moe", "Qwen3Moe", "Qwen3MoeForCausalLM", DECODER_HEADS, build_qwen3_moe
)
GRANITE_MOE_FAMILY = Family(
    "granitemoe", "GraniteMoe", "GraniteMoeForCausalLM", DECODER_HEADS, build_granitemoe
)
