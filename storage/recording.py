"""What recording one revision must read first, asked in one statement.

Before its rows are written a revision needs its place on main's chain (its
parent's position, a child recorded before it, the repo's newest), whether it is
recorded already, which of the blobs it names the store lacks (its manifest and
plan, and any text the caller did not see stored), and whether any subscription
could name its repo. Each was a round trip of its own inside the revision's
transaction; here they are scalar subqueries of one ``SELECT``, so against a
server the write waits for one answer instead of five. A worker's write is fenced
by its lease (``storage.polling.LeaseFence``): then the statement is the lease's
renewal (``UPDATE poll_state ... RETURNING``) returning those subqueries, so the
fence and the read are one round trip, still the transaction's first; a lease no
longer held returns no row and the write stops there (``LeaseNotHeld``).

A subscription that cannot name the repo leaves a note in the session
(``no_subscription_names``): ``storage.subscriptions_naming`` then answers
without reading, since nothing in this transaction has added one since
(``storage.add_subscription`` clears the note).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

from sqlalchemy import Integer, Text, bindparam, cast, exists, func, null, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.expression import Executable

from storage.blobs import known_content_keys
from storage.dialect import execute_core, table_of
from storage.errors import LeaseNotHeld
from storage.models import (
    BlobRow,
    RevisionRow,
    SubscriptionRepoKeyRow,
    SubscriptionRow,
)
from storage.polling import LEASE_RENEWAL, LeaseFence
from storage.records import Revision
from storage.repo_ids import RepoId
from storage.repo_patterns import lookup_keys

_UNSUBSCRIBED: Final = "storage.unsubscribed_repos"
"""``Session.info`` key of the repos no subscription can name, as read in this transaction."""
_MAX_KEYS_ASKED: Final = 500
"""Keys asked in one ``IN`` list; a longer list is asked by ``known_content_keys`` instead."""


@dataclass(frozen=True)
class RecordingContext:
    """What storage holds around a revision about to be recorded."""

    recorded: bool
    """(repo, sha) is recorded already: the recording writes nothing."""
    parent_position: int | None
    """The highest position among its recorded parents; None without one."""
    child_position: int | None
    """The lowest position of a recorded revision naming it as a parent (a backfill out of
    order); None without one."""
    newest_position: int | None
    """The repo's highest position; None when it has no revision."""
    stored_blobs: frozenset[str]
    """Which of the asked blob keys (manifest, plan) the store holds."""
    texts_stored: bool
    """Whether every asked text key is in the store."""


def recording_context(
    session: Session,
    repo_pk: int,
    revision: Revision,
    *,
    blob_keys: Sequence[str],
    text_keys: Collection[str],
    fence: LeaseFence | None = None,
) -> RecordingContext:
    """Everything ``record_revision`` reads before writing, in one statement.

    ``blob_keys`` (at most a few) are answered key by key; ``text_keys`` only as a
    whole: a missing text is the caller's error, worth a second query to name it.
    With a ``fence`` the statement renews that lease on the repo and raises
    LeaseNotHeld, reading nothing, where it is not held.
    """
    parents = revision.parents
    lookup = lookup_keys(revision.repo_id)
    asked = sorted(set(text_keys))
    count_texts = bool(asked) and len(asked) <= _MAX_KEYS_ASKED
    parameters: dict[str, Any] = {
        "context_repo": repo_pk,
        "context_sha": revision.sha,
        "context_quoted_sha": f'"{revision.sha}"',
    }
    parameters |= {f"context_parent_{index}": sha for index, sha in enumerate(parents)}
    parameters |= {f"context_lookup_{index}": key for index, key in enumerate(lookup)}
    if count_texts:
        parameters["context_texts"] = asked
    parameters |= {f"context_blob_{index}": key for index, key in enumerate(blob_keys)}
    if fence is not None:
        parameters |= fence.parameters(repo_pk)
    statement = _context_statement(
        len(parents), len(lookup), len(blob_keys), count_texts, fenced=fence is not None
    )
    found: Sequence[Any] | None = execute_core(session, statement, parameters).first()
    if found is None:  # only the fenced statement returns no row: the lease is not held
        raise LeaseNotHeld(
            f"{revision.repo_id}: the lease of {fence and fence.owner} expired or was taken "
            "over; its new holder records the revision"
        )
    recorded, parent, child, newest, subscribable = found[:5]
    blobs = found[5 : 5 + len(blob_keys)]
    if not subscribable:
        session.info.setdefault(_UNSUBSCRIBED, set()).add(revision.repo_id)
    return RecordingContext(
        recorded=bool(recorded),
        parent_position=None if parent is None else int(parent),
        child_position=None if child is None else int(child),
        newest_position=None if newest is None else int(newest),
        stored_blobs=frozenset(key for key, held in zip(blob_keys, blobs, strict=True) if held),
        texts_stored=_texts_stored(session, asked, found[5 + len(blob_keys) :]),
    )


