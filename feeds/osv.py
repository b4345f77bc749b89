"""OSV advisories for noteworthy transitions of a repo (old sha -> new sha).

Choices, within what the OSV schema allows (see feeds/README.md):

- ids are ``x_NEURARCH-<org>-<name>-<12 hex>``: ``x_`` marks a local database
  that is not aggregated; the hex is the start of sha256("repo|old|new"), so
  the same transition always gets the same id and a retried revision never
  publishes twice.
- the package ecosystem is ``GIT`` with the repo URL as name and the purl
  ``pkg:huggingface/ORG/NAME`` beside it (the purl type's required namespace:
  a legacy id without one gets no purl rather than a wrong one).
- one meaning, said three ways: an advisory is about the commit that made the
  change, ``new_sha``, and no other. The GIT range is ``introduced: new_sha``
  with ``last_affected: new_sha`` (under OSV's range rules exactly that commit),
  ``versions`` is ``[new_sha]``, and ``/v1/query`` by commit answers the
  advisories whose range holds the commit. A range with ``introduced`` alone
  would mark every later commit affected, which a version-matching consumer
  reading ``versions`` would not; an audit asks "which transitions start at or
  after my pin", which this meaning answers exactly.
- our severity is not CVSS, so it goes in ``database_specific.severity``.
- what counts as noteworthy is data (feeds/data/noteworthy.json): a change
  whose severity reaches its artifact's threshold.

``build_advisory`` is pure: the daemon calls it inside the revision's
transaction and stores the result with ``storage.put_advisory``.
"""

from __future__ import annotations

import hashlib
import json
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

from packageurl import PackageURL

from feeds.delta import EstimateDelta
from storage import RepoId
from storage.records import Advisory, Change, Severity, StoredRevision

SCHEMA_VERSION = "1.7.5"
HUB = "https://huggingface.co"
ID_PREFIX = "x_NEURARCH"
ID_MAX_CHARS = 128
DATA = Path(__file__).resolve().parent / "data" / "noteworthy.json"


@cache
def _rules() -> dict[str, Any]:
    rules: dict[str, Any] = json.loads(DATA.read_text("utf-8"))
    return rules


def threshold(artifact: str) -> Severity:
    """The lowest severity at which a change of ``artifact`` publishes an advisory."""
    rules = _rules()
    return Severity.parse(rules["artifacts"].get(artifact, rules["default"]))


def noteworthy(changes: Sequence[Change]) -> list[Change]:
    """The changes that publish, most severe first (stable order)."""
    kept = [c for c in changes if c.severity >= threshold(c.artifact)]
    return sorted(kept, key=lambda c: (-int(c.severity), c.artifact, c.path, c.kind, c.message))


def advisory_id(repo_id: RepoId, old_sha: str | None, new_sha: str) -> str:
    """The deterministic id of the transition ``old_sha -> new_sha`` of ``repo_id``."""
    digest = hashlib.sha256(f"{repo_id}|{old_sha or ''}|{new_sha}".encode()).hexdigest()[:12]
    readable = repo_id.replace("/", "-")
    room = ID_MAX_CHARS - len(ID_PREFIX) - len(digest) - 2
    return f"{ID_PREFIX}-{readable[:room]}-{digest}"


def repo_url(repo_id: RepoId) -> str:
    """The repo's page on the Hub, which advisories link to."""
    return f"{HUB}/{repo_id}"


def purl(repo_id: RepoId, sha: str | None = None) -> str | None:
    """The package URL of ``repo_id`` (at ``sha``), per the purl spec's ``huggingface`` type.

    The type requires a namespace (the user or organisation) and, for a version,
    the full commit sha lowercased; a legacy id without a namespace (``gpt2``)
    has no purl until it is mapped to its canonical ``ORG/NAME``.
    """
    namespace, _, name = repo_id.partition("/")
    if not name or "/" in name:
        return None
    version = sha.lower() if sha else None
    return str(PackageURL(type="huggingface", namespace=namespace, name=name, version=version))


def affected_events(new_sha: str) -> list[dict[str, str]]:
    """The GIT range events of an advisory about ``new_sha`` alone (see the module docstring)."""
    return [{"introduced": new_sha}, {"last_affected": new_sha}]


def _package(repo_id: RepoId) -> dict[str, str]:
    package = {"ecosystem": "GIT", "name": repo_url(repo_id)}
    identifier = purl(repo_id)
    if identifier is not None:
        package["purl"] = identifier
    return package


def timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with a Z, as the schema's timestamp pattern wants."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_advisory(
    repo_id: RepoId,
    old: StoredRevision | None,
    new: StoredRevision,
    changes: Sequence[Change],
    plan_delta: EstimateDelta | None,
) -> Advisory | None:
    """The advisory of this transition, or None when no change is noteworthy.

    A repo's first recorded revision is its baseline, not a transition: None.
    """
    kept = noteworthy(changes)
    if old is None or not kept:
        return None
    delta = plan_delta or EstimateDelta(None, ())
    old_sha = old.revision.sha
    new_sha = new.revision.sha
    identifier = advisory_id(repo_id, old_sha, new_sha)
    severity = Severity(max(int(c.severity) for c in kept))
    summary = summary_line(kept, delta)
    published = new.processed_at
    osv: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "id": identifier,
        "modified": timestamp(published),
        "published": timestamp(published),
        "summary": summary,
        "details": details(repo_id, old_sha, new, kept, delta),
        "affected": [
            {
                "package": _package(repo_id),
                "ranges": [
                    {
                        "type": "GIT",
                        "repo": repo_url(repo_id),
                        "events": affected_events(new_sha),
                    }
                ],
                "versions": [new_sha],
            }
        ],
        "references": references(repo_id, old_sha, new_sha),
        "database_specific": {
            "repo_id": repo_id,
            "old_sha": old_sha,
            "new_sha": new_sha,
            "severity": severity.label,
            "changes": [_change_json(c) for c in kept],
            "estimate_delta": delta.to_json(),
        },
    }
    return Advisory(
        id=identifier,
        repo_id=repo_id,
        old_sha=old_sha,
        new_sha=new_sha,
        published=published,
        modified=published,
        summary=summary,
        severity=severity,
        osv=osv,
    )


