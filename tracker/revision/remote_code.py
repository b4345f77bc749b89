"""Code a model loads from another repo: ``auto_map`` entries of the form ``other/repo--module.Class``.

transformers' ``get_class_from_dynamic_module`` (transformers 4.x,
``dynamic_module_utils.py``) splits such a reference on ``--`` and fetches
``module.py`` from *other/repo*. ``code_revision`` defaults to the model's own
revision only when the reference names the model's own repo, so a pinned model
still runs the other repo's code at its ``main``: a push there changes what a
pinned user runs. Each revision's snapshot therefore records, per referenced
repo, the commit its ``main`` was at and the content key of each of its
``*.py`` files, when the model's revision was taken (the revision that loads
them); the ``remote_code`` differ compares those between revisions.

References are read from ``config.json`` and ``tokenizer_config.json``:
``auto_map`` values (a string, or a list such as ``[slow, fast]`` for
``AutoTokenizer``) and ``custom_pipelines.*.impl``. A reference to the
model's own repo is ordinary custom code (the ``code`` artifact).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from storage import RepoId
from tracker.diff.remote_code import CARD_KEY
from tracker.errors import HubError, RepoIdError
from tracker.hub.client import RepoFiles
from tracker.hub.repo_id import validate_repo_id

SOURCES = ("config.json", "tokenizer_config.json")
MAX_REFERENCED_REPOS = 8
"""A config naming more repos than this is not a model's loader; the rest are not fetched."""
MAX_CODE_FILES = 200


@dataclass(frozen=True, order=True)
class RemoteReference:
    """One ``auto_map`` entry that loads code from another repo."""

    repo_id: RepoId
    module: str
    where: str
    """The file and key that names it, e.g. ``config.json auto_map.AutoModel``."""


class CodeLister(Protocol):
    """What reading a referenced repo needs of the Hub: one listing of main (its sha and files)."""

    def files(self, repo_id: RepoId, sha: str) -> RepoFiles:
        """The referenced repo's listing at ``sha``; Hub errors are ``tracker.errors``."""
        ...


def cross_repo_references(
    own_repo: str, documents: Mapping[str, Any]
) -> tuple[RemoteReference, ...]:
    """Every reference to another repo's code in ``documents`` (path -> parsed JSON)."""
    found = {
        reference
        for path in SOURCES
        if isinstance(documents.get(path), dict)
        for reference in _references(path, documents[path])
        if reference.repo_id != own_repo
    }
    return tuple(sorted(found))


def read_referenced_code(
    hub: CodeLister, references: tuple[RemoteReference, ...]
) -> dict[str, Any]:
    """Per referenced repo: its main's sha and ``{path: content key}`` of its ``*.py`` files,
    the entries naming it, or the error that kept it from being read (gone, gated ...)."""
    recorded: dict[str, Any] = {}
    repos = sorted({r.repo_id for r in references})
    for repo_id in repos[:MAX_REFERENCED_REPOS]:
        named = sorted({f"{r.where} -> {r.module}" for r in references if r.repo_id == repo_id})
        try:
            listing = hub.files(repo_id, "main")
        except HubError as exc:
            recorded[repo_id] = {"entries": named, "error": str(exc)}
            continue
        code = sorted((f.path, f.content_key) for f in listing.files if f.path.endswith(".py"))
        recorded[repo_id] = {
            "entries": named,
            "sha": listing.sha,
            "files": dict(code[:MAX_CODE_FILES]),
        }
    return recorded


def _references(path: str, document: Mapping[str, Any]) -> Iterator[RemoteReference]:
    auto_map = document.get("auto_map")
    if isinstance(auto_map, dict):
        for key, value in auto_map.items():
            values = value if isinstance(value, list) else [value]
            for item in values:
                reference = _parse(item, f"{path} auto_map.{key}")
                if reference is not None:
                    yield reference
    pipelines = document.get("custom_pipelines")
    if isinstance(pipelines, dict):
        for task, spec in pipelines.items():
            if isinstance(spec, dict):
                reference = _parse(spec.get("impl"), f"{path} custom_pipelines.{task}.impl")
                if reference is not None:
                    yield reference


def _parse(value: Any, where: str) -> RemoteReference | None:
    """``other/repo--module.Class`` -> a reference; anything else (a local class) -> None."""
    if not isinstance(value, str) or "--" not in value:
        return None
    repo_id, _, target = value.partition("--")
    module = target.rsplit(".", 1)[0] if "." in target else target
    try:
        return RemoteReference(validate_repo_id(repo_id), module, where)
    except RepoIdError:
        return None


__all__ = [
    "CARD_KEY",
    "CodeLister",
    "RemoteReference",
    "cross_repo_references",
    "read_referenced_code",
]
