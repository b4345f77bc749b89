"""The artifact table: every kind the tracker reads and diffs, one row each.

A row names the files of its kind (``fnmatch`` patterns on the whole repo
path; across the table the first match wins, so specific names come first),
how their bytes parse and how many may be loaded, and the kind's differ.
Built-in kinds are ordinary rows; adding an artifact is adding a row here.
Some rows read no file of their own (``repo``: the file list; ``weights``:
the manifest the snapshot read from headers and index files), and a differ
may read files another row parses (the chat template view reads
tokenizer_config.json). ``tracker.diff.revision`` runs every row's differ
and reports files that stop or start parsing, the same way for every kind.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from storage.records import Change
from tracker.diff.card import diff_card_view, parse_front_matter
from tracker.diff.common import per_file
from tracker.diff.files import diff_repo
from tracker.diff.json_diff import diff_json_file
from tracker.diff.manifest import diff_weights
from tracker.diff.remote_code import diff_remote_code
from tracker.diff.templates import diff_template_view
from tracker.diff.tokenizer import diff_tokenizer_kind, parse_tokenizer
from tracker.diff.weight_index import diff_weight_index_file
from tracker.untrusted.artifacts import (
    TOKENIZER_LIMIT,
    ArtifactKind,
    FileRule,
    Side,
    parse_json,
    parse_template_json,
    parse_text,
)


def _json(*patterns: str) -> tuple[FileRule, ...]:
    return tuple(FileRule(pattern, parse_json) for pattern in patterns)


_diff_json = per_file(diff_json_file)

ARTIFACTS: tuple[ArtifactKind, ...] = (
    ArtifactKind("config", _diff_json, _json("config.json")),
    ArtifactKind(
        "generation_config", _diff_json, _json("generation_config.json", "generation_config_*.json")
    ),
    ArtifactKind("tokenizer_config", _diff_json, _json("tokenizer_config.json")),
    ArtifactKind("special_tokens_map", _diff_json, _json("special_tokens_map.json")),
    ArtifactKind(
        "tokenizer",
        diff_tokenizer_kind,
        (
            FileRule("tokenizer.json", parse_tokenizer, TOKENIZER_LIMIT),
            FileRule("added_tokens.json", parse_json),
        ),
    ),
    ArtifactKind(
        "chat_template",
        diff_template_view,
        (
            FileRule("chat_template.jinja", parse_text),
            FileRule("chat_template.json", parse_template_json),
        ),
    ),
    ArtifactKind("card", diff_card_view, (FileRule("README.md", parse_front_matter),)),
    ArtifactKind("weight_index", per_file(diff_weight_index_file), _json("*.index.json")),
    ArtifactKind("json", _diff_json, _json("*.json")),
    ArtifactKind("repo", diff_repo),
    ArtifactKind("weights", diff_weights),
    ArtifactKind("remote_code", diff_remote_code),
)
"""Every artifact kind; first match wins for a path, so specific names come first."""


PATHS_REMEMBERED: Final = 65536
"""Paths whose kind and rule are kept: a worker meets the same paths revision after revision
(every file of a repo is matched against every pattern of the table on each), and the table
is fixed, so a path matched once is answered from memory."""


@lru_cache(maxsize=PATHS_REMEMBERED)
def artifact_for(path: str) -> ArtifactKind | None:
    """The kind of a repo path, or None if the tracker does not read that file."""
    return next((kind for kind in ARTIFACTS if kind.matches(path)), None)


@lru_cache(maxsize=PATHS_REMEMBERED)
def rule_for(path: str) -> FileRule | None:
    """How a repo path is parsed and its size limit, or None if the tracker does not read it."""
    kind = artifact_for(path)
    return None if kind is None else kind.rule_for(path)


def diff_kinds(old: Side | None, new: Side) -> list[Change]:
    """Every row's differ over the two revisions, in table order."""
    changes: list[Change] = []
    for kind in ARTIFACTS:
        changes += kind.differ(kind.name, old, new)
    return changes


__all__ = ["ARTIFACTS", "artifact_for", "diff_kinds", "rule_for"]
