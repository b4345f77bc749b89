"""The reads and writes the published side needs: advisories, feeds, OSV queries, model pages.

Everything here reads what the daemon stored when it processed a revision
(changes, plan JSON, the advisory log); nothing is recomputed. Lists of
advisories page by a keyset cursor over (published desc, id) so a page
never shifts when a newer advisory lands between two requests, which an
offset would.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar, Unpack

from sqlalchemy import Select, and_, exists, func, or_, select, update
from sqlalchemy.orm import Session

from storage.advisories import advisory_from_row, advisory_query
from storage.errors import InvalidRecord
from storage.history import changes_of, revision_log
from storage.models import (
    AdvisoryRow,
    ChangeRow,
    EstimateRow,
    RepoRow,
    RevisionRow,
    SnapshotRow,
)
from storage.records import Advisory, Change, Severity, StoredRevision, TrackedRepo
from storage.repos import repo_row, to_tracked_repo
from storage.values import require_aware

DEFAULT_PAGE_SIZE = 100
Query = TypeVar("Query", bound=Select[Unpack[tuple[Any, ...]]])


class InvalidCursor(InvalidRecord):
    """A page cursor that this module did not hand out."""


@dataclass(frozen=True)
class AdvisoryPage:
    """One page of advisories and the cursor of the next page (None on the last)."""

    advisories: tuple[Advisory, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class AdvisoryRef:
    """An advisory as OSV's querybatch lists it: its id and when it last changed."""

    id: str
    modified: datetime


