"""Whether a command-line SOURCE could name a Hub repo, decided without importing anything heavy.

``plan`` takes a file, a directory or a Hub reference in the same argument;
a path that does not exist must fail fast (no huggingface_hub, no storage
import), so the shape is checked here
first and only a plausible ``ORG/NAME[@REV]``, legacy ``NAME[@REV]`` or URL
goes on to the Hub. A one-part name with a dot (``config.json``) is a missing
file, not a legacy id: the Hub's legacy ids (``gpt2``, ``bert-base-uncased``)
have none.
"""

from __future__ import annotations

import re

REPO_SHAPE = re.compile(r"[^/@:\s]+/[^/@:\s]+(@\S+)?")
LEGACY_SHAPE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(@\S+)?")


def could_be_hub_ref(text: str) -> bool:
    """``ORG/NAME[@REV]``, ``NAME[@REV]`` or something with a scheme (``hf://``, ``https://``)."""
    return "://" in text or any(
        shape.fullmatch(text) is not None for shape in (REPO_SHAPE, LEGACY_SHAPE)
    )


__all__ = ["LEGACY_SHAPE", "REPO_SHAPE", "could_be_hub_ref"]
