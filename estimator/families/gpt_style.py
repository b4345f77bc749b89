"""The GPT-style stack GPT-2, GPT-J, GPT-NeoX, Phi-1/2, Falcon, OPT and BLOOM share.

``{base}wte`` (+ a learned ``wpe``) -> ``{base}h.{i}`` -> ``{base}ln_f`` -> ``lm_head`` /
``score``, where each model names those pieces its own way. A family describes the
names once in a ``GptStack``, reads its sizes from the config into ``StackSizes``
and builds one layer; ``build_stack`` does the rest, so the modules keep only what
differs between the models.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.architecture import Architecture, NormKind, PositionKind
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, LayerTemplate
from estimator.config import Config
from estimator.families.common import assemble, causal_head, stack_model
from estimator.families.family import Request


@dataclass(frozen=True)
class GptStack:
    """How one model names the parts around its layers, and the kinds it reports."""

    family: str
    base_model: str
    """The attribute that holds the base model under a head class (``transformer.``)."""
    token_embedding: str
    final_norm: str
    layers: str = "h."
    position_embedding: str | None = None
    """The learned position table, for models that have one."""
    embedding_norm: str | None = None
    """A LayerNorm applied right after the word embeddings (BLOOM)."""
    decoder: str = ""
    """Where the stack sits inside the base model (OPT's ``decoder.``)."""
    norm: NormKind = "layernorm"
    position: PositionKind = "rope"
    head_bias: bool = False


@dataclass(frozen=True)
class StackSizes:
    """The config values the stack around the layers needs."""

    hidden: int
    vocab: int
    layers: int
    positions: int | None
    tied: bool
    hidden_dropout: float = 0.0


def _embeddings(stack: GptStack, sizes: StackSizes) -> LayerParts:
    """Word embeddings, then the learned position table and the embedding norm if present."""
    top = LayerParts()
    embedding(top, stack.token_embedding, sizes.vocab, sizes.hidden)
    if stack.position_embedding is not None and sizes.positions is not None:
        embedding(top, stack.position_embedding, sizes.positions, sizes.hidden, role="position")
    if stack.embedding_norm is not None:
        top.norm(stack.embedding_norm, sizes.hidden, True)
    return top


def _final_norm(stack: GptStack, sizes: StackSizes) -> LayerParts:
    tail = LayerParts()
    tail.norm(stack.final_norm, sizes.hidden, True)
    return tail


def build_stack(
    cfg: Config,
    req: Request,
    stack: GptStack,
    sizes: StackSizes,
    layer: LayerTemplate,
    *,
    top: LayerParts | None = None,
    tail: LayerParts | None = None,
    head_width: int | None = None,
) -> Architecture:
    """Embeddings -> ``sizes.layers`` copies of ``layer`` -> final norm -> head.

    ``top`` and ``tail`` replace the default embeddings and final norm for a model
    whose own differ (OPT's projected embeddings); ``head_width`` is the width the
    head reads when it is not ``hidden`` (OPT's ``word_embed_proj_dim``).
    """
    base = stack.decoder if req.head == "base" else stack.base_model + stack.decoder
    width = sizes.hidden if head_width is None else head_width
    model = stack_model(
        prefix=base,
        top=_embeddings(stack, sizes) if top is None else top,
        layers_prefix=stack.layers,
        layers=[layer] * sizes.layers,
        tail=_final_norm(stack, sizes) if tail is None else tail,
        head=causal_head(cfg, req.head, width, sizes.vocab, tied=sizes.tied, bias=stack.head_bias),
    )
    return assemble(
        cfg,
        model,
        req,
        family=stack.family,
        hidden_size=sizes.hidden,
        vocab_size=sizes.vocab,
        max_position_embeddings=sizes.positions,
        tie_word_embeddings=sizes.tied,
        norm=stack.norm,
        position=stack.position,
        hidden_dropout=sizes.hidden_dropout,
    )
