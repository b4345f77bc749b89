"""The reads and writes the published side needs: advisories, feeds, OSV queries, model pages.

Everything here reads what the daemon stored when it processed a revision
(changes, plan JSON, the advisory log); nothing is recomputed. Lists of
advisories page by a keyset cursor over (published desc, id)
(``storage.cursors``), so a page never shifts when a newer advisory lands
between two requests; ``storage.advisory_refs`` reads the same pages as ids
only, for OSV's querybatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, exists, func, select, update
from sqlalchemy.orm import Session

from storage.advisory_rows import advisory_from_row, advisory_query
from storage.cursors import InvalidCursor, after_cursor, encode_cursor
from storage.errors import RepoNotFound
from storage.history import NEWEST_FIRST, changes_by_revision, to_revision
from storage.models import (
    AdvisoryRow,
    BlobRow,
    ChangeRow,
    EstimateRow,
    RepoRow,
    RepoSummaryRow,
    RevisionRow,
    SnapshotRow,
)
from storage.plans import PLAN_BLOB, plan_of
from storage.records import Advisory, Change, Severity, StoredRevision, TrackedRepo
from storage.repo_ids import RepoId
from storage.repos import repo_row, to_tracked_repo
from storage.values import require_aware

DEFAULT_PAGE_SIZE = 100
SIBLINGS_EACH_SIDE = 10


@dataclass(frozen=True)
class AdvisoryPage:
    """One page of advisories and the cursor of the next page (None on the last)."""

    advisories: tuple[Advisory, ...]
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

    Plans stay the stored JSON. ``others`` are the tracked repos of the same
    family nearest in size (``family_siblings``), the one thing storage reads
    from inside a plan, through the summary row kept at write time.
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
    repo_id: RepoId | None = None,
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
    query = advisory_query()
    if min_severity > Severity.INFO:
        query = query.where(AdvisoryRow.severity >= int(min_severity))
    if repo_id is not None:
        query = query.where(RepoRow.repo_id == repo_id)
    if org is not None:
        query = query.where(AdvisoryRow.org == org)
    if commit is not None:
        query = query.where(AdvisoryRow.new_sha == commit)
    if artifact is not None:
        query = query.where(_changed(artifact))
    if cursor is not None:
        query = query.where(*after_cursor(cursor))
    if limit is not None:
        query = query.limit(limit + 1)
    found = [advisory_from_row(row, repo) for row, repo in session.execute(query)]
    if limit is None or len(found) <= limit:
        return AdvisoryPage(tuple(found), None)
    page = found[:limit]
    return AdvisoryPage(tuple(page), encode_cursor(page[-1].published, page[-1].id))


def last_modified(session: Session) -> datetime | None:
    """When the advisory log last changed: what feeds send as Last-Modified."""
    newest: datetime | None = session.execute(
        select(AdvisoryRow.modified).order_by(AdvisoryRow.modified.desc()).limit(1)
    ).scalar_one_or_none()
    return newest


def log_version(session: Session) -> tuple[datetime | None, datetime | None]:
    """(newest published, newest modification): changes when an advisory lands or is withdrawn.

    Both are the last entry of an index (``ix_advisories_published``,
    ``ix_advisories_modified``), so reading them costs the same at any size,
    where a count would scan the whole log. An advisory lands with
    ``published`` = when it was processed, so it moves the first unless the
    instance that wrote it has a clock behind the newest one already stored;
    readers bound that case by age (feeds.state).
    """
    published, modified = session.execute(
        select(func.max(AdvisoryRow.published), func.max(AdvisoryRow.modified))
    ).one()
    return published, modified


def model_summaries(
    session: Session, *, after: str | None = None, limit: int | None = None
) -> list[ModelSummary]:
    """Tracked repos by repo id, each with its newest on-main revision and that revision's
    stored plan; ``after`` and ``limit`` page by repo id (a keyset: one index walk per page).

    Read from ``repo_summaries`` in one query, so a page costs the same at any number
    of tracked repos.
    """
    query = _summaries().where(RepoRow.tracked).order_by(RepoRow.repo_id)
    if after is not None:
        query = query.where(RepoRow.repo_id > after)
    if limit is not None:
        query = query.limit(limit)
    return [_to_summary(*row) for row in session.execute(query)]


def family_siblings(
    session: Session, repo_pk: int, family: str | None, total: int | None
) -> tuple[ModelSummary, ...]:
    """Up to ``2 * SIBLINGS_EACH_SIDE`` other tracked repos of ``family``, nearest in size
    first on each side of ``total``: two walks of ``ix_repo_summaries_family_total``."""
    if family is None:
        return ()
    base = _summaries().where(
        RepoRow.tracked, RepoSummaryRow.family == family, RepoRow.id != repo_pk
    )
    size = RepoSummaryRow.total_parameters
    if total is None:
        rows = session.execute(
            base.order_by(size, RepoSummaryRow.repo_pk).limit(2 * SIBLINGS_EACH_SIDE)
        )
        return tuple(_to_summary(*row) for row in rows)
    larger = (
        base.where(size >= total).order_by(size, RepoSummaryRow.repo_pk).limit(SIBLINGS_EACH_SIDE)
    )
    smaller = base.where(size < total).order_by(size.desc(), RepoSummaryRow.repo_pk.desc())
    found = [
        *session.execute(smaller.limit(SIBLINGS_EACH_SIDE)),
        *session.execute(larger),
    ]
    found.sort(key=lambda row: (row[1].total_parameters, row[0].repo_id))
    return tuple(_to_summary(*row) for row in found)


def model_page(session: Session, repo_id: RepoId) -> ModelPageData:
    """The model page of ``repo_id``: summary, history with changes and plans, card, and
    the tracked repos of its family nearest in size."""
    row = repo_row(session, repo_id)
    found = session.execute(_summaries().where(RepoRow.id == row.id)).one()
    summary = _to_summary(*found)
    advisory_of = {
        sha: advisory_id
        for sha, advisory_id in session.execute(
            select(AdvisoryRow.new_sha, AdvisoryRow.id).where(AdvisoryRow.repo_pk == row.id)
        )
    }
    plan_by_revision = {
        estimate.revision_pk: plan_of(estimate, blob)
        for estimate, blob in session.execute(
            select(EstimateRow, BlobRow)
            .join(RevisionRow, EstimateRow.revision_pk == RevisionRow.id)
            .outerjoin(BlobRow, PLAN_BLOB)
            .where(RevisionRow.repo_pk == row.id)
        )
    }
    changes_of = changes_by_revision(session, row.id)
    history = tuple(
        RevisionEntry(
            StoredRevision(
                revision=to_revision(repo_id, revision),
                processed_at=revision.processed_at,
                on_main=revision.on_main,
                off_main_since=revision.off_main_since,
            ),
            tuple(changes_of.get(revision.id, ())),
            advisory_of.get(revision.sha),
            plan_by_revision.get(revision.id),
        )
        for revision in session.scalars(
            select(RevisionRow).where(RevisionRow.repo_pk == row.id).order_by(*NEWEST_FIRST)
        )
    )
    card: dict[str, Any] = {}
    if summary.latest is not None:
        card = _card(session, row.id, summary.latest.revision.sha)
    own = found[1]
    others = (
        () if own is None else family_siblings(session, row.id, own.family, own.total_parameters)
    )
    return ModelPageData(summary, history, card, others)


def _summaries() -> Select[RepoRow, RepoSummaryRow, RevisionRow, EstimateRow, BlobRow]:
    """Repos joined to their summary, newest on-main revision, its estimate and the plan's
    blob (each may be absent: a repo tracked but not yet checked has no summary row)."""
    return (
        select(RepoRow, RepoSummaryRow, RevisionRow, EstimateRow, BlobRow)
        .outerjoin(RepoSummaryRow, RepoSummaryRow.repo_pk == RepoRow.id)
        .outerjoin(RevisionRow, RevisionRow.id == RepoSummaryRow.latest_revision_pk)
        .outerjoin(EstimateRow, EstimateRow.revision_pk == RepoSummaryRow.latest_revision_pk)
        .outerjoin(BlobRow, PLAN_BLOB)
    )


def _to_summary(
    repo: RepoRow,
    summary: RepoSummaryRow | None,
    latest: RevisionRow | None,
    estimate: EstimateRow | None,
    blob: BlobRow | None,
) -> ModelSummary:
    stored = (
        None
        if latest is None
        else StoredRevision(
            revision=to_revision(RepoId(repo.repo_id), latest),
            processed_at=latest.processed_at,
            on_main=latest.on_main,
            off_main_since=latest.off_main_since,
        )
    )
    return ModelSummary(
        to_tracked_repo(repo),
        stored,
        None if estimate is None else plan_of(estimate, blob),
        0 if summary is None else summary.advisories,
    )


def card_at(session: Session, repo_id: RepoId, sha: str) -> dict[str, Any] | None:
    """The card recorded with ``repo_id``'s revision ``sha``, None when that revision is not
    recorded; the card column alone (the snapshot row also holds the weight manifest)."""
    try:
        repo_pk = repo_row(session, repo_id).id
    except RepoNotFound:
        return None
    return _card_or_none(session, repo_pk, sha)


def _card(session: Session, repo_pk: int, sha: str) -> dict[str, Any]:
    return _card_or_none(session, repo_pk, sha) or {}


def _card_or_none(session: Session, repo_pk: int, sha: str) -> dict[str, Any] | None:
    revision_pk = session.scalars(
        select(RevisionRow.id).where(RevisionRow.repo_pk == repo_pk, RevisionRow.sha == sha)
    ).one_or_none()
    if revision_pk is None:
        return None
    # the card column only: the row also holds the weight manifest (~100 MB at worst)
    card = session.scalars(
        select(SnapshotRow.card).where(SnapshotRow.revision_pk == revision_pk)
    ).one_or_none()
    return {} if card is None else dict(card)


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


__all__: Sequence[str] = [
    "DEFAULT_PAGE_SIZE",
    "AdvisoryPage",
    "InvalidCursor",
    "ModelPageData",
    "ModelSummary",
    "RevisionEntry",
    "advisories_for",
    "advisory_by_id",
    "card_at",
    "family_siblings",
    "last_modified",
    "log_version",
    "model_page",
    "model_summaries",
    "withdraw_advisory",
]
