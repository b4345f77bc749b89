"""Gemma 3 vision-language (Gemma3ForConditionalGeneration, MedGemma): a SigLIP vision
tower, a projector (RMSNorm over the pooled vision tokens, then one bare projection
matrix into the text width), and the Gemma 3 text model; the LM head is tied.

From transformers 5.24.0 models/gemma3/modeling_gemma3.py (Gemma3MultiModalProjector:
``mm_input_projection_weight`` is (vision hidden, text hidden), ``mm_soft_emb_norm`` a
Gemma3RMSNorm of the vision width) and configuration_gemma3.py (``text_config`` defaults
to Gemma3TextConfig, ``vision_config`` to SiglipVisionConfig, ``tie_word_embeddings`` true).
"""

from __future__ import annotations

from estimator.architecture import Architecture, HeadKind
from estimator.blocks.embeddings import embedding, lm_head
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import Config
from estimator.errors import ConfigError
from estimator.families.common import assemble
from estimator.families.family import Family, Request
from estimator.families.gemma import GEMMA3, sandwich_layers
from estimator.families.vision import siglip_vision_tower

HEADS: frozenset[HeadKind] = frozenset({"base", "conditional-generation"})


def _section(cfg: Config, key: str, expected: str) -> Config:
    sub = Config(cfg.mapping(key) or {}, source=f"{cfg.source}: {key}")
    model_type = sub.optional_text("model_type")
    if model_type is not None and model_type != expected:
        raise ConfigError(
            f"{sub.source}: model_type {model_type!r} is not modelled here (only {expected!r})",
            field=f"{key}.model_type",
        )
    return sub


def build(cfg: Config, req: Request) -> Architecture:
    text = _section(cfg, "text_config", "gemma3_text")
    vision = _section(cfg, "vision_config", "siglip_vision_model")
    shape, layers = sandwich_layers(text, GEMMA3, 6, qk_norm=True)
    base = "" if req.head == "base" else "model."
    model = ModelParts()
    v_hidden, v_layers = siglip_vision_tower(model, f"{base}vision_tower.", vision, 0)
    projector = LayerParts()
    projector.param("mm_input_projection_weight", (v_hidden, shape.hidden_size), "other")
    projector.norm("mm_soft_emb_norm", v_hidden, False)
    model.extend(f"{base}multi_modal_projector.", projector)
    top = LayerParts()
    embedding(top, "embed_tokens", shape.vocab_size, shape.hidden_size)
    model.extend(f"{base}language_model.", top)
    model.layers(f"{base}language_model.layers.", layers, v_layers)
    tail = LayerParts()
    tail.norm("norm", shape.hidden_size, False)
    model.extend(f"{base}language_model.", tail)
    tied = cfg.flag("tie_word_embeddings", True)
    if req.head != "base":
        head = LayerParts()
        lm_head(head, "lm_head", shape.hidden_size, shape.vocab_size, tied=tied)
        model.extend("", head)
    return assemble(
        cfg,
        model,
        model_type=req.model_type,
        family="gemma3",
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


FAMILY = Family("gemma3", "Gemma3", "Gemma3ForConditionalGeneration", HEADS, build)
