"""Marian (opus-mt): the BART layer without BART's embedding LayerNorm, with a sinusoidal
position table that transformers still registers as a parameter (frozen), and the LM head
tied to ``shared``.

From transformers 5.24.0 models/marian/modeling_marian.py: MarianSinusoidalPositionalEmbedding
is an nn.Embedding(max_position_embeddings, d_model) with requires_grad False;
``final_logits_bias`` is a buffer, not a parameter.
"""

from __future__ import annotations

from estimator.architecture import Architecture, HeadKind
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import MAX_POSITIONS, MAX_VOCAB, MAX_WIDTH, Config
from estimator.errors import ConfigError
from estimator.families.bart import encoder_decoder_stacks
from estimator.families.common import assemble
from estimator.families.family import Family, Request

HEADS: frozenset[HeadKind] = frozenset({"base", "conditional-generation"})


def build(cfg: Config, req: Request) -> Architecture:
    """Marian's tensors; ConfigError for separate encoder and decoder vocabularies, not modelled."""
    if not cfg.flag("share_encoder_decoder_embeddings", True):
        raise ConfigError(
            f"{cfg.source}: share_encoder_decoder_embeddings false (separate vocabularies) "
            "is not modelled",
            field="share_encoder_decoder_embeddings",
        )
    d = cfg.size("d_model", 1024, limit=MAX_WIDTH)
    vocab = cfg.size("vocab_size", 58101, limit=MAX_VOCAB)
    positions = cfg.size("max_position_embeddings", 1024, limit=MAX_POSITIONS)
    prefix = "" if req.head == "base" else "model."
    model = ModelParts()
    model.param(f"{prefix}shared.weight", (vocab, d), "embedding")
    first = 0
    for side, count, layer in encoder_decoder_stacks(cfg, d, (12, 16, 4096)):
        top = LayerParts()
        top.param("embed_positions.weight", (positions, d), "position")
        model.extend(f"{prefix}{side}.", top)
        model.layers(f"{prefix}{side}.layers.", [layer] * count, first_index=first)
        first += count
    return assemble(
        cfg,
        model,
        req,
        family="marian",
        hidden_size=d,
        vocab_size=vocab,
        max_position_embeddings=positions,
        tie_word_embeddings=True,
        norm="layernorm",
        position="learned",
        hidden_dropout=cfg.number("dropout", 0.1) or 0.0,
    )


FAMILY = Family("marian", "Marian", "MarianMTModel", HEADS, build)
