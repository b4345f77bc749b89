"""One reading of a repo reference for every command: what huggingface_hub accepts, nothing else.

``parse_repo_ref`` turns what a person types into a ``RepoRef`` (repo id and
revision) without any request:

    ORG/NAME            ORG/NAME@REV        hf://ORG/NAME[@REV]   hf://models/ORG/NAME[@REV]
    NAME@REV (legacy)                       https://huggingface.co/ORG/NAME[/tree/REV]
                                            (or the same URL on HF_ENDPOINT)

URIs and URLs are read by huggingface_hub's own ``parse_hf_uri``, so a form
the library accepts is accepted here the same way, and a dataset, space or
bucket is refused with a reason. A two-part id must pass
``storage.repo_id`` (huggingface_hub's ``validate_repo_id`` plus the
``ORG/NAME`` shape the tracker stores; kept in storage so the webhook
receiver in feeds applies the same rule). A one-part id (``gpt2``,
``bert-base-uncased``) is a legacy canonical id, which the Hub still answers
by redirecting to the ORG/NAME it moved to; it is checked by
``validate_repo_id`` and stays ``RepoRef.legacy`` until ``tracker.hub.client``
resolves it from the Hub's answer (``model_info``'s ``id``), never from a
table of ours. A bad reference fails with the rule it breaks, not later as a 404.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.repo_ids import MAX_REPO_ID_LENGTH, InvalidRepoId, RepoId, repo_id
from tracker.errors import RepoIdError

MAX_LENGTH = MAX_REPO_ID_LENGTH


@dataclass(frozen=True)
class RepoRef:
    """A model repo and the revision asked for (None: its default branch)."""

    repo_id: str
    revision: str | None = None

    @property
    def legacy(self) -> bool:
        """A one-part id (``gpt2``) that only the Hub can map to its ORG/NAME."""
        return "/" not in self.repo_id

    @property
    def label(self) -> str:
        """``ORG/NAME@REV`` as a person typed it, or the repo id alone when no revision was given."""
        return f"{self.repo_id}@{self.revision}" if self.revision else self.repo_id


def validate_repo_id(text: str) -> RepoId:
    """``storage.repo_id``'s rule, raising the tracker's RepoIdError (commands report those)."""
    try:
        return repo_id(text)
    except InvalidRepoId as exc:
        raise RepoIdError(str(exc)) from None


def parse_repo_ref(text: str, endpoint: str | None = None) -> RepoRef:
    """The repo and revision ``text`` names (see the module text); RepoIdError when none.

    URLs on ``endpoint`` count as Hub URLs too, so a mirror's (or the
    emulator's) page URLs work.
    """
    from huggingface_hub import parse_hf_uri
    from huggingface_hub.errors import HfUriError

    text = text.strip()
    name, at, revision_text = text.partition("@")
    if "://" not in text and "/" not in name:
        if at and not revision_text:
            raise RepoIdError(f"{text!r} names no revision after '@'")
        return RepoRef(_legacy_id(name), revision_text or None)
    uri = text if "://" in text else f"hf://{text}"
    try:
        parsed = parse_hf_uri(uri, endpoint=endpoint)
    except HfUriError as exc:
        raise RepoIdError(f"{text!r} is not a model repo reference ({exc})") from None
    if parsed.type != "model":
        raise RepoIdError(f"{text!r} names a {parsed.type}, not a model repo")
    revision = parsed.revision or None
    if parsed.path_in_repo:
        raise RepoIdError(
            f"{text!r} names a file ({parsed.path_in_repo}) in a repo; give the repo itself"
        )
    if "/" in parsed.id:
        return RepoRef(validate_repo_id(parsed.id), revision)
    return RepoRef(_legacy_id(parsed.id), revision)


def _legacy_id(name: str) -> str:
    """A one-part id, checked by huggingface_hub's own rule and ours for a NAME."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import (  # type: ignore[attr-defined]  # lazily exported
        validate_repo_id as hub_rule,
    )

    try:
        hub_rule(name)
        repo_id(f"legacy/{name}")  # the per-part rule of an ORG/NAME's NAME
    except (HFValidationError, InvalidRepoId):
        raise RepoIdError(
            f"repo id {name[:60]!r} is neither ORG/NAME nor a legacy NAME the Hub accepts "
            "(letters, digits, '.', '_', '-'; no '--' or '..'; 96 characters at most)"
        ) from None
    return name


__all__ = ["MAX_LENGTH", "RepoRef", "parse_repo_ref", "validate_repo_id"]
