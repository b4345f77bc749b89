"""The append-only advisory log: written once per transition, withdrawn, never deleted.

An advisory's id is deterministic (the same transition always gets the same
id), so storing one that exists is a no-op and a retried revision never
publishes twice. ``withdrawn`` and ``modified`` in the record are the
authority; renderers lay them over the stored OSV document.

``advisory_query`` and ``advisory_from_row`` are the one query shape and the
one row converter every advisory read uses (storage.publishing's pages too).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import Select, select, update
from sqlalchemy.orm import Session

from storage.dialect import insert_ignoring_duplicates
from storage.errors import InvalidRecord
from storage.models import AdvisoryRow, RepoRow
from storage.models.publishing import ADVISORY_ID_LENGTH
from storage.records import Advisory, Severity
from storage.repo_ids import RepoId, org_of
from storage.repos import repo_pk_of, repo_row
from storage.summary_upkeep import mark_summary_stale
from storage.values import require_aware, require_text, storable_text


def put_advisory(session: Session, advisory: Advisory) -> bool:
    """Append ``advisory`` to the log; False if an advisory with its id is already there."""
    if not advisory.id or len(advisory.id) > ADVISORY_ID_LENGTH:
        raise InvalidRecord(f"advisory id {advisory.id!r} must be 1 to {ADVISORY_ID_LENGTH} chars")
    for value, where in ((advisory.published, "published"), (advisory.modified, "modified")):
        require_aware(value, f"advisory {advisory.id} {where}")
    require_aware(advisory.withdrawn, f"advisory {advisory.id} withdrawn")
    require_text([advisory.id], f"advisory {advisory.id}")  # summary and osv quote upstream
    repo_pk = repo_pk_of(session, advisory.repo_id)
    inserted = insert_ignoring_duplicates(
        session, AdvisoryRow, advisory_row_values(advisory, repo_pk), ["id"]
    )
    if inserted:
        mark_summary_stale(session, repo_pk, newest_kept=True)
    return inserted


def advisory_row_values(advisory: Advisory, repo_pk: int) -> dict[str, object]:
    """The advisories row of ``advisory`` (its repo's primary key given), text made storable.

    ``org`` is stored beside ``repo_pk`` so that an org feed is one walk of
    ``ix_advisories_org_published`` rather than a join whose plan depends on
    how the planner guesses a ``LIKE 'org/%'`` (migration 0003).
    """
    return {
        "id": advisory.id,
        "repo_pk": repo_pk,
        "org": org_of(advisory.repo_id),
        "old_sha": advisory.old_sha,
        "new_sha": advisory.new_sha,
        "published": advisory.published,
        "modified": advisory.modified,
        "withdrawn": advisory.withdrawn,
        "summary": storable_text(advisory.summary),
        "severity": int(advisory.severity),
        "osv": storable_text(dict(advisory.osv)),
    }


def advisories(
    session: Session,
    *,
    repo_id: RepoId | None = None,
    min_severity: Severity = Severity.INFO,
    modified_since: datetime | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[Advisory]:
    """Advisories, newest published first, optionally of one repo or modified since a moment."""
    query = (
        advisory_query()
        .where(AdvisoryRow.severity >= int(min_severity))
        .offset(offset)
        .limit(limit)
    )
    if repo_id is not None:
        query = query.where(RepoRow.repo_id == repo_id)
    if modified_since is not None:
        require_aware(modified_since, "modified_since")
        query = query.where(AdvisoryRow.modified > modified_since)
    return [advisory_from_row(row, repo) for row, repo in session.execute(query)]


def withdraw_advisories(
    session: Session, repo_id: RepoId, shas: Collection[str], at: datetime
) -> list[str]:
    """Withdraw the advisories introduced at ``shas`` (lost to a force-push); their ids.

    Advisories already withdrawn keep their first withdrawal time.
    """
    require_aware(at, "withdraw_advisories at")
    if not shas:
        return []
    ids = list(
        session.scalars(
            update(AdvisoryRow)
            .where(
                AdvisoryRow.repo_pk == repo_row(session, repo_id).id,
                AdvisoryRow.new_sha.in_(list(shas)),
                AdvisoryRow.withdrawn.is_(None),
            )
            .values(withdrawn=at, modified=at)
            .returning(AdvisoryRow.id)
            .execution_options(synchronize_session=False)
        )
    )
    return sorted(ids)


def advisory_query() -> Select[AdvisoryRow, str]:
    """(row, repo id) of advisories, newest published first; callers add their filters."""
    return (
        select(AdvisoryRow, RepoRow.repo_id)
        .join(RepoRow, RepoRow.id == AdvisoryRow.repo_pk)
        .order_by(AdvisoryRow.published.desc(), AdvisoryRow.id)
        .execution_options(populate_existing=True)
    )


def advisory_from_row(row: AdvisoryRow, repo_id: str) -> Advisory:
    """The record of a stored advisory row and its repo's stored id."""
    return Advisory(
        id=row.id,
        repo_id=RepoId(repo_id),
        old_sha=row.old_sha,
        new_sha=row.new_sha,
        published=row.published,
        modified=row.modified,
        summary=row.summary,
        severity=Severity(row.severity),
        osv=dict(row.osv),
        withdrawn=row.withdrawn,
    )
