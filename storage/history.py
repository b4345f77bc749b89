"""Recording and reading a repo's revisions: snapshot, changes and estimate, keyed by (repo, sha).

``record_revision`` writes everything of one revision inside the caller's
transaction, so the caller can add advisories and outbox rows to the same
commit; a second call for a recorded (repo, sha) writes nothing and returns
False, which is what makes a retried or duplicated check harmless.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Final

from sqlalchemy import bindparam, exists, insert, null, select, update
from sqlalchemy.orm import Session

from storage.blobs import known_content_keys, put_blobs
from storage.dialect import execute_core, insert_returning_id, table_of
from storage.errors import InvalidRecord, RepoNotFound, RevisionNotFound
from storage.manifests import manifest_of, snapshot_extras
from storage.models import (
    BlobRow,
    ChangeRow,
    EstimateRow,
    RevisionFileRow,
    RevisionRow,
    SnapshotRow,
)
from storage.plans import estimate_of
from storage.polling import LeaseFence
from storage.recording import place_on_chain, recording_context
from storage.records import (
    Change,
    FileEntry,
    JsonValue,
    Revision,
    Severity,
    Snapshot,
    StoredRevision,
)
from storage.repo_ids import RepoId
from storage.repos import ensure_repo, remember_repo_pk, repo_row
from storage.storable import JsonDocument, json_column, storable_revision
from storage.summary_upkeep import mark_summary_stale, remember_newest, remember_plan_figures
from storage.values import require_aware, require_text, storable_text

NEWEST_FIRST: Final = (RevisionRow.position.desc(), RevisionRow.id.desc())
"""Main's order is its parent chain, never ``date``: the pusher's clock wrote that."""
OLDEST_FIRST: Final = (RevisionRow.position, RevisionRow.id)

_INSERT_FILES: Final = insert(table_of(RevisionFileRow))
_INSERT_CHANGES: Final = insert(table_of(ChangeRow))
# SQL NULL, not JSON null, in the old inline columns: the manifest and plan live in blobs.
_INSERT_SNAPSHOT: Final = insert(table_of(SnapshotRow)).values(manifest=null())
_INSERT_ESTIMATE: Final = insert(table_of(EstimateRow)).values(plan=null())
"""The revision's rows, built once: each revision only binds its values to them."""

PLAN_SCHEMA_VERSION = 1
"""Version of the estimator's plan JSON stored when the caller names none."""


