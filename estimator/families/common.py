"""What every family shares: the Architecture assembly and the config facts outside the layers."""

from __future__ import annotations

from collections.abc import Mapping

from estimator.architecture import Architecture, HeadKind, NormKind, PositionKind, TensorTable
from estimator.blocks.embeddings import lm_head
from estimator.blocks.layer import LayerParts, LayerTemplate, ModelParts
from estimator.config import MAX_POSITIONS, MAX_ROPE_FACTOR, Config, shown
from estimator.errors import ConfigError
from estimator.families.family import Request
from estimator.families.heads import num_labels


def declared_dtype(cfg: Config) -> str | None:
    """The declared dtype (``torch_dtype``, or transformers 5's ``dtype``); None if neither."""
    return cfg.optional_text("torch_dtype") or cfg.optional_text("dtype")


MAX_NESTING = 16
"""Levels a rope_scaling object may nest; published ones are flat (long/short factor lists)."""


def _frozen(value: object, where: str, depth: int = 0) -> object:
    """``value`` hashable (tuples for objects and lists), refusing nesting past MAX_NESTING."""
    if depth > MAX_NESTING:
        raise ConfigError(
            f"{where} is nested more than {MAX_NESTING} levels deep", field="rope_scaling"
        )
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _frozen(v, where, depth + 1)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_frozen(v, where, depth + 1) for v in value)
    return value


def _rope_section(cfg: Config, key: str) -> Config | None:
    """``rope_scaling`` / ``rope_parameters`` with its numbers checked: a factor of 1e308 or
    NaN is refused here, before the verifier multiplies it by a context length."""
    section = cfg.mapping(key)
    if section is None:
        return None
    nested = Config(section, source=f"{cfg.source}: {key}")
    factor = nested.number("factor", None)
    if factor is not None and not 0 < factor <= MAX_ROPE_FACTOR:
        raise ConfigError(
            f"{nested.source}: factor ({shown(factor)}) is not a plausible scaling factor "
            f"(0 to {MAX_ROPE_FACTOR})",
            field=key,
        )
    nested.number("rope_theta", None)
    nested.optional_size("original_max_position_embeddings", limit=MAX_POSITIONS)
    return nested


def rope_scaling(cfg: Config) -> tuple[tuple[str, object], ...] | None:
    """``rope_scaling`` checked and frozen to sorted tuples, so an Architecture hashes."""
    nested = _rope_section(cfg, "rope_scaling")
    if nested is None:
        return None
    frozen = _frozen(nested.raw, nested.source)
    assert isinstance(frozen, tuple)
    return frozen


def rope_theta(cfg: Config) -> float | None:
    """``rope_theta``, or transformers 5's ``rope_parameters.rope_theta``; None if neither."""
    theta = cfg.number("rope_theta", None)
    if theta is not None:
        return theta
    params = _rope_section(cfg, "rope_parameters")
    value = params.raw.get("rope_theta") if params else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def assemble(
    cfg: Config,
    model: ModelParts,
    req: Request,
    *,
    family: str,
    hidden_size: int,
    vocab_size: int,
    max_position_embeddings: int | None,
    tie_word_embeddings: bool,
    norm: NormKind,
    position: PositionKind,
    hidden_dropout: float = 0.0,
) -> Architecture:
    """The Architecture of ``model``; its type, class, head and support come from ``req``."""
    return Architecture(
        model_type=req.model_type,
        architecture=req.architecture,
        head=req.head,
        family=family,
        supported=req.supported,
        hidden_size=hidden_size,
        vocab_size=vocab_size,
        max_position_embeddings=max_position_embeddings,
        tie_word_embeddings=tie_word_embeddings,
        declared_dtype=declared_dtype(cfg),
        norm=norm,
        position=position,
        hidden_dropout=hidden_dropout,
        blocks=tuple(model.blocks),
        tensors=TensorTable(model.segments),
        rope_scaling=rope_scaling(cfg),
        rope_theta=rope_theta(cfg),
        layer_templates=model.layer_templates(),
    )


def stack_model(
    *,
    prefix: str,
    top: LayerParts,
    layers_prefix: str,
    layers: list[LayerTemplate],
    tail: LayerParts,
    head: LayerParts,
) -> ModelParts:
    """Embeddings, layers and final norm under the base model's attribute, heads at the root."""
    model = ModelParts()
    model.extend(prefix, top)
    model.layers(prefix + layers_prefix, layers)
    model.extend(prefix, tail)
    model.extend("", head)
    return model


def causal_head(
    cfg: Config,
    head: HeadKind,
    width: int,
    vocab: int,
    *,
    tied: bool,
    bias: bool = False,
    name: str = "lm_head",
) -> LayerParts:
    """lm_head for causal LMs, a bias-free ``score`` for sequence classification, nothing for base."""
    parts = LayerParts()
    if head == "causal-lm":
        lm_head(parts, name, width, vocab, tied=tied, bias=bias)
    elif head == "sequence-classification":
        parts.param("score.weight", (num_labels(cfg), width), "head")
    return parts
