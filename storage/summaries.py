"""Small reads for per-request documents (badges): stored summaries, never whole snapshots.

A badge is 79 bytes; it must not cost what the model page costs. The page's
read (``storage.publishing.model_page``) brings every revision's changes and
plans, and a snapshot row holds the weight manifest, which a hostile checkpoint
can make ~100 MB. Here only the columns a badge shows are selected: the stored
plan of the newest on-main revision (as ``repo_summaries`` names it, the same
revision the index and page show) and the newest standing advisory's severity,
each one indexed lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from storage.models import AdvisoryRow, BlobRow, EstimateRow, RepoSummaryRow
from storage.plans import PLAN_BLOB, plan_of
from storage.records import Severity
from storage.repo_ids import RepoId
from storage.repos import repo_row


@dataclass(frozen=True)
class BadgeData:
    """The newest on-main revision's stored plan JSON and the newest standing advisory's
    severity (None where there is none)."""

    plan: dict[str, Any] | None
    severity: Severity | None


def model_badge(session: Session, repo_id: RepoId) -> BadgeData:
    """What ``repo_id``'s badge shows; RepoNotFound if it was never recorded."""
    repo_pk = repo_row(session, repo_id).id
    newest = (
        select(RepoSummaryRow.latest_revision_pk)
        .where(RepoSummaryRow.repo_pk == repo_pk)
        .scalar_subquery()
    )
    estimate = session.execute(
        select(EstimateRow, BlobRow)
        .outerjoin(BlobRow, PLAN_BLOB)
        .where(EstimateRow.revision_pk == newest)
    ).one_or_none()
    severity = session.scalars(
        select(AdvisoryRow.severity)
        .where(AdvisoryRow.repo_pk == repo_pk, AdvisoryRow.withdrawn.is_(None))
        .order_by(AdvisoryRow.published.desc(), AdvisoryRow.id)  # as advisories_for lists them
        .limit(1)
    ).one_or_none()
    return BadgeData(
        None if estimate is None else plan_of(estimate[0], estimate[1]),
        None if severity is None else Severity(severity),
    )


__all__ = ["BadgeData", "model_badge"]