def record_revision(
    session: Session,
    snapshot: Snapshot,
    changes: Sequence[Change],
    plan_json: Mapping[str, JsonValue] | JsonDocument | None,
    *,
    processed_at: datetime,
    plan_schema_version: int = PLAN_SCHEMA_VERSION,
    repo_pk: int | None = None,
    texts: Mapping[str, bytes] | None = None,
    stored_keys: Collection[str] = (),
    fence: LeaseFence | None = None,
) -> bool:
    """Write one revision with its files, snapshot data, changes and estimate; True if new.

    Every text in ``snapshot.texts`` must be in the blob store or in ``texts``
    (content key -> bytes, stored with the revision's manifest and plan in one
    batched insert); ``stored_keys`` are keys the caller saw stored (blobs are
    never deleted), not asked again. The repo is added if storage did not know
    it; an untracked repo stays untracked. Upstream text no backend can hold is
    repaired and the revision gets a finding saying so (``storage.storable``), so
    a hostile commit is recorded rather than refused forever; the manifest and
    the plan are stored once per content (``storage.manifests``,
    ``storage.plans``); the revision is placed one past its parent on main's
    chain. ``plan_json`` may come encoded already (``storage.storable.JsonDocument``:
    the plan a walk recorded a moment ago, unchanged). What it reads first is one
    statement (``storage.recording``). Every
    time it stores (processed, blob and repo creation) is ``processed_at``, the
    writer's clock reading; ``repo_pk`` is the repo's key when the caller has read
    it already. A worker's write passes its lease as ``fence``: that one statement
    also renews the lease, and raises LeaseNotHeld before anything is written where
    the worker no longer holds it.
    """
    require_aware(processed_at, "record_revision processed_at")
    storable = storable_revision(snapshot, plan_json)
    snapshot = storable.snapshot
    if storable.finding is not None:
        changes = [*changes, storable.finding]
    revision = snapshot.revision
    _validate(snapshot, changes)
    if repo_pk is None:
        repo_pk = _repo_pk_for_recording(session, revision.repo_id, processed_at)
    else:
        remember_repo_pk(session, revision.repo_id, repo_pk)
    given = dict(texts or {})
    manifest, plan = storable.manifest, storable.plan
    manifest_key = None if manifest is None else manifest.key
    plan_key = None if plan is None else plan.blob[0]
    documents = [key for key in dict.fromkeys((manifest_key, plan_key)) if key is not None]
    context = recording_context(
        session,
        repo_pk,
        revision,
        blob_keys=list(documents),
        text_keys=set(snapshot.texts.values()).difference(given, stored_keys),
        fence=fence,
    )
    if not context.texts_stored:
        _refuse_missing_texts(session, snapshot, set(given))
    if context.recorded:
        return False
    position = place_on_chain(session, repo_pk, context)
    revision_pk = insert_returning_id(
        session,
        RevisionRow,
        {
            "repo_pk": repo_pk,
            "sha": revision.sha,
            "parents": list(revision.parents),
            "date": revision.date,
            "title": revision.title,
            "author": revision.author,
            "position": position,
            "processed_at": processed_at,
            "on_main": True,
        },
        ["repo_pk", "sha"],
    )
    if revision_pk is None:
        return False
    new_documents: dict[str, bytes] = {}
    if manifest is not None and manifest.key not in context.stored_blobs:
        new_documents[manifest.key] = manifest.stored_bytes()
    if plan is not None and plan.blob[0] not in context.stored_blobs:
        new_documents[plan.blob[0]] = plan.blob[1]
    put_blobs(session, {**given, **new_documents}, at=processed_at)
    if snapshot.files:
        execute_core(
            session,
            _INSERT_FILES,
            [
                _file_row(revision_pk, ordinal, entry)
                for ordinal, entry in enumerate(snapshot.files)
            ],
        )
    execute_core(
        session,
        _INSERT_SNAPSHOT,
        {
            "revision_pk": revision_pk,
            "texts": storable.texts,
            "oversized": storable.oversized,
            "manifest_key": manifest_key,
            "card": storable.card,
        },
    )
    if changes:
        execute_core(
            session,
            _INSERT_CHANGES,
            [_change_row(revision_pk, ordinal, change) for ordinal, change in enumerate(changes)],
        )
    if plan is not None:
        execute_core(
            session,
            _INSERT_ESTIMATE,
            {
                "revision_pk": revision_pk,
                "plan_key": plan_key,
                "schema_version": plan_schema_version,
            },
        )
    recorded_plan = plan_json.value if isinstance(plan_json, JsonDocument) else plan_json
    if context.newest_position is None or position > context.newest_position:
        remember_newest(session, repo_pk, revision_pk, recorded_plan)
    else:
        remember_plan_figures(session, revision_pk, recorded_plan)
        mark_summary_stale(session, repo_pk)
    return True


def _refuse_missing_texts(session: Session, snapshot: Snapshot, given: set[str]) -> None:
    """Raise InvalidRecord naming the texts whose content keys are neither given nor stored."""
    keys = set(snapshot.texts.values()) - given
    missing = keys - known_content_keys(session, keys)
    revision = snapshot.revision
    paths = sorted(path for path, key in snapshot.texts.items() if key in missing)
    raise InvalidRecord(
        f"{revision.repo_id}@{revision.sha}: texts {', '.join(paths)} name content keys "
        "that are not in the blob store; put_blob them first"
    )


