"""The REPO argument of every command, read one way: tracker.hub.repo_id's parser, legacy ids resolved.

``track``, ``untrack``, ``history``, ``diff``, ``plan`` and ``audit`` all take
what huggingface_hub takes (``ORG/NAME``, ``hf://...``, a model page URL with
``/tree/REV``, a legacy ``gpt2``). A legacy id is stored and shown under the
ORG/NAME the Hub answers with, so ``track gpt2`` and ``history
openai-community/gpt2`` name one repo. A plain ``ORG/NAME`` is recognised
without importing anything, so ``history`` and ``diff`` answered by a running
daemon still start without storage or huggingface_hub.
"""

from __future__ import annotations

import re

from tracker.errors import UsageError
from tracker.settings import Settings

PLAIN = re.compile(r"[A-Za-z0-9._-]+/[A-Za-z0-9._-]+")


def repo_argument(
    text: str, settings: Settings, *, revisions: bool = False
) -> tuple[str, str | None]:
    """(ORG/NAME, revision) that ``text`` names; a revision is refused unless ``revisions``.

    ``main`` is not a revision here: a page URL ending in ``/tree/main`` names the repo.
    """
    if PLAIN.fullmatch(text):
        return text, None  # the command's own check applies the Hub's full rule
    from tracker.errors import TrackerError
    from tracker.hub.repo_id import parse_repo_ref

    try:
        ref = parse_repo_ref(text, settings.hub.endpoint)
        if ref.legacy:
            from tracker.hub.client import Hub
            from tracker.hub.retry import INTERACTIVE, Retrying

            ref = Hub.from_settings(settings.hub, Retrying(INTERACTIVE)).canonical(ref)
    except TrackerError as exc:
        raise UsageError(str(exc)) from None
    revision = None if ref.revision == "main" else ref.revision
    if revision is not None and not revisions:
        raise UsageError(f"{text}: this command follows main; name the repo without @{revision}")
    return ref.repo_id, revision


__all__ = ["PLAIN", "repo_argument"]
