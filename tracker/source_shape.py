"""Whether a command-line SOURCE could name a Hub repo, decided without importing anything heavy.

``plan`` takes a file, a directory or a Hub reference in the same argument;
a path that does not exist must fail as fast as it did before Hub sources
existed (no huggingface_hub, no storage import), so the shape is checked here
first and only a plausible ``ORG/NAME[@REV]`` or URL goes on to the Hub.
"""

from __future__ import annotations

import re

REPO_SHAPE = re.compile(r"[^/@:\s]+/[^/@:\s]+(@\S+)?")


def could_be_hub_ref(text: str) -> bool:
    """``ORG/NAME``, ``ORG/NAME@REV`` or something with a scheme (``hf://``, ``https://``)."""
    return "://" in text or REPO_SHAPE.fullmatch(text) is not None


__all__ = ["REPO_SHAPE", "could_be_hub_ref"]
