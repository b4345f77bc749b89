"""StableLM: the Llama layout with LayerNorms (weight and bias) in place of RMSNorm,
optional Q/K/V biases, optional per-head LayerNorms on Q and K, and an optional
parallel residual that drops the post-attention norm.

``stablelm`` follows transformers 5.24.0 models/stablelm/modeling_stablelm.py
(StableLmLayerNormPerHead: one bias-free LayerNorm per head). ``stablelm_epoch`` is
the remote-code predecessor (stabilityai's modeling_stablelm_epoch.py): the same
tensors, no qk norms or parallel residual; checked against its checkpoint index.
"""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks.layer import LayerParts, LayerTemplate, template
from estimator.config import Config
from estimator.families.decoder import (
    DECODER_HEADS,
    DecoderShape,
    Defaults,
    build_decoder,
    dense_mlp,
    read_shape,
    self_attention,
)
from estimator.families.family import Family, Request

DEFAULTS = Defaults(
    vocab_size=50304,
    hidden_size=2560,
    intermediate_size=6912,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=None,
    max_position_embeddings=4096,
    tie_word_embeddings=False,
)


def _layer(shape: DecoderShape, *, qkv_bias: bool, qk_norm: bool, parallel: bool) -> LayerTemplate:
    parts = LayerParts()
    spec = self_attention(parts, shape, None, qkv_bias=qkv_bias)
    if qk_norm:
        for name, heads in (("q_layernorm", shape.num_heads), ("k_layernorm", shape.num_kv_heads)):
            for h in range(heads):
                parts.param(f"self_attn.{name}.norms.{h}.weight", (shape.head_dim,), "norm")
            parts.norms += heads
    feed_forward, _ = dense_mlp(shape)(parts)
    parts.norm("input_layernorm", shape.hidden_size, True)
    if not parallel:
        parts.norm("post_attention_layernorm", shape.hidden_size, True)
    return template(parts, stack="decoder", attention=spec, feed_forward=feed_forward)


def build(cfg: Config, req: Request) -> Architecture:
    """StableLM's tensors, or StableLM-Epoch's (no Q/K norms, no parallel residual)."""
    shape = read_shape(cfg, DEFAULTS)
    epoch = req.model_type == "stablelm_epoch"
    layer = _layer(
        shape,
        qkv_bias=cfg.flag("use_qkv_bias", False),
        qk_norm=not epoch and cfg.flag("qk_layernorm", False),
        parallel=not epoch and cfg.flag("use_parallel_residual", False),
    )
    return build_decoder(
        cfg,
        req,
        shape,
        [layer] * shape.num_layers,
        family="stablelm",
        norm="layernorm",
        norm_bias=True,
    )


FAMILY = Family("stablelm", "StableLm", "StableLmForCausalLM", DECODER_HEADS, build)
EPOCH = Family("stablelm_epoch", "StableLMEpoch", "StableLMEpochForCausalLM", DECODER_HEADS, build)
