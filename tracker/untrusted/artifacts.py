"""What an artifact kind is: the files it reads, how their bytes parse, and its differ.

The table itself is ``tracker.diff.registry.ARTIFACTS``: the differs live in
``tracker.diff``, so the table sits beside them and this module imports
nothing of ``tracker.diff`` (the arrow points one way, diff -> artifacts).
Here are the shapes every entry fills in and the parsers several share:

- ``FileRule``: one ``fnmatch`` pattern on the whole repo path, its parser
  and the most bytes the snapshot may load for it;
- ``ArtifactKind``: a name, its file rules and one ``Differ``, a function of
  the two revisions (``Side``) that returns typed changes. A kind may read no
  file of its own (the file list, the weight manifest) or look at files other
  kinds parse (the chat template view reads tokenizer_config.json too).

Parse failures are ``ArtifactParseError``; the revision differ turns them
into ``parse_error`` changes, so a differ only ever sees parsed values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Protocol

from storage.records import Change, Snapshot
from tracker.errors import ArtifactParseError
from tracker.untrusted.json_input import JsonInputError, read_json

MiB = 1024 * 1024
TEXT_LIMIT = 10 * MiB
TOKENIZER_LIMIT = 50 * MiB

Parser = Callable[[bytes], Any]


@dataclass(frozen=True)
class Parsed:
    """One parsed file: its value, or why it did not parse."""

    value: Any = None
    error: str | None = None


class Side(Protocol):
    """One revision as a differ reads it: the snapshot and its parsed text files."""

    @property
    def snapshot(self) -> Snapshot:
        """The revision's snapshot: its file list with content keys, and its texts."""
        ...

    def parsed(self, path: str) -> Parsed | None:
        """The parsed file at ``path``, or None if the revision has no such text."""
        ...

    def value(self, path: str) -> Any:
        """The parsed value at ``path``; None if absent or unparsable."""
        ...

    def paths_of(self, kind: str) -> list[str]:
        """The revision's text paths that the table gives to ``kind``."""
        ...


Differ = Callable[[str, Side | None, Side], list[Change]]
"""(kind name, old revision or None for a repo's first, new revision) -> changes.

The kind name lets one differ serve several rows (the JSON differ reads
each kind's own field rules)."""


@dataclass(frozen=True)
class FileRule:
    """A repo path pattern a kind reads, its parser and its size limit in bytes."""

    pattern: str
    parse: Parser
    limit: int = TEXT_LIMIT

    def matches(self, path: str) -> bool:
        """Whether ``path`` is this rule's file: case-sensitive, and ``*`` also crosses ``/``."""
        return fnmatchcase(path, self.pattern)


@dataclass(frozen=True)
class ArtifactKind:
    """One row of the artifact table."""

    name: str
    differ: Differ
    files: tuple[FileRule, ...] = ()

    def rule_for(self, path: str) -> FileRule | None:
        """The first of the kind's rules matching ``path``; None if the kind does not read it."""
        return next((rule for rule in self.files if rule.matches(path)), None)

    def matches(self, path: str) -> bool:
        """Whether the kind reads ``path`` with one of its file rules."""
        return self.rule_for(path) is not None


def parse_json(data: bytes) -> Any:
    """Strict JSON (UTF-8, one document, at most 128 levels deep, integers under 4,300
    digits); ArtifactParseError names line and column, or the key of a too-long integer."""
    try:
        return read_json(data)
    except JsonInputError as exc:
        raise ArtifactParseError(str(exc)) from exc


def parse_text(data: bytes) -> str:
    """The bytes as UTF-8 text, a leading BOM dropped; ArtifactParseError names the bad byte."""
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


__all__ = [
    "TEXT_LIMIT",
    "TOKENIZER_LIMIT",
    "ArtifactKind",
    "ArtifactParseError",
    "Differ",
    "FileRule",
    "Parsed",
    "Parser",
    "Side",
    "parse_json",
    "parse_template_json",
    "parse_text",
    "templates_from",
]
