"""The whole advisory log, read in bounded batches: what the OSV dumps stream.

A dump (``all.zip``, ``modified_id.csv``) holds every advisory, so reading it
as one result would hold a million rows at once. These reads walk an index
by keyset instead: each batch is ``WHERE key > last ORDER BY key LIMIT n``,
one index range scan, so memory stays one batch whatever the log's size and
no transaction or server-side cursor stays open between batches. A row
added while a dump is read lands in it only if its key sorts after the
batch in progress; advisories are never deleted, so none is ever skipped.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session

from storage.advisory_rows import advisory_from_row
from storage.models import AdvisoryRow, RepoRow
from storage.records import Advisory

DUMP_BATCH = 500
INDEX_BATCH = 5000


def advisories_by_id(session: Session, batch: int = DUMP_BATCH) -> Iterator[tuple[Advisory, ...]]:
    """Every advisory, withdrawn ones too, in id order, ``batch`` at a time (primary-key walk)."""
    last: str | None = None
    while True:
        query = (
            select(AdvisoryRow, RepoRow.repo_id)
            .join(RepoRow, RepoRow.id == AdvisoryRow.repo_pk)
            .order_by(AdvisoryRow.id)
            .limit(batch)
            .execution_options(populate_existing=True)
        )
        if last is not None:
            query = query.where(AdvisoryRow.id > last)
        found = tuple(advisory_from_row(row, repo) for row, repo in session.execute(query))
        session.expunge_all()  # the identity map would otherwise keep every row read
        if not found:
            return
        yield found
        if len(found) < batch:
            return
        last = found[-1].id


def modified_batches(
    session: Session, batch: int = INDEX_BATCH
) -> Iterator[Sequence[tuple[datetime, str]]]:
    """(modified, id) of every advisory, newest modification first then id, ``batch`` at a time.

    The redundant ``modified <= last`` bound lets the database start each
    batch with a range scan of ``ix_advisories_modified`` (an OR alone
    would not).
    """
    after: tuple[datetime, str] | None = None
    while True:
        query = (
            select(AdvisoryRow.modified, AdvisoryRow.id)
            .order_by(AdvisoryRow.modified.desc(), AdvisoryRow.id)
            .limit(batch)
        )
        if after is not None:
            moment, last_id = after
            query = query.where(
                AdvisoryRow.modified <= moment,
                or_(
                    AdvisoryRow.modified < moment,
                    and_(AdvisoryRow.modified == moment, AdvisoryRow.id > last_id),
                ),
            )
        found = [(modified, advisory_id) for modified, advisory_id in session.execute(query)]
        if not found:
            return
        yield found
        if len(found) < batch:
            return
        after = found[-1]


__all__ = ["DUMP_BATCH", "INDEX_BATCH", "advisories_by_id", "modified_batches"]
