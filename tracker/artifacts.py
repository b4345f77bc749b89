"""The table of artifact kinds: which upstream files the tracker reads, how, and who diffs them.

An entry matches a path in the repo (``fnmatch`` pattern on the whole path,
first match wins), bounds how many bytes may be loaded, parses the bytes into
a value, and names the differ for two parsed values. Kinds whose differ is
None feed a revision-level view instead (chat templates from three possible
files are compared as rendered prompts in ``tracker.diff.revision``).
Adding an artifact is adding a row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from storage.records import Change
from tracker.diff.card import parse_front_matter
from tracker.diff.common import DiffContext
from tracker.diff.json_diff import diff_json
from tracker.diff.tokenizer import parse_tokenizer
from tracker.json_input import JsonInputError, read_json

MiB = 1024 * 1024
TEXT_LIMIT = 10 * MiB
TOKENIZER_LIMIT = 50 * MiB

Parser = Callable[[bytes], Any]
Differ = Callable[[str, str, Any, Any, DiffContext], list[Change]]


class ArtifactParseError(ValueError):
    """An artifact's bytes do not parse; the message says where and why."""


@dataclass(frozen=True)
class ArtifactKind:
    name: str
    patterns: tuple[str, ...]
    parse: Parser
    differ: Differ | None
    limit: int = TEXT_LIMIT

    def matches(self, path: str) -> bool:
        return any(fnmatchcase(path, pattern) for pattern in self.patterns)


def parse_json(data: bytes) -> Any:
    """Strict JSON (UTF-8, one document, at most 128 levels deep, integers under 4,300
    digits); ArtifactParseError names line and column, or the key of a too-long integer."""
    try:
        return read_json(data)
    except JsonInputError as exc:
        raise ArtifactParseError(str(exc)) from exc


def parse_text(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ArtifactParseError(f"not UTF-8 at byte {exc.start}") from exc


def parse_template_json(data: bytes) -> dict[str, str]:
    """chat_template.json: ``{"chat_template": str | [{"name", "template"}]}``."""
    document = parse_json(data)
    if not isinstance(document, dict) or "chat_template" not in document:
        raise ArtifactParseError("chat_template.json has no 'chat_template' key")
    return templates_from(document["chat_template"])


def templates_from(value: Any) -> dict[str, str]:
    """A chat_template value (string, or list of named templates) as name -> source."""
    if isinstance(value, str):
        return {"default": value}
    if isinstance(value, list) and all(
        isinstance(t, dict)
        and isinstance(t.get("name"), str)
        and isinstance(t.get("template"), str)
        for t in value
    ):
        return {t["name"]: t["template"] for t in value}
    raise ArtifactParseError("chat_template is neither a string nor a list of {name, template}")


def _parse_tokenizer(data: bytes) -> Any:
    try:
        return parse_tokenizer(data)
    except ValueError as exc:
        raise ArtifactParseError(str(exc)) from exc


def _parse_card(data: bytes) -> Any:
    try:
        return parse_front_matter(data)
    except ValueError as exc:
        raise ArtifactParseError(str(exc)) from exc


def _json_differ(name: str) -> Differ:
    def differ(kind: str, path: str, old: Any, new: Any, context: DiffContext) -> list[Change]:
        return diff_json(name, path, old, new, context)

    return differ


ARTIFACTS: tuple[ArtifactKind, ...] = (
    ArtifactKind("config", ("config.json",), parse_json, _json_differ("config")),
    ArtifactKind(
        "generation_config",
        ("generation_config.json", "generation_config_*.json"),
        parse_json,
        _json_differ("generation_config"),
    ),
    ArtifactKind(
        "tokenizer_config", ("tokenizer_config.json",), parse_json, _json_differ("tokenizer_config")
    ),
    ArtifactKind(
        "special_tokens_map",
        ("special_tokens_map.json",),
        parse_json,
        _json_differ("special_tokens_map"),
    ),
    ArtifactKind("tokenizer", ("tokenizer.json",), _parse_tokenizer, None, TOKENIZER_LIMIT),
    ArtifactKind("chat_template", ("chat_template.jinja",), parse_text, None),
    ArtifactKind("chat_template_json", ("chat_template.json",), parse_template_json, None),
    ArtifactKind("card", ("README.md",), _parse_card, None),
    ArtifactKind("weight_index", ("*.index.json",), parse_json, _json_differ("weight_index")),
    ArtifactKind("json", ("*.json",), parse_json, _json_differ("json")),
)
"""Every artifact the tracker reads; first match wins, so specific names come first."""


def artifact_for(path: str) -> ArtifactKind | None:
    """The kind of a repo path, or None if the tracker does not read that file."""
    return next((kind for kind in ARTIFACTS if kind.matches(path)), None)


__all__ = [
    "ARTIFACTS",
    "ArtifactKind",
    "ArtifactParseError",
    "artifact_for",
    "parse_json",
    "templates_from",
]
