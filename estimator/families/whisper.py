"""Whisper: a speech encoder (two Conv1d over the log-mel frames, learned positions) and a
text decoder with cross-attention; pre-norm layers, K projections without bias, the LM head
(``proj_out``) tied to the decoder's token embedding.

Names and defaults follow transformers' models/whisper/modeling_whisper.py and
configuration_whisper.py (transformers 5.24.0).
"""

from __future__ import annotations

from estimator.architecture import Architecture
from estimator.blocks.embeddings import embedding
from estimator.blocks.layer import LayerParts, ModelParts
from estimator.config import MAX_POSITIONS, MAX_SMALL, MAX_VOCAB, MAX_WIDTH, Config
from estimator.families.bart import encoder_decoder_stacks
from estimator.families.common import assemble
from estimator.families.family import Family, Request
from estimator.families.t5 import SEQ2SEQ_HEADS


def _attention(parts: LayerParts, name: str, d: int, heads: int) -> None:
    """WhisperAttention: q, v and out carry a bias, k does not."""
    parts.linear(f"{name}.k_proj", d, d, False, "attention")
    parts.linear(f"{name}.v_proj", d, d, True, "attention")
    parts.linear(f"{name}.q_proj", d, d, True, "attention")
    parts.linear(f"{name}.out_proj", d, d, True, "attention")


def build(cfg: Config, req: Request) -> Architecture:
    """Whisper's tensors for ``req.architecture``; absent keys take ``WhisperConfig``'s defaults."""
    d = cfg.size("d_model", 384, limit=MAX_WIDTH)
    vocab = cfg.size("vocab_size", 51865, limit=MAX_VOCAB)
    mels = cfg.size("num_mel_bins", 80, limit=MAX_SMALL)
    source = cfg.size("max_source_positions", 1500, limit=MAX_POSITIONS)
    target = cfg.size("max_target_positions", 448, limit=MAX_POSITIONS)
    tied = cfg.flag("tie_word_embeddings", True)
    stacks = encoder_decoder_stacks(cfg, d, (4, 6, 1536), attend=_attention, dropout=0.0)

    prefix = "" if req.head == "base" else "model."
    model = ModelParts()
    first = 0
    for side, count, layer in stacks:
        top = LayerParts()
        if side == "encoder":
            top.param("conv1.weight", (d, mels, 3), "embedding")
            top.param("conv1.bias", (d,), "embedding")
            top.param("conv2.weight", (d, d, 3), "embedding")
            top.param("conv2.bias", (d,), "embedding")
            embedding(top, "embed_positions", source, d, role="position")
        else:
            embedding(top, "embed_tokens", vocab, d)
            embedding(top, "embed_positions", target, d, role="position")
        model.extend(f"{prefix}{side}.", top)
        model.layers(f"{prefix}{side}.layers.", [layer] * count, first_index=first)
        first += count
        tail = LayerParts()
        tail.norm("layer_norm", d, True)
        model.extend(f"{prefix}{side}.", tail)
    if req.head == "conditional-generation" and not tied:
        model.param("proj_out.weight", (vocab, d), "head")
    return assemble(
        cfg,
        model,
        req,
        family="whisper",
        hidden_size=d,
        vocab_size=vocab,
        max_position_embeddings=target,
        tie_word_embeddings=tied,
        norm="layernorm",
        position="learned",
        hidden_dropout=cfg.number("dropout", 0.0) or 0.0,
    )


FAMILY = Family("whisper", "Whisper", "WhisperForConditionalGeneration", SEQ2SEQ_HEADS, build)