@dataclass(frozen=True)
class AdvisoryRefPage:
    """One page of advisory refs and the cursor of the next page (None on the last)."""

    refs: tuple[AdvisoryRef, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class RevisionEntry:
    """A recorded revision with its changes, the advisory it produced and its stored plan JSON."""

    stored: StoredRevision
    changes: tuple[Change, ...]
    advisory_id: str | None
    plan: dict[str, Any] | None = None


@dataclass(frozen=True)
class ModelSummary:
    """What the index shows of one tracked repo: its newest revision and stored plan."""

    repo: TrackedRepo
    latest: StoredRevision | None
    plan: dict[str, Any] | None
    advisories: int


@dataclass(frozen=True)
class ModelPageData:
    """Everything the model page renders, read in one session.

    Plans stay the stored JSON: storage does not read inside them, so which
    of ``others`` share this model's family is for the reader to pick.
    """

    summary: ModelSummary
    history: tuple[RevisionEntry, ...]
    card: dict[str, Any]
    others: tuple[ModelSummary, ...]


def withdraw_advisory(session: Session, advisory_id: str, at: datetime) -> bool:
    """Mark the advisory withdrawn at ``at`` (it stays published); False if already withdrawn."""
    require_aware(at, "withdraw_advisory at")
    result = session.execute(
        update(AdvisoryRow)
        .where(AdvisoryRow.id == advisory_id, AdvisoryRow.withdrawn.is_(None))
        .values(withdrawn=at, modified=at)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


def advisory_by_id(session: Session, advisory_id: str) -> Advisory | None:
    """The advisory with exactly that (case-sensitive) id, withdrawn or not."""
    row = session.execute(advisory_query().where(AdvisoryRow.id == advisory_id)).one_or_none()
    return None if row is None else advisory_from_row(row[0], row[1])


def advisories_for(
    session: Session,
    *,
    repo_id: str | None = None,
    org: str | None = None,
    commit: str | None = None,
    artifact: str | None = None,
    min_severity: Severity = Severity.INFO,
    cursor: str | None = None,
    limit: int | None = DEFAULT_PAGE_SIZE,
) -> AdvisoryPage:
    """A page of advisories, newest published first, filtered as asked.

    ``artifact`` keeps advisories whose revision changed that artifact;
    ``commit`` those introduced at that sha. ``limit=None`` reads all.
    """
    query = _filtered(advisory_query(), repo_id, org, commit, artifact, min_severity, cursor, limit)
    found = [advisory_from_row(row, repo) for row, repo in session.execute(query)]
    if limit is None or len(found) <= limit:
        return AdvisoryPage(tuple(found), None)
    page = found[:limit]
    return AdvisoryPage(tuple(page), _encode(page[-1].published, page[-1].id))


def advisory_refs_for(
    session: Session,
    *,
    repo_id: str | None = None,
    commit: str | None = None,
    cursor: str | None = None,
    limit: int = DEFAULT_PAGE_SIZE,
) -> AdvisoryRefPage:
    """``advisories_for``'s page as ids and modification times only, same order and cursors.

    What OSV's querybatch answers: reading three columns instead of
    whole rows (and their OSV documents) keeps a 1,000-query batch cheap.
    """
    query = (
        select(AdvisoryRow.id, AdvisoryRow.modified, AdvisoryRow.published)
        .join(RepoRow, RepoRow.id == AdvisoryRow.repo_pk)
        .order_by(AdvisoryRow.published.desc(), AdvisoryRow.id)
    )
    query = _filtered(query, repo_id, None, commit, None, Severity.INFO, cursor, limit)
    rows = session.execute(query).all()
    found = tuple(AdvisoryRef(advisory_id, modified) for advisory_id, modified, _ in rows[:limit])
    if len(rows) <= limit:
        return AdvisoryRefPage(found, None)
    last_id, _, last_published = rows[limit - 1]
    return AdvisoryRefPage(found, _encode(last_published, last_id))


def _filtered(
    query: Query,
    repo_id: str | None,
    org: str | None,
    commit: str | None,
    artifact: str | None,
    min_severity: Severity,
    cursor: str | None,
    limit: int | None,
) -> Query:
    """``query`` (advisories joined to repos, newest published first) narrowed as asked."""
    if min_severity > Severity.INFO:
        query = query.where(AdvisoryRow.severity >= int(min_severity))
    if repo_id is not None:
        query = query.where(RepoRow.repo_id == repo_id)
    if org is not None:
        query = query.where(RepoRow.repo_id.startswith(f"{org}/", autoescape=True))
    if commit is not None:
        query = query.where(AdvisoryRow.new_sha == commit)
    if artifact is not None:
        query = query.where(_changed(artifact))
    if cursor is not None:
        published, last_id = _decode(cursor)
        # the redundant upper bound lets the page start with an index range scan
        query = query.where(
            AdvisoryRow.published <= published,
            or_(
                AdvisoryRow.published < published,
                and_(AdvisoryRow.published == published, AdvisoryRow.id > last_id),
            ),
        )
    return query if limit is None else query.limit(limit + 1)


def modified_index(session: Session) -> list[tuple[datetime, str]]:
    """(modified, id) of every advisory, newest modification first (the dumps' index)."""
    rows = session.execute(
        select(AdvisoryRow.modified, AdvisoryRow.id).order_by(
            AdvisoryRow.modified.desc(), AdvisoryRow.id
        )
    )
    return [(modified, advisory_id) for modified, advisory_id in rows]


def last_modified(session: Session) -> datetime | None:
    """When the advisory log last changed: what feeds send as Last-Modified."""
    newest: datetime | None = session.execute(
        select(AdvisoryRow.modified).order_by(AdvisoryRow.modified.desc()).limit(1)
    ).scalar_one_or_none()
    return newest


def log_version(session: Session) -> tuple[int, datetime | None]:
    """(advisory count, newest modification): changes whenever the advisory log does."""
    count, newest = session.execute(
        select(func.count(AdvisoryRow.id), func.max(AdvisoryRow.modified))
    ).one()
    return int(count), newest


def model_summaries(session: Session) -> list[ModelSummary]:
    """Every tracked repo with its newest on-main revision and that revision's stored plan."""
    repos = session.scalars(select(RepoRow).where(RepoRow.tracked).order_by(RepoRow.repo_id)).all()
    return [_summary(session, row) for row in repos]


def model_page(session: Session, repo_id: str) -> ModelPageData:
    """The model page of ``repo_id``: summary, history with changes and plans, card, others."""
    row = repo_row(session, repo_id)
    summary = _summary(session, row)
    advisory_of = {
        sha: advisory_id
        for sha, advisory_id in session.execute(
            select(AdvisoryRow.new_sha, AdvisoryRow.id).where(AdvisoryRow.repo_pk == row.id)
        )
    }
    plan_of = {
        sha: dict(plan)
        for sha, plan in session.execute(
            select(RevisionRow.sha, EstimateRow.plan)
            .join(EstimateRow, EstimateRow.revision_pk == RevisionRow.id)
            .where(RevisionRow.repo_pk == row.id)
        )
    }
    history = tuple(
        RevisionEntry(
            stored,
            tuple(changes_of(session, repo_id, stored.revision.sha)),
            advisory_of.get(stored.revision.sha),
            plan_of.get(stored.revision.sha),
        )
        for stored in revision_log(session, repo_id)
    )
    card: dict[str, Any] = {}
    if summary.latest is not None:
        card = _card(session, row.id, summary.latest.revision.sha)
    others = tuple(s for s in model_summaries(session) if s.repo.repo_id != repo_id)
    return ModelPageData(summary, history, card, others)


def _summary(session: Session, row: RepoRow) -> ModelSummary:
    latest_row = session.scalars(
        select(RevisionRow)
        .where(RevisionRow.repo_pk == row.id, RevisionRow.on_main)
        .order_by(RevisionRow.date.desc(), RevisionRow.id.desc())
        .limit(1)
    ).one_or_none()
    count = len(session.scalars(select(AdvisoryRow.id).where(AdvisoryRow.repo_pk == row.id)).all())
    if latest_row is None:
        return ModelSummary(to_tracked_repo(row), None, None, count)
    latest = next(s for s in revision_log(session, row.repo_id) if s.revision.sha == latest_row.sha)
    estimate = session.get(EstimateRow, latest_row.id)
    plan = None if estimate is None else dict(estimate.plan)
    return ModelSummary(to_tracked_repo(row), latest, plan, count)


def _card(session: Session, repo_pk: int, sha: str) -> dict[str, Any]:
    revision_pk = session.scalars(
        select(RevisionRow.id).where(RevisionRow.repo_pk == repo_pk, RevisionRow.sha == sha)
    ).one()
    snapshot = session.get(SnapshotRow, revision_pk)
    return {} if snapshot is None else dict(snapshot.card)


def _changed(artifact: str) -> Any:
    return exists(
        select(ChangeRow.id)
        .join(RevisionRow, RevisionRow.id == ChangeRow.revision_pk)
        .where(
            RevisionRow.repo_pk == AdvisoryRow.repo_pk,
            RevisionRow.sha == AdvisoryRow.new_sha,
            ChangeRow.artifact == artifact,
        )
    )


def _encode(published: datetime, advisory_id: str) -> str:
    raw = f"{published.isoformat()}|{advisory_id}".encode()
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
        stamp, advisory_id = raw.split("|", 1)
        published = datetime.fromisoformat(stamp)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidCursor(f"invalid cursor {cursor[:40]!r}") from None
    if published.tzinfo is None:
        raise InvalidCursor(f"invalid cursor {cursor[:40]!r}")
    return published, advisory_id


__all__: Sequence[str] = [
    "DEFAULT_PAGE_SIZE",
    "AdvisoryPage",
    "AdvisoryRef",
    "AdvisoryRefPage",
    "InvalidCursor",
    "ModelPageData",
    "ModelSummary",
    "RevisionEntry",
    "advisories_for",
    "advisory_by_id",
    "advisory_refs_for",
    "last_modified",
    "log_version",
    "model_page",
    "model_summaries",
    "modified_index",
    "withdraw_advisory",
]
