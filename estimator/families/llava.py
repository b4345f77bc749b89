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
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import Config
from estimator.families import llama
from estimator.families.decoder import dense_mlp, llama_layer, read_shape, self_attention
from estimator.families.family import Family, Request
from estimator.families.vision import TowerDefaults, clip_vision_tower
from estimator.families.vision_language import (
    finish_language_model,
    language_model_embeddings,
    sub_config,
)

HEADS: frozenset[HeadKind] = frozenset({"base", "conditional-generation", "causal-lm"})
LLAVA_TOWER = TowerDefaults(
    hidden=1024, intermediate=4096, layers=24, heads=16, image=336, patch=14
)


def build(cfg: Config, req: Request) -> Architecture:
    """CLIP tower, projector, Llama text model; absent sub-configs take ``LlavaConfig``'s."""
    vision = sub_config(cfg, "vision_config", ("clip_vision_model",), "LLaVA")
    text = sub_config(cfg, "text_config", ("llama",), "LLaVA")
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
    language_model_embeddings(model, base, shape)
    model.layers(f"{base}language_model.layers.", [layer] * shape.num_layers, v_layers)
    tied = cfg.flag("tie_word_embeddings", False) or text.flag("tie_word_embeddings", False)
    return finish_language_model(cfg, req, model, base, shape, tied=tied, family="llava")


FAMILY = Family("llava", "Llava", "LlavaForConditionalGeneration", HEADS, build)
