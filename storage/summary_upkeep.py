"""Keeping ``repo_summaries`` current: a write marks its repo, the commit refreshes it.

Every storage function that can change what a repo's summary shows (a
revision recorded, main renumbered or force-pushed, an advisory appended)
marks the repo in the session; just before the transaction commits, each
marked repo's row is recomputed from three indexed lookups. A backfill that
records 50 revisions of one repo in one transaction refreshes it once, and
the summary can never disagree with the rows it summarises, because both are
written in the same transaction.

The family and parameter total are the only fields read from inside a stored
plan: siblings are "the other tracked repos of this family", a lookup that
must not parse every repo's plan.

The common write, a revision recorded at the head of main with perhaps its
advisory, knows the repo's newest revision and its plan already
(``remember_newest``): its refresh is one upsert that counts the advisories,
instead of a read and then the upsert.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Final

from sqlalchemy import Insert, bindparam, exists, func, select
from sqlalchemy.orm import Session

from storage.dialect import dialect_insert, execute_core, upsert
from storage.models import AdvisoryRow, RepoRow, RepoSummaryRow, RevisionRow
from storage.models.summary import FAMILY_LENGTH
from storage.plans import estimate_of
from storage.values import storable_text

_STALE = "neurarch_stale_summaries"
_FIGURES = "neurarch_plan_figures"
_NEWEST: Final = "neurarch_newest_revisions"
"""``Session.info`` key: repo key -> (its newest revision on main, that plan's figures), where
the write that made it newest said so and nothing since could have changed it."""
NEWEST_ON_MAIN = (RevisionRow.position.desc(), RevisionRow.id.desc())


def mark_summary_stale(session: Session, repo_pk: int, *, newest_kept: bool = False) -> None:
    """Have ``repo_pk``'s summary recomputed when this transaction commits.

    ``newest_kept``: the write cannot change which revision is the repo's newest on main
    (an advisory appended), so what ``remember_newest`` noted still holds.
    """
    session.info.setdefault(_STALE, set()).add(repo_pk)
    if not newest_kept:
        session.info.get(_NEWEST, {}).pop(repo_pk, None)


def remember_newest(session: Session, repo_pk: int, revision_pk: int, plan: Any) -> None:
    """Mark ``repo_pk``'s summary stale, noting that ``revision_pk`` (whose plan JSON,
    None without one, is ``plan``) is now its newest revision on main."""
    mark_summary_stale(session, repo_pk)
    session.info.setdefault(_NEWEST, {})[repo_pk] = (revision_pk, *family_and_total(plan))


def refresh_stale_summaries(session: Session) -> None:
    """The ``before_commit`` hook: recompute every summary marked in this transaction."""
    stale: set[int] = session.info.pop(_STALE, set())
    newest: dict[int, tuple[int, str | None, int | None]] = session.info.pop(_NEWEST, {})
    for repo_pk in sorted(stale):  # one order for every writer: no deadlock between two
        if repo_pk in newest:
            _refresh_newest(session, repo_pk, *newest[repo_pk])
        else:
            refresh_summary(session, repo_pk)
    session.info.pop(_FIGURES, None)


def remember_plan_figures(session: Session, revision_pk: int, plan: Any) -> None:
    """Keep the family and size of a plan recorded in this transaction, read off the JSON
    in hand, so the refresh at commit need not read its blob back and parse it again."""
    session.info.setdefault(_FIGURES, {})[revision_pk] = family_and_total(plan)


def refresh_summary(session: Session, repo_pk: int) -> None:
    """Recompute one repo's summary row from its revisions, plan and advisories."""
    newest = (
        select(RevisionRow.id)
        .where(RevisionRow.repo_pk == repo_pk, RevisionRow.on_main)
        .order_by(*NEWEST_ON_MAIN)
        .limit(1)
        .scalar_subquery()
    )
    count = (
        select(func.count())
        .select_from(AdvisoryRow)
        .where(AdvisoryRow.repo_pk == repo_pk)
        .scalar_subquery()
    )
    held = exists().where(RepoRow.id == repo_pk)
    latest, advisories, present = session.execute(select(newest, count, held)).one()
    if not present:
        return  # purged in this transaction: the cascade removed its summary too
    known: dict[int, tuple[str | None, int | None]] = session.info.get(_FIGURES, {})
    if latest in known:
        family, total = known[latest]
    else:
        family, total = family_and_total(None if latest is None else estimate_of(session, latest))
    upsert(
        session,
        RepoSummaryRow,
        {
            "repo_pk": repo_pk,
            "latest_revision_pk": latest,
            "advisories": int(advisories),
            "family": family,
            "total_parameters": total,
        },
        ["repo_pk"],
    )


def _refresh_newest(
    session: Session, repo_pk: int, latest: int, family: str | None, total: int | None
) -> None:
    """``refresh_summary`` where the newest revision and its plan's figures are known: one
    statement, which writes nothing for a repo purged in this transaction."""
    execute_core(
        session,
        _newest_upsert(session.get_bind().dialect.name),
        {
            "summary_pk": repo_pk,
            "summary_latest": latest,
            "summary_family": family,
            "summary_total": total,
        },
    )


@cache
def _newest_upsert(dialect: str) -> Insert:
    """The one-statement refresh, built once per backend."""
    table = RepoSummaryRow.__table__
    repo_pk = bindparam("summary_pk", type_=table.c.repo_pk.type)
    count = (
        select(func.count())
        .select_from(AdvisoryRow)
        .where(AdvisoryRow.repo_pk == repo_pk)
        .scalar_subquery()
    )
    rows = select(
        repo_pk,
        bindparam("summary_latest", type_=table.c.latest_revision_pk.type),
        count,
        bindparam("summary_family", type_=table.c.family.type),
        bindparam("summary_total", type_=table.c.total_parameters.type),
    ).where(exists().where(RepoRow.id == repo_pk))
    columns = ["repo_pk", "latest_revision_pk", "advisories", "family", "total_parameters"]
    statement = dialect_insert(dialect, table).from_select(columns, rows)
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=["repo_pk"],
        set_={name: statement.excluded[name] for name in columns[1:]},
    )


def refresh_all_summaries(session: Session) -> int:
    """Recompute every repo's summary (after a bulk load that bypassed the write functions);
    returns how many."""
    pks = session.scalars(select(RepoRow.id).order_by(RepoRow.id)).all()
    for repo_pk in pks:
        refresh_summary(session, repo_pk)
    return len(pks)


def family_and_total(plan: Any) -> tuple[str | None, int | None]:
    """The plan's ``model.family`` and ``parameters.total``, None where absent or implausible."""
    if not isinstance(plan, dict):
        return None, None
    model, parameters = plan.get("model"), plan.get("parameters")
    family = model.get("family") if isinstance(model, dict) else None
    total = parameters.get("total") if isinstance(parameters, dict) else None
    if not isinstance(family, str) or not family or len(family) > FAMILY_LENGTH:
        family = None
    else:
        family = storable_text(family)  # as the stored plan holds it
    if isinstance(total, bool) or not isinstance(total, int) or not 0 <= total < 2**63:
        total = None
    return family, total