def withdraw(advisory: Advisory, at: datetime) -> Advisory:
    """The advisory withdrawn at ``at`` (a force-push removed its revision); kept, not deleted."""
    return replace(advisory, withdrawn=at, modified=at)


def osv_document(advisory: Advisory) -> dict[str, Any]:
    """The OSV JSON to serve: the stored document with the record's modified/withdrawn laid over.

    Documents stored before ranges named their ``last_affected`` commit are
    served with it, so every advisory carries the same meaning.
    """
    document: dict[str, Any] = dict(advisory.osv)  # the OSV document build_advisory wrote
    document["affected"] = [_bounded(entry, advisory.new_sha) for entry in document["affected"]]
    document["modified"] = timestamp(advisory.modified)
    if advisory.withdrawn is not None:
        document["withdrawn"] = timestamp(advisory.withdrawn)
    return document


def _bounded(entry: dict[str, Any], new_sha: str) -> dict[str, Any]:
    ranges = entry.get("ranges", [])
    if all(any("last_affected" in e for e in r.get("events", [])) for r in ranges):
        return entry
    bounded = [{**r, "events": affected_events(new_sha)} for r in ranges]
    return {**entry, "ranges": bounded}


def summary_line(kept: Sequence[Change], delta: EstimateDelta) -> str:
    """One line: what changed (the most severe changes) and what it means (the estimate)."""
    rules = _rules()
    part = int(rules["summary_part_max_chars"])
    said = [_cut(_one_line(c.message), part) for c in kept if c.artifact != "estimate"]
    parts = said[: rules["summary_changes"]]
    headline = delta.headline()
    if headline:
        parts.append(headline)
    elif not parts:
        parts = [_one_line(kept[0].message)]
    return _cut("; ".join(parts), int(rules["summary_max_chars"]))


def details(
    repo_id: RepoId,
    old_sha: str | None,
    new: StoredRevision,
    kept: Sequence[Change],
    delta: EstimateDelta,
) -> str:
    """Markdown: the transition, each change grouped by artifact, and the estimate delta."""
    start = f"`{old_sha[:12]}`" if old_sha else "the first recorded revision"
    lines = [
        f"`{repo_id}` moved from {start} to `{new.revision.sha[:12]}` "
        f"({_one_line(new.revision.title)}).",
        "",
    ]
    for artifact in sorted({c.artifact for c in kept}):
        lines.append(f"### {artifact}")
        lines.extend(
            # the path is shown once: messages that start with it drop it here
            f"- **{c.severity.label}** `{c.path}` {c.kind}: "
            f"{_one_line(c.message.removeprefix(f'{c.path}: '))}"
            for c in kept
            if c.artifact == artifact
        )
        lines.append("")
    rows = delta.markdown_rows()
    if rows:
        lines += ["### Estimate delta", "", "| what | before | after |", "|---|---|---|", *rows]
    return "\n".join(lines).rstrip() + "\n"


def references(repo_id: RepoId, old_sha: str | None, new_sha: str) -> list[dict[str, str]]:
    """The commit page (the Hub shows its diff to the parent), the old commit, the repo."""
    base = repo_url(repo_id)
    refs = [{"type": "INTRODUCED", "url": f"{base}/commit/{new_sha}"}]
    if old_sha:
        refs.append({"type": "WEB", "url": f"{base}/commit/{old_sha}"})
    refs.append({"type": "WEB", "url": f"{base}/tree/{new_sha}"})
    refs.append({"type": "PACKAGE", "url": base})
    return refs


def _change_json(change: Change) -> dict[str, Any]:
    limit = int(_rules()["database_specific_value_max_chars"])
    document: dict[str, Any] = {
        "artifact": change.artifact,
        "path": change.path,
        "kind": change.kind,
        "severity": change.severity.label,
        "message": change.message,
    }
    for name, value in (("old", change.old), ("new", change.new)):
        if len(json.dumps(value, default=str)) <= limit:
            document[name] = value
        else:
            document[f"{name}_truncated"] = True
    return document


def _cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut between words (a word longer than the
    limit alone is cut inside it, as nothing else fits)."""
    if len(text) <= limit:
        return text
    shortened = textwrap.shorten(text, width=limit, placeholder=" …")
    if shortened != "…" and shortened.strip() != "…":
        return shortened
    return text[: limit - 1].rstrip() + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())


__all__ = [
    "SCHEMA_VERSION",
    "advisory_id",
    "affected_events",
    "build_advisory",
    "details",
    "noteworthy",
    "osv_document",
    "purl",
    "references",
    "repo_url",
    "summary_line",
    "threshold",
    "timestamp",
    "withdraw",
]
