"""Repo ids as the Hub names them, checked before one is stored or requested.

The rules are huggingface_hub's ``validate_repo_id`` (huggingface_hub 2.4.0,
``utils/_validators.py``: letters, digits, ``.``, ``_``, ``-``; no ``--`` or
``..``; no leading or trailing ``.`` or ``-``; not ending in ``.git``; 96
characters at most) plus the ``ORG/NAME`` shape the tracker needs (exactly one
``/``). The rule lives in storage because every room receives repo ids from
outside (the CLI, the configuration, Hub webhooks) and storage depends on no
other room; a bad id fails here with the rule it breaks.

``RepoId`` is a ``str`` that went through ``repo_id``: signatures that carry a
repo id between rooms take a ``RepoId``, so text from outside (an argument, a
configuration file, a webhook, a URL path, a Hub listing) is checked once where
it enters and never again inside. Rows storage itself wrote are read back as
``RepoId(row.repo_id)`` without a second check: storage stored only checked ids.
"""

from __future__ import annotations

import re
from typing import Final, NewType

from storage.errors import InvalidRecord

MAX_REPO_ID_LENGTH: Final = 96
_PART: Final = re.compile(r"[A-Za-z0-9._-]+")
_SHOWN: Final = 60


RepoId = NewType("RepoId", str)
"""An ``ORG/NAME`` the Hub accepts; made only by ``repo_id`` (or read back from storage)."""


class InvalidRepoId(InvalidRecord, ValueError):
    """A repo id the Hub would reject; the message names the rule."""


def repo_id(text: str) -> RepoId:
    """``text`` as a RepoId if the Hub accepts it as ``ORG/NAME``; else InvalidRepoId."""
    if not isinstance(text, str):
        raise InvalidRepoId(f"repo id must be a string, not {type(text).__name__}")
    if not text:
        raise InvalidRepoId("repo id is empty; expected ORG/NAME")
    shown = _shown(text)
    if len(text) > MAX_REPO_ID_LENGTH:
        raise InvalidRepoId(
            f"repo id {shown} is {len(text)} characters; at most {MAX_REPO_ID_LENGTH}"
        )
    parts = text.split("/")
    if len(parts) != 2:
        raise InvalidRepoId(f"repo id {shown} must have the form ORG/NAME (exactly one '/')")
    for part in parts:
        _check_part(shown, part)
    if text.endswith(".git"):
        raise InvalidRepoId(f"repo id {shown} must not end with '.git'")
    return RepoId(text)


def _check_part(shown: str, part: str) -> None:
    if not part:
        raise InvalidRepoId(f"repo id {shown} has an empty ORG or NAME")
    if not _PART.fullmatch(part):
        bad = sorted({c for c in part if not _PART.fullmatch(c)})
        raise InvalidRepoId(
            f"repo id {shown} contains {''.join(bad)!r}; only letters, digits, '.', '_', '-'"
        )
    if "--" in part or ".." in part:
        raise InvalidRepoId(f"repo id {shown} must not contain '--' or '..'")
    if part[0] in ".-" or part[-1] in ".-":
        raise InvalidRepoId(f"repo id {shown}: ORG and NAME must not start or end with '.' or '-'")


def _shown(text: str) -> str:
    """The id as a message quotes it: repr, cut short, so a 10 kB name stays one short line."""
    if len(text) <= _SHOWN:
        return repr(text)
    return repr(text[:_SHOWN]) + "..."


def org_of(repo: RepoId) -> str:
    """The namespace of an ``ORG/NAME`` repo id: what an org feed selects on."""
    return repo.partition("/")[0]


__all__ = ["MAX_REPO_ID_LENGTH", "InvalidRepoId", "RepoId", "org_of", "repo_id"]
