"""Token and position embeddings, and the output heads that read the final hidden state."""

from __future__ import annotations

from estimator.blocks.layer import LayerParts


def embedding(
    parts: LayerParts, name: str, rows: int, width: int, *, role: str = "embedding"
) -> None:
    """A ``(rows, width)`` lookup table; ``role="position"`` files it as a position embedding."""
    parts.param(f"{name}.weight", (rows, width), "position" if role == "position" else "embedding")


def lm_head(
    parts: LayerParts, name: str, hidden: int, vocab: int, *, tied: bool, bias: bool = False
) -> None:
    """The vocabulary projection; a tied weight is the embedding itself and is not listed."""
    if not tied:
        parts.param(f"{name}.weight", (vocab, hidden), "head")
    if bias:
        parts.param(f"{name}.bias", (vocab,), "head")
