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
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import Config
from estimator.families.family import Family, Request
from estimator.families.gemma import GEMMA3, sandwich_layers
from estimator.families.vision import siglip_vision_tower
from estimator.families.vision_language import (
    finish_language_model,
    language_model_embeddings,
    sub_config,
)

HEADS: frozenset[HeadKind] = frozenset({"base", "conditional-generation"})


def build(cfg: Config, req: Request) -> Architecture:
    """SigLIP tower, projector, Gemma 3 text model; absent sub-configs take their defaults."""
    text = sub_config(cfg, "text_config", ("gemma3_text",), "Gemma 3")
    vision = sub_config(cfg, "vision_config", ("siglip_vision_model",), "Gemma 3")
    shape, layers = sandwich_layers(text, GEMMA3, 6, qk_norm=True)
    base = "" if req.head == "base" else "model."
    model = ModelParts()
    v_hidden, v_layers = siglip_vision_tower(model, f"{base}vision_tower.", vision, 0)
    projector = LayerParts()
    projector.param("mm_input_projection_weight", (v_hidden, shape.hidden_size), "other")
    projector.norm("mm_soft_emb_norm", v_hidden, False)
    model.extend(f"{base}multi_modal_projector.", projector)
    language_model_embeddings(model, base, shape)
    model.layers(f"{base}language_model.layers.", layers, v_layers)
    tied = cfg.flag("tie_word_embeddings", True)
    return finish_language_model(cfg, req, model, base, shape, tied=tied, family="gemma3")


FAMILY = Family("gemma3", "Gemma3", "Gemma3ForConditionalGeneration", HEADS, build)