def recorded_shas(session: Session, repo_id: RepoId) -> dict[str, bool]:
    """Every recorded sha of the repo, and whether it is on main: one indexed read, so a
    check that finds one new commit on a long history skips the rest without asking each."""
    rows = session.execute(
        select(RevisionRow.sha, RevisionRow.on_main).where(
            RevisionRow.repo_pk == repo_row(session, repo_id).id
        )
    )
    return {sha: bool(on_main) for sha, on_main in rows}


def has_revision(session: Session, repo_id: RepoId, sha: str) -> bool:
    """Whether (repo, sha) is recorded, on main or not."""
    pk = repo_row(session, repo_id).id
    return bool(
        execute_core(session, _RECORDED, {"recorded_repo": pk, "recorded_sha": sha}).scalar()
    )


_RECORDED: Final = select(
    exists().where(
        RevisionRow.repo_pk == bindparam("recorded_repo"),
        RevisionRow.sha == bindparam("recorded_sha"),
    )
)


def latest_revision(session: Session, repo_id: RepoId) -> Revision | None:
    """The newest recorded revision still on the repo's main history, if any."""
    row = latest_revision_row(session, repo_id)
    return None if row is None else to_revision(repo_id, row)


def latest_revision_row(session: Session, repo_id: RepoId) -> RevisionRow | None:
    """The row of the newest revision on main, for queries inside storage."""
    return session.scalars(
        _on_main(session, repo_id).order_by(*NEWEST_FIRST).limit(1)
    ).one_or_none()


def revisions(
    session: Session, repo_id: RepoId, *, include_off_main: bool = False
) -> list[Revision]:
    """The recorded revisions, newest first; those a force-push removed only if asked."""
    query = (
        select(RevisionRow).where(RevisionRow.repo_pk == repo_row(session, repo_id).id)
        if include_off_main
        else _on_main(session, repo_id)
    )
    rows = session.scalars(query.order_by(*NEWEST_FIRST))
    return [to_revision(repo_id, row) for row in rows]


def revision_log(session: Session, repo_id: RepoId) -> list[StoredRevision]:
    """Every recorded revision, newest first, with when it was processed and whether it is on main."""
    rows = session.scalars(
        select(RevisionRow)
        .where(RevisionRow.repo_pk == repo_row(session, repo_id).id)
        .order_by(*NEWEST_FIRST)
    )
    return [
        StoredRevision(
            revision=to_revision(repo_id, row),
            processed_at=row.processed_at,
            on_main=row.on_main,
            off_main_since=row.off_main_since,
        )
        for row in rows
    ]


def snapshot_at(session: Session, repo_id: RepoId, sha: str) -> Snapshot:
    """The snapshot recorded for ``repo_id`` at ``sha``, exactly as it was recorded."""
    return snapshot_of(session, repo_id, revision_row(session, repo_id, sha))


def snapshot_of(session: Session, repo_id: RepoId, row: RevisionRow) -> Snapshot:
    """The snapshot of a revision row already read, for queries inside storage."""
    return snapshot_with(session, repo_id, row, snapshot_extras(session, row.id))


def snapshot_with(
    session: Session,
    repo_id: RepoId,
    row: RevisionRow,
    extras: tuple[SnapshotRow, BlobRow | None] | None,
) -> Snapshot:
    """The snapshot of a revision row whose snapshot row and manifest blob (``extras``,
    as ``storage.manifests.snapshot_extras`` reads them) came with it: only the file list
    is read."""
    files = session.scalars(
        select(RevisionFileRow)
        .where(RevisionFileRow.revision_pk == row.id)
        .order_by(RevisionFileRow.ordinal)
    )
    extra = None if extras is None else extras[0]
    return Snapshot(
        revision=to_revision(repo_id, row),
        files=tuple(
            FileEntry(path=f.path, size=f.size, blob_id=f.blob_id, lfs_sha256=f.lfs_sha256)
            for f in files
        ),
        texts=dict(extra.texts) if extra else {},
        oversized=tuple(extra.oversized) if extra else (),
        manifest=None if extras is None else manifest_of(*extras),
        card=dict(extra.card) if extra else {},
    )


