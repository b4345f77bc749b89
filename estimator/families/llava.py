"""LLaVA: a CLIP vision tower, a two-layer GELU projector into the text width, and a Llama
language model, under ``model.`` with the LM head at the root.

From transformers 5.24.0 models/llava/modeling_llava.py (LlavaModel builds
``vision_tower`` and ``language_model`` with AutoModel; LlavaMultiModalProjector's
``linear_1`` reads ``vision hidden x len(vision_feature_layer)``) and
configuration_llava.py (``sub_configs_defaults``: CLIP ViT-L/14 at 336 px, 24 layers, for
an absent ``vision_config``; LlamaConfig defaults for an absent ``text_config``).
Published configs in the original LLaVA repo's format (``LlavaLlamaForCausalLM``, mm_* keys)
carry neither sub-config, so transformers builds them from those defaults, and so does this.
"""

from __future__ import annotations

from estimator.architecture import Architecture, HeadKind
from estimator.blocks.embeddings import embedding, lm_head
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import Config
from estimator.errors import ConfigError
from estimator.families import llama
from estimator.families.common import assemble
from estimator.families.decoder import dense_mlp, llama_layer, read_shape, self_attention
from estimator.families.family import Family, Request
from estimator.families.vision import TowerDefaults, clip_vision_tower

HEADS: frozenset[HeadKind] = frozenset({"base", "conditional-generation", "causal-lm"})
LLAVA_TOWER = TowerDefaults(
    hidden=1024, intermediate=4096, layers=24, heads=16, image=336, patch=14
)


def _section(cfg: Config, key: str, expected: tuple[str, ...]) -> Config:
    raw = cfg.mapping(key)
    sub = Config(raw or {}, source=f"{cfg.source}: {key}")
    model_type = sub.optional_text("model_type")
    if model_type is not None and model_type not in expected:
        raise ConfigError(
            f"{sub.source}: model_type {model_type!r} is not modelled in a LLaVA wrapper "
            f"(only {', '.join(expected)})",
            field=f"{key}.model_type",
        )
    return sub


def build(cfg: Config, req: Request) -> Architecture:
    vision = _section(cfg, "vision_config", ("clip_vision_model",))
    text = _section(cfg, "text_config", ("llama",))
    shape = read_shape(text, llama.DEFAULTS)
    layer = llama_layer(
        shape,
        lambda p: self_attention(
            p, shape, None, qkv_bias=text.flag("attention_bias", False),
            out_bias=text.flag("attention_bias", False),
        ),
        dense_mlp(shape, bias=text.flag("mlp_bias", False)),
    )  # fmt: skip
    base = "" if req.head == "base" else "model."
    model = ModelParts()
    v_hidden, v_layers = clip_vision_tower(model, f"{base}vision_tower.", vision, 0, LLAVA_TOWER)
    layers_used = cfg.raw.get("vision_feature_layer", -2)
    feature_layers = len(layers_used) if isinstance(layers_used, list) else 1
    bias = cfg.flag("multimodal_projector_bias", True)
    projector = LayerParts()
    projector.linear("linear_1", v_hidden * feature_layers, shape.hidden_size, bias, "other")
    projector.linear("linear_2", shape.hidden_size, shape.hidden_size, bias, "other")
    model.extend(f"{base}multi_modal_projector.", projector)
    top = LayerParts()
    embedding(top, "embed_tokens", shape.vocab_size, shape.hidden_size)
    model.extend(f"{base}language_model.", top)
    model.layers(f"{base}language_model.layers.", [layer] * shape.num_layers, v_layers)
    tail = LayerParts()
    tail.norm("norm", shape.hidden_size, False)
    model.extend(f"{base}language_model.", tail)
    tied = cfg.flag("tie_word_embeddings", False) or text.flag("tie_word_embeddings", False)
    if req.head != "base":
        head = LayerParts()
        lm_head(head, "lm_head", shape.hidden_size, shape.vocab_size, tied=tied)
        model.extend("", head)
    return assemble(
        cfg,
        model,
        model_type=req.model_type,
        family="llava",
        architecture=req.architecture,
        head=req.head,
        hidden_size=shape.hidden_size,
        vocab_size=shape.vocab_size,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=tied,
        norm="rmsnorm",
        position="rope",
        supported=req.supported,
    )


FAMILY = Family("llava", "Llava", "LlavaForConditionalGeneration", HEADS, build)
