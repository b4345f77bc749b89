"""Reading a recorded corpus: MANIFEST.json + EVENTS.json + ``ORG/NAME/REVISION/PATH`` files.

A manifest entry is one file as one commit added or changed it; its ``notes`` carry the
commit title, the author and where the commit lives::

    commit 'Update config.json (#3)' by Kai Wu (main)
    commit 'Update config.json' by Arthur Zucker (PR refs/pr/3)
    commit 'fix' by Radamés Ajna (PR branch (unmerged))
    GitHub re-upload (...); upstream revision unknown; ...      (revision null, folder unknown/)

EVENTS.json entries whose notes start with ``DELETED`` remove a file in a commit
(``DELETED in this commit ('TITLE' by AUTHOR)``); other events (files too large to
collect) are not replayable and are left out.

Where the notes do not say where a deleting commit lives, a rule decides: a path can
leave ``main`` only once, so when the same path is deleted again later without being
added back, the earlier deletion was the pull request's own commit and the later one
its merge (titled ``... (#N)``), and the earlier one is put on ``refs/pr/N``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tracker.hubsim.errors import CorpusError

MAIN = "main"
UNKNOWN_REVISION_DIR = "unknown"
UNKNOWN_TITLE = "Upload files (upstream commit not recorded)"

_COMMIT_NOTE = re.compile(
    r"^commit '(?P<title>.*)' by (?P<author>.*?) \((?P<where>main|PR refs/pr/(?P<pr>\d+)|PR branch \(unmerged\))\)"
)
_DELETION_NOTE = re.compile(r"^DELETED in this commit \('(?P<title>.*)' by (?P<author>.*)\)$")
_MERGE_TITLE = re.compile(r"\(#(?P<pr>\d+)\)\s*$")
_REUPLOAD_DATE = re.compile(r"as committed (?P<day>\d{4}-\d{2}-\d{2})")


@dataclass
class RecordedCommit:
    """One upstream commit as far as the corpus knows it."""

    repo_id: str
    sha: str | None
    """The upstream sha; None when the corpus does not know it (a re-upload)."""
    date: datetime
    title: str
    author: str
    ref: str | None
    """``main``, ``refs/pr/N``, or None for a commit reachable only by its sha."""
    files: dict[str, bytes] = field(default_factory=dict)
    deletions: list[str] = field(default_factory=list)
    order: int = 0
    """Position of its first entry in the manifest, to order commits with equal dates."""


def is_safe_path(path: str) -> bool:
    """A relative path that stays inside its folder: no ``..``, ``.``, empty or absolute part.

    Manifest entries and scripted commits are untrusted: a ``../`` path would read (and
    then serve) a file outside the corpus, and ``--host`` can expose the server.
    """
    parts = path.replace("\\", "/").split("/")
    return bool(path) and "\0" not in path and all(p not in ("", ".", "..") for p in parts)


def _checked_source(root: Path, repo_id: str, folder: str, path: str, where: str) -> Path:
    if repo_id.count("/") != 1 or not is_safe_path(repo_id):
        raise CorpusError(f"{where}: repo_id {repo_id!r} is not ORG/NAME")
    if "/" in folder or not is_safe_path(folder):
        raise CorpusError(f"{where}: revision {folder!r} is not a single folder name")
    if not is_safe_path(path):
        raise CorpusError(f"{where}: file {path!r} leaves the repo (absolute, '..' or empty part)")
    source = root / repo_id / folder / path
    if not source.resolve().is_relative_to(root.resolve()):
        raise CorpusError(f"{where}: {repo_id}/{folder}/{path} resolves outside the corpus")
    return source


def load_corpus(root: Path) -> dict[str, list[RecordedCommit]]:
    """Every repo's recorded commits, oldest first."""
    manifest = _read_json_list(root / "MANIFEST.json")
    events_path = root / "EVENTS.json"
    events = _read_json_list(events_path) if events_path.exists() else []
    commits: dict[tuple[str, str | None], RecordedCommit] = {}
    for index, entry in enumerate(manifest):
        _add_file(root, commits, index, entry)
    for index, entry in enumerate(events, start=len(manifest)):
        if str(entry.get("notes", "")).startswith("DELETED"):
            _add_deletion(commits, index, entry)
    by_repo: dict[str, list[RecordedCommit]] = {}
    for commit in commits.values():
        by_repo.setdefault(commit.repo_id, []).append(commit)
    for history in by_repo.values():
        history.sort(key=lambda c: (c.date, c.order))
        _place_repeated_deletions(history)
    return dict(sorted(by_repo.items()))