def changes_of(session: Session, repo_id: RepoId, sha: str) -> list[Change]:
    """The changes recorded for the revision ``sha`` against its predecessor, in order."""
    return _changes(session, revision_row(session, repo_id, sha).id)


def changes_between(
    session: Session, repo_id: RepoId, old_sha: str, new_sha: str
) -> list[tuple[Revision, list[Change]]]:
    """The on-main revisions after ``old_sha`` up to ``new_sha``, oldest first, with their changes."""
    old = revision_row(session, repo_id, old_sha)
    new = revision_row(session, repo_id, new_sha)
    rows = session.scalars(
        _on_main(session, repo_id)
        .where(RevisionRow.position > old.position, RevisionRow.position <= new.position)
        .order_by(*OLDEST_FIRST)
    )
    return [(to_revision(repo_id, row), _changes(session, row.id)) for row in rows]


def plan_at(session: Session, repo_id: RepoId, sha: str) -> dict[str, Any] | None:
    """The estimate (plan JSON) stored for the revision, or None if none was computed."""
    return estimate_of(session, revision_row(session, repo_id, sha).id)


def place_on_main(session: Session, repo_id: RepoId, main_shas: Sequence[str]) -> None:
    """Renumber the recorded revisions by their index in ``main_shas`` (oldest first).

    A walk that records revisions whose child was recorded first (``track`` records
    a head alone, the daemon's first check then records the history under it) places
    each on the way by its parent; this puts the whole chain back in main's order once
    the walk is done.
    """
    repo_pk = repo_row(session, repo_id).id
    rows = session.scalars(select(RevisionRow).where(RevisionRow.repo_pk == repo_pk)).all()
    before = [row.position for row in rows]
    _renumbered(session, rows, main_shas)
    if before != [row.position for row in rows]:
        mark_summary_stale(session, repo_pk)  # the newest on main may be another now


def mark_missing_revisions(
    session: Session, repo_id: RepoId, main_shas: Collection[str], *, at: datetime
) -> list[str]:
    """After a force-push: mark recorded revisions absent from ``main_shas`` as off main.

    Their data is kept. Returns the shas newly marked, newest first; a
    revision that reappears on main is marked back.
    """
    moment = at
    require_aware(moment, "mark_missing_revisions at")
    repo_pk = repo_row(session, repo_id).id
    keep = set(main_shas)
    rows = session.scalars(
        select(RevisionRow).where(RevisionRow.repo_pk == repo_pk).order_by(*NEWEST_FIRST)
    ).all()
    if isinstance(main_shas, Sequence):
        rows = _renumbered(session, rows, main_shas)
    gone = [row.sha for row in rows if row.on_main and row.sha not in keep]
    back = [row.sha for row in rows if not row.on_main and row.sha in keep]
    if gone:
        session.execute(
            update(RevisionRow)
            .where(RevisionRow.repo_pk == repo_pk, RevisionRow.sha.in_(gone))
            .values(on_main=False, off_main_since=moment)
        )
    if back:
        session.execute(
            update(RevisionRow)
            .where(RevisionRow.repo_pk == repo_pk, RevisionRow.sha.in_(back))
            .values(on_main=True, off_main_since=None)
        )
    mark_summary_stale(session, repo_pk)
    return gone


def revision_row(session: Session, repo_id: RepoId, sha: str) -> RevisionRow:
    """The row of (repo, sha), for queries inside storage."""
    row = _revision_row_or_none(session, repo_id, sha)
    if row is None:
        raise RevisionNotFound(f"{repo_id} has no recorded revision {sha}")
    return row


def to_revision(repo_id: RepoId, row: RevisionRow) -> Revision:
    """The typed Revision of a stored row; ``repo_id`` is passed in because the row holds only
    its key."""
    return Revision(
        repo_id=repo_id,
        sha=row.sha,
        parents=tuple(row.parents),
        date=row.date,
        title=row.title,
        author=row.author,
    )


