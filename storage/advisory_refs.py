"""Advisory ids and modification times, page by page: what OSV's querybatch answers.

A batch holds up to 1,000 queries and each result lists only ``id`` and
``modified``, so these reads take three columns, never a row's OSV document,
and answer the first pages of a whole batch in two statements (one for the
queries by repo, one for those by commit) rather than a thousand round trips.
Pages and cursors are those of ``storage.publishing.advisories_for``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from storage.cursors import after_cursor, encode_cursor
from storage.models import AdvisoryRow, RepoRow
from storage.repo_ids import RepoId

DEFAULT_PAGE_SIZE = 100
_ORDER = (AdvisoryRow.published.desc(), AdvisoryRow.id)


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
class RefQuery:
    """One batch entry as storage reads it: a repo, a commit or both, and its page cursor."""

    repo_id: RepoId | None = None
    commit: str | None = None
    cursor: str | None = None


def advisory_refs_for(
    session: Session, query: RefQuery, limit: int = DEFAULT_PAGE_SIZE
) -> AdvisoryRefPage:
    """One page of ``query``'s advisory refs, newest published first."""
    select_refs = (
        select(AdvisoryRow.id, AdvisoryRow.modified, AdvisoryRow.published)
        .join(RepoRow, RepoRow.id == AdvisoryRow.repo_pk)
        .order_by(*_ORDER)
        .limit(limit + 1)
    )
    if query.repo_id is not None:
        select_refs = select_refs.where(RepoRow.repo_id == query.repo_id)
    if query.commit is not None:
        select_refs = select_refs.where(AdvisoryRow.new_sha == query.commit)
    if query.cursor is not None:
        select_refs = select_refs.where(*after_cursor(query.cursor))
    return _page(session.execute(select_refs).all(), limit)


def advisory_refs_for_many(
    session: Session, queries: Sequence[RefQuery], limit: int = DEFAULT_PAGE_SIZE
) -> list[AdvisoryRefPage]:
    """``advisory_refs_for`` of each query, in order.

    First pages asking for a repo alone are read in one statement and those
    asking for a commit alone in another; queries with a cursor or with both
    are read one at a time.
    """
    repo_ids = {q.repo_id for q in queries if _by(q) == "repo" and q.repo_id is not None}
    pks = _repo_pks(session, repo_ids)
    by_pk = _first_pages(session, AdvisoryRow.repo_pk, list(pks), limit)
    by_repo = {pks[pk]: page for pk, page in by_pk.items()}
    shas = {q.commit for q in queries if _by(q) == "commit" and q.commit is not None}
    by_sha = _first_pages(session, AdvisoryRow.new_sha, list(shas), limit)
    empty = AdvisoryRefPage((), None)
    pages = []
    for query in queries:
        if _by(query) == "repo":
            pages.append(by_repo.get(str(query.repo_id), empty))
        elif _by(query) == "commit":
            pages.append(by_sha.get(str(query.commit), empty))
        else:
            pages.append(advisory_refs_for(session, query, limit))
    return pages


def _by(query: RefQuery) -> str | None:
    """ "repo" or "commit" for a first page asking for that alone, else None."""
    if query.cursor is not None or (query.repo_id is None) == (query.commit is None):
        return None
    return "repo" if query.repo_id is not None else "commit"


def _repo_pks(session: Session, repo_ids: set[RepoId]) -> dict[int, str]:
    """Primary key -> repo id of the tracked ones among ``repo_ids``.

    Read apart so the batch statement filters advisories by their own indexed
    column: joined to repos on a 1,000-id list, PostgreSQL scanned all of repos.
    """
    if not repo_ids:
        return {}
    rows = session.execute(
        select(RepoRow.id, RepoRow.repo_id).where(RepoRow.repo_id.in_(sorted(repo_ids)))
    ).all()
    return {pk: repo_id for pk, repo_id in rows}


def _first_pages(
    session: Session, column: Any, keys: Sequence[Any], limit: int
) -> dict[Any, AdvisoryRefPage]:
    """The first page of each value of the advisories' ``column`` in ``keys``: one statement."""
    if not keys:
        return {}
    rank = func.row_number().over(partition_by=column, order_by=_ORDER)
    ranked = (
        select(
            column.label("key"),
            AdvisoryRow.id,
            AdvisoryRow.modified,
            # Only a page's last row makes its cursor: the other rows leave ``published``
            # NULL, which the driver loads for nothing (a 1,000-repo batch reads 10,000 rows).
            case((rank == limit, AdvisoryRow.published)).label("published"),
            rank.label("rank"),
        )
        .where(column.in_(sorted(keys)))
        .subquery()
    )
    rows = session.execute(
        select(ranked.c.key, ranked.c.id, ranked.c.modified, ranked.c.published)
        .where(ranked.c.rank <= limit + 1)
        .order_by(ranked.c.key, ranked.c.rank)
    ).all()
    grouped: dict[Any, list[Any]] = {}
    for key, *rest in rows:
        grouped.setdefault(key, []).append(rest)
    return {key: _page(found, limit) for key, found in grouped.items()}


def _page(rows: Sequence[Any], limit: int) -> AdvisoryRefPage:
    """The page of up to ``limit + 1`` (id, modified, published) rows read for it."""
    refs = tuple(AdvisoryRef(advisory_id, modified) for advisory_id, modified, _ in rows[:limit])
    if len(rows) <= limit:
        return AdvisoryRefPage(refs, None)
    last_id, _, last_published = rows[limit - 1]
    return AdvisoryRefPage(refs, encode_cursor(last_published, last_id))


__all__ = [
    "DEFAULT_PAGE_SIZE",
    "AdvisoryRef",
    "AdvisoryRefPage",
    "RefQuery",
    "advisory_refs_for",
    "advisory_refs_for_many",
]