@cache
def _context_statement(
    parents: int, lookups: int, blobs: int, count_texts: bool, *, fenced: bool
) -> Executable:
    """The statement of ``recording_context`` for one shape of revision, built once: each
    revision binds its values (``context_*``, and ``leased_*`` where ``fenced``) to it.

    The parents and lookup keys (one or two, two or three) are a parameter each, not
    an expanding list: that list's SQL is rewritten on every execution, which cost
    more than running the statement on SQLite. Only the rare list of texts expands.
    """
    repo_pk = bindparam("context_repo", type_=Integer)
    of_repo = RevisionRow.repo_pk == repo_pk
    columns: list[Any] = [
        exists().where(of_repo, RevisionRow.sha == bindparam("context_sha")),
        select(func.max(RevisionRow.position))
        .where(
            of_repo,
            RevisionRow.sha.in_([bindparam(f"context_parent_{index}") for index in range(parents)]),
        )
        .scalar_subquery()
        if parents
        else null(),
        # Rarely found, and cheap to ask: parents is a short JSON list of hex shas.
        select(func.min(RevisionRow.position))
        .where(
            of_repo,
            cast(RevisionRow.parents, Text).contains(bindparam("context_quoted_sha", type_=Text)),
        )
        .scalar_subquery(),
        select(func.max(RevisionRow.position)).where(of_repo).scalar_subquery(),
        # An active subscription keyed by the repo, its org or ``*``: every one that can name
        # it (``storage.repo_patterns``), and a superset of those that do.
        exists().where(
            SubscriptionRepoKeyRow.key.in_(
                [bindparam(f"context_lookup_{index}") for index in range(lookups)]
            ),
            SubscriptionRow.id == SubscriptionRepoKeyRow.subscription_pk,
            SubscriptionRow.active,
        ),
    ]
    columns += [
        exists().where(BlobRow.content_key == bindparam(f"context_blob_{index}"))
        for index in range(blobs)
    ]
    if count_texts:
        columns.append(
            select(func.count())
            .select_from(BlobRow)
            .where(BlobRow.content_key.in_(bindparam("context_texts", expanding=True)))
            .scalar_subquery()
        )
    return LEASE_RENEWAL.returning(*columns) if fenced else select(*columns)


def place_on_chain(session: Session, repo_pk: int, context: RecordingContext) -> int:
    """The revision's place on main's chain: one past its parent's, before a child recorded
    earlier (a backfill out of order; later places shift to make room), else one past the
    newest."""
    place = None if context.parent_position is None else context.parent_position + 1
    child = context.child_position
    if child is not None and (place is None or place >= child):
        execute_core(
            session,
            update(table_of(RevisionRow))
            .where(RevisionRow.repo_pk == repo_pk, RevisionRow.position >= child)
            .values(position=RevisionRow.position + 1),
        )
        return child
    if place is not None:
        return place
    return 0 if context.newest_position is None else context.newest_position + 1


def no_subscription_names(session: Session, repo_id: RepoId) -> bool:
    """Whether this transaction found that no active subscription can name ``repo_id``."""
    return repo_id in session.info.get(_UNSUBSCRIBED, ())


def forget_unsubscribed(session: Session) -> None:
    """Drop the notes of ``no_subscription_names``: a subscription was added or changed."""
    session.info.pop(_UNSUBSCRIBED, None)


def _texts_stored(session: Session, asked: list[str], counted: Sequence[Any]) -> bool:
    if not asked:
        return True
    if counted:
        return int(counted[0]) == len(asked)
    return len(known_content_keys(session, asked)) == len(asked)


__all__ = [
    "RecordingContext",
    "forget_unsubscribed",
    "no_subscription_names",
    "place_on_chain",
    "recording_context",
]