def _revision_row_or_none(session: Session, repo_id: RepoId, sha: str) -> RevisionRow | None:
    return session.scalars(
        select(RevisionRow).where(
            RevisionRow.repo_pk == repo_row(session, repo_id).id, RevisionRow.sha == sha
        )
    ).one_or_none()


def _repo_pk_for_recording(session: Session, repo_id: RepoId, now: datetime) -> int:
    try:
        return repo_row(session, repo_id).id
    except RepoNotFound:
        ensure_repo(session, repo_id, now=now)
        return repo_row(session, repo_id).id


def _renumbered(
    session: Session, rows: Sequence[RevisionRow], main_shas: Sequence[str]
) -> list[RevisionRow]:
    """Rows placed by their index in main's list (oldest first), newest first again.

    Main's list is the authority on chain order; a row recorded without its
    parent (the first of a backfill, say) gets its true place here.
    """
    index = {sha: place for place, sha in enumerate(main_shas)}
    for row in rows:
        place = index.get(row.sha)
        if place is not None and row.position != place:
            row.position = place
    session.flush()
    return sorted(rows, key=lambda row: (row.position or 0, row.id), reverse=True)


def _on_main(session: Session, repo_id: RepoId) -> Any:
    return select(RevisionRow).where(
        RevisionRow.repo_pk == repo_row(session, repo_id).id, RevisionRow.on_main
    )


def _changes(session: Session, revision_pk: int) -> list[Change]:
    rows = session.scalars(
        select(ChangeRow).where(ChangeRow.revision_pk == revision_pk).order_by(ChangeRow.ordinal)
    )
    return [_to_change(row) for row in rows]


def changes_by_revision(session: Session, repo_pk: int) -> dict[int, list[Change]]:
    """Every recorded change of the repo, by revision primary key, each list in order: one
    query where a page of the whole history would otherwise ask once per revision."""
    rows = session.scalars(
        select(ChangeRow)
        .join(RevisionRow, RevisionRow.id == ChangeRow.revision_pk)
        .where(RevisionRow.repo_pk == repo_pk)
        .order_by(ChangeRow.revision_pk, ChangeRow.ordinal)
    )
    found: dict[int, list[Change]] = {}
    for row in rows:
        found.setdefault(row.revision_pk, []).append(_to_change(row))
    return found


def _to_change(row: ChangeRow) -> Change:
    return Change(
        artifact=row.artifact,
        path=row.path,
        kind=row.kind,
        old=row.old,
        new=row.new,
        severity=Severity(row.severity),
        message=row.message,
    )


def _file_row(revision_pk: int, ordinal: int, entry: FileEntry) -> dict[str, Any]:
    return {
        "revision_pk": revision_pk,
        "ordinal": ordinal,
        "path": entry.path,
        "size": entry.size,
        "blob_id": entry.blob_id,
        "lfs_sha256": entry.lfs_sha256,
        "content_key": entry.content_key,
    }


def _change_row(revision_pk: int, ordinal: int, change: Change) -> dict[str, Any]:
    return {
        "revision_pk": revision_pk,
        "ordinal": ordinal,
        "artifact": change.artifact,
        "path": storable_text(change.path),
        "kind": change.kind,
        "old": json_column(change.old),
        "new": json_column(change.new),
        "severity": int(change.severity),
        "message": storable_text(change.message),
    }


def _validate(snapshot: Snapshot, changes: Sequence[Change]) -> None:
    """Refuse what names our own records; upstream text was made storable before this."""
    revision = snapshot.revision
    where = f"{revision.repo_id}@{revision.sha}"
    require_aware(revision.date, f"{where} date")
    require_text([revision.sha, *revision.parents], where)
    for index, change in enumerate(changes):
        # path, message and values quote upstream text: _change_row makes them storable
        require_text([change.artifact, change.kind], f"{where} change {index}")
    paths = [entry.path for entry in snapshot.files]
    if len(set(paths)) != len(paths):
        raise InvalidRecord(f"{where}: the file list names a path more than once")
