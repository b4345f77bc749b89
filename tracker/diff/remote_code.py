"""The ``remote_code`` differ: code this model loads from other repos, between two revisions.

What a snapshot recorded of each referenced repo (tracker.revision.remote_code) is
compared: a reference that appears or goes away, and each ``*.py`` file of a
referenced repo added, changed or removed since the previous revision was
taken. A change there is a change here: a user pinned to this model runs the
referenced repo's new code the next time transformers loads it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storage.records import Change, Severity
from tracker.untrusted.artifacts import Side

ARTIFACT = "remote_code"
CARD_KEY = "remote_code"
"""Where a snapshot keeps what it read of referenced repos (inside its card document)."""


def diff_remote_code(kind: str, old: Side | None, new: Side) -> list[Change]:
    """The row's differ: referenced repos and their code files, old against new."""
    before = _recorded(old)
    after = _recorded(new)
    changes: list[Change] = []
    for repo_id in sorted(set(before) | set(after)):
        if repo_id not in before:
            changes.append(_reference_added(repo_id, after[repo_id]))
        elif repo_id not in after:
            changes.append(_reference_removed(repo_id, before[repo_id]))
        else:
            changes.extend(_entries_changed(repo_id, before[repo_id], after[repo_id]))
            changes.extend(_code_changes(repo_id, before[repo_id], after[repo_id]))
    return changes


def _recorded(side: Side | None) -> Mapping[str, Any]:
    if side is None:
        return {}
    recorded = side.snapshot.card.get(CARD_KEY)
    return recorded if isinstance(recorded, dict) else {}


def _reference_added(repo_id: str, now: Mapping[str, Any]) -> Change:
    entries = "; ".join(now.get("entries", []))
    return Change(
        ARTIFACT,
        repo_id,
        "reference_added",
        None,
        dict(now),
        Severity.HIGH,
        f"loads code from another repo, {repo_id} ({entries}), at that repo's main: "
        "pinning this model does not pin it",
    )


def _reference_removed(repo_id: str, was: Mapping[str, Any]) -> Change:
    return Change(
        ARTIFACT,
        repo_id,
        "reference_removed",
        dict(was),
        None,
        Severity.MODERATE,
        f"no longer loads code from {repo_id}",
    )


def _entries_changed(repo_id: str, was: Mapping[str, Any], now: Mapping[str, Any]) -> list[Change]:
    old, new = list(was.get("entries", [])), list(now.get("entries", []))
    if old == new:
        return []
    gained = [e for e in new if e not in old]
    lost = [e for e in old if e not in new]
    said = "; ".join([*(f"now {e}" for e in gained), *(f"no longer {e}" for e in lost)])
    return [
        Change(
            ARTIFACT,
            repo_id,
            "reference_changed",
            old,
            new,
            Severity.MODERATE,
            f"what it loads from {repo_id} changed: {said}",
        )
    ]


def _code_changes(repo_id: str, was: Mapping[str, Any], now: Mapping[str, Any]) -> list[Change]:
    if "error" in now or "error" in was:
        return _readability(repo_id, was, now)
    old_files: Mapping[str, str] = was.get("files", {})
    new_files: Mapping[str, str] = now.get("files", {})
    moved = f"{str(was.get('sha'))[:12]} -> {str(now.get('sha'))[:12]}"
    changes = []
    for path in sorted(set(old_files) | set(new_files)):
        old_key, new_key = old_files.get(path), new_files.get(path)
        if old_key == new_key:
            continue
        if old_key is None:
            kind, severity, said = "code_added", Severity.HIGH, "added"
        elif new_key is None:
            kind, severity, said = "code_removed", Severity.MODERATE, "removed"
        else:
            kind, severity, said = "code_modified", Severity.HIGH, "changed"
        changes.append(
            Change(
                ARTIFACT,
                f"{repo_id}/{path}",
                kind,
                old_key,
                new_key,
                severity,
                f"remote code {repo_id}/{path} {said} ({moved}): this model runs it with "
                "trust_remote_code",
            )
        )
    return changes


def _readability(repo_id: str, was: Mapping[str, Any], now: Mapping[str, Any]) -> list[Change]:
    if "error" in now and "error" not in was:
        return [
            Change(
                ARTIFACT,
                repo_id,
                "unreadable",
                was.get("sha"),
                now["error"],
                Severity.MODERATE,
                f"the code this model loads from {repo_id} cannot be read now: {now['error']}",
            )
        ]
    if "error" in was and "error" not in now:
        return [
            Change(
                ARTIFACT,
                repo_id,
                "readable",
                was["error"],
                now.get("sha"),
                Severity.INFO,
                f"the code this model loads from {repo_id} can be read again",
            )
        ]
    return []


__all__ = ["ARTIFACT", "CARD_KEY", "diff_remote_code"]