def _read_json_list(path: Path) -> list[Mapping[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CorpusError(f"{path}: not found; a corpus directory holds MANIFEST.json") from None
    except json.JSONDecodeError as exc:
        raise CorpusError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(data, list):
        raise CorpusError(f"{path}: expected a JSON list of entries")
    return data


def _field(entry: Mapping[str, Any], name: str, where: str) -> str:
    value = entry.get(name)
    if not isinstance(value, str) or not value:
        raise CorpusError(f"{where}: entry lacks {name!r}")
    return value


def _parse_date(text: str, where: str) -> datetime:
    try:
        date = datetime.fromisoformat(text)
    except ValueError:
        raise CorpusError(f"{where}: date {text!r} is not ISO 8601") from None
    if date.tzinfo is None:
        raise CorpusError(f"{where}: date {text!r} has no time zone")
    return date


def _entry_date(entry: Mapping[str, Any], where: str) -> datetime:
    """The commit time; a re-upload without one is dated by the day its notes give."""
    if entry.get("date"):
        return _parse_date(_field(entry, "date", where), where)
    day = _REUPLOAD_DATE.search(str(entry.get("notes", "")))
    if day is None:
        raise CorpusError(f"{where}: entry has neither a date nor 'as committed YYYY-MM-DD' notes")
    return _parse_date(day["day"] + "T00:00:00+00:00", where)


def _new_commit(
    commits: dict[tuple[str, str | None], RecordedCommit],
    repo_id: str,
    sha: str | None,
    entry: Mapping[str, Any],
    index: int,
    where: str,
) -> RecordedCommit:
    key = (repo_id, sha)
    if key not in commits:
        date = _entry_date(entry, where)
        commits[key] = RecordedCommit(
            repo_id, sha, date, UNKNOWN_TITLE, repo_id.split("/")[0], MAIN, order=index
        )
    return commits[key]


def _add_file(
    root: Path,
    commits: dict[tuple[str, str | None], RecordedCommit],
    index: int,
    entry: Mapping[str, Any],
) -> None:
    where = f"MANIFEST.json entry {index}"
    repo_id = _field(entry, "repo_id", where)
    path = _field(entry, "file", where)
    sha = entry.get("revision")
    folder = sha if isinstance(sha, str) else UNKNOWN_REVISION_DIR
    source = _checked_source(root, repo_id, folder, path, where)
    try:
        content = source.read_bytes()
    except FileNotFoundError:
        raise CorpusError(f"{where}: {repo_id}/{folder}/{path} is missing") from None
    commit = _new_commit(
        commits, repo_id, sha if isinstance(sha, str) else None, entry, index, where
    )
    match = _COMMIT_NOTE.match(str(entry.get("notes", "")))
    if match:
        commit.title, commit.author = match["title"], match["author"]
        commit.ref = (
            MAIN if match["where"] == MAIN else (f"refs/pr/{match['pr']}" if match["pr"] else None)
        )
    commit.files[path] = content


def _add_deletion(
    commits: dict[tuple[str, str | None], RecordedCommit], index: int, entry: Mapping[str, Any]
) -> None:
    where = f"EVENTS.json entry {index}"
    repo_id = _field(entry, "repo_id", where)
    sha = _field(entry, "revision", where)
    path = _field(entry, "file", where)
    if not is_safe_path(path):
        raise CorpusError(f"{where}: file {path!r} leaves the repo (absolute, '..' or empty part)")
    fresh = (repo_id, sha) not in commits
    commit = _new_commit(commits, repo_id, sha, entry, index, where)
    match = _DELETION_NOTE.match(str(entry["notes"]))
    if fresh and match:
        commit.title, commit.author = match["title"], match["author"]
    commit.deletions.append(path)


def _place_repeated_deletions(history: list[RecordedCommit]) -> None:
    """Move a deletion that a later deletion of the same path repeats off ``main``."""
    for position, commit in enumerate(history):
        if commit.ref != MAIN or commit.files or not commit.deletions:
            continue
        for later in history[position + 1 :]:
            if later.ref != MAIN:
                continue
            if any(path in later.files for path in commit.deletions):
                break
            if any(path in later.deletions for path in commit.deletions):
                merge = _MERGE_TITLE.search(later.title)
                commit.ref = f"refs/pr/{merge['pr']}" if merge else None
                break
