"""What every vision-language wrapper shares around its text model.

LLaVA and Gemma 3's wrapper (transformers 5.24.0 models/llava, models/gemma3)
hold a vision tower, a projector and a text model under one prefix: their
sub-configs are read the same way, the text model's embeddings sit under
``language_model.`` before its layers, and after them come its final norm and,
unless the base model is asked for, the LM head. Only the towers, projectors
and text layers differ, and those stay in each family.
"""

from __future__ import annotations

from collections.abc import Sequence

from estimator.architecture import Architecture
from estimator.blocks.embeddings import embedding, lm_head
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import Config
from estimator.errors import ConfigError
from estimator.families.common import assemble
from estimator.families.decoder import DecoderShape
from estimator.families.family import Request


def sub_config(cfg: Config, key: str, expected: Sequence[str], wrapper: str) -> Config:
    """``cfg[key]`` as a Config; a sub-model of another type is refused by name, not guessed."""
    sub = Config(cfg.mapping(key) or {}, source=f"{cfg.source}: {key}")
    model_type = sub.optional_text("model_type")
    if model_type is not None and model_type not in expected:
        raise ConfigError(
            f"{sub.source}: model_type {model_type!r} is not modelled in a {wrapper} wrapper "
            f"(only {', '.join(expected)})",
            field=f"{key}.model_type",
        )
    return sub


def language_model_embeddings(model: ModelParts, base: str, shape: DecoderShape) -> None:
    """The text model's token embeddings, placed before its layers."""
    top = LayerParts()
    embedding(top, "embed_tokens", shape.vocab_size, shape.hidden_size)
    model.extend(f"{base}language_model.", top)


def finish_language_model(
    cfg: Config,
    req: Request,
    model: ModelParts,
    base: str,
    shape: DecoderShape,
    *,
    tied: bool,
    family: str,
) -> Architecture:
    """The text model's final norm, the LM head unless the base model is asked, the description."""
    tail = LayerParts()
    tail.norm("norm", shape.hidden_size, False)
    model.extend(f"{base}language_model.", tail)
    if req.head != "base":
        head = LayerParts()
        lm_head(head, "lm_head", shape.hidden_size, shape.vocab_size, tied=tied)
        model.extend("", head)
    return assemble(
        cfg,
        model,
        req,
        family=family,
        hidden_size=shape.hidden_size,
        vocab_size=shape.vocab_size,
        max_position_embeddings=shape.max_positions,
        tie_word_embeddings=tied,
        norm="rmsnorm",
        position="rope",
    )


__all__ = ["finish_language_model", "language_model_embeddings", "sub_config"]
