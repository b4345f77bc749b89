"""Cutting report text to a length without breaking a word, as a reader expects."""

from __future__ import annotations

import textwrap

ELLIPSIS = "…"


def words_within(text: str, limit: int) -> str:
    """``text`` on one line within ``limit`` characters, cut between words.

    ``textwrap.shorten`` drops whole words; a single word longer than the
    limit (a long token or path) is the one case cut inside, since nothing
    else would fit.
    """
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    shortened = textwrap.shorten(line, width=limit, placeholder=f" {ELLIPSIS}")
    if shortened.strip() != ELLIPSIS:
        return shortened
    return line[: limit - 1] + ELLIPSIS


__all__ = ["words_within"]
