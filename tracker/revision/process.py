"""Process one revision exactly once: read outside, write everything in one transaction.

The read half (snapshot, diff, estimate: network and CPU, outside any write
lock) is ``prepare``; it builds the revision's one outcome record
(``storage.records.RevisionOutcome``). ``commit`` then writes blobs,
revision, the published rows (through the ``Publishers`` table the daemon
passes in: feeds builds advisories, tracker may not import it) and the lease
renewal in ONE transaction keyed by (repo, sha). ``tracker.revision.backfill.record_one``
is the same two steps with no lease, and the same publishers where the caller
passes them (``track`` always does). A crash before the
commit leaves nothing; a retry after it finds (repo, sha) recorded and writes
nothing.

One revision from claim to alert, and what each step reads:

1. claim (``tracker.schedule.leases.claim_due``): a row lease on poll_state, read
   with the repo's key and options; the head probe and, when it moved, the commit
   list come from the Hub. The repo's status and the history check are one
   transaction, which also reads the shas recorded already: the walk skips those
   without asking storage again.
2. ``prepare``, in at most one read session (``ReadSession``), opened only when
   something asks the store: the previous snapshot and plan (one query for the
   revision, its parent's row, snapshot, estimate, manifest and plan blobs, one for
   the parent's files); the file list from the Hub and at most ONE query for which
   content keys the store already holds, asked about texts over
   ``tracker.revision.snapshot.ASK_ABOVE`` (and the small ones with them, or when the
   session is open anyway): a small text is cheaper to fetch than a read session, so it
   is fetched without asking, and where the store held it the blob insert ignores it;
   unseen texts fetched from the Hub, never read back; the texts the differs need
   from the store through ``tracker.revision.session_blobs.SessionBlobs``, which
   reads each content key at most once per revision; parsing through the artifact
   table, cached by (kind, content key); ``estimator.plan`` once on config.json;
   the previous plan from the estimates table, read into a typed Plan once
   (``estimate.parent_plan``). Walking a repo's history, the caller passes what it
   kept of the revision it recorded before (``tracker.revision.walk.Walk``): its
   texts are neither asked for nor read again, nor fetched where a later revision
   brings back a text the walk recorded, the repo is looked up once, and the
   parent's snapshot and Plan are the ones it recorded, so nothing is asked about
   the parent or the revision (whether another writer recorded the revision
   meanwhile is the recording statement's answer) and no stored plan is parsed; the
   parent's Plan is the revision's own when config.json and the manifest are
   unchanged (no plan, no plan delta). A walked revision whose new texts are small
   opens no read session: its one transaction is the write.
   Plan JSON is written once, into the estimates table. The parsed configs
   (``CONFIG_PATHS``) go into the record, the previous side's taken from the new
   one where the file is unchanged, else from what the differ parsed, so building
   the record reads nothing more.
3. ``commit``, in one write transaction: ONE statement, the lease fence (the
   worker's lease renewed, or nothing written) returning what the recording must
   know (``storage.recording``: its place on main's chain,
   whether it is recorded, which of its manifest and plan blobs are stored,
   whether any subscription can name the repo; the texts the read session saw
   stored are not asked again); the fetched texts, manifest and plan in one
   batched insert that ignores a key already stored (a small text fetched without
   asking, or one another writer stored meanwhile: each blob is stored once), the
   revision's rows (files and changes each one executemany);
   then the publishers in order, each reading only the record: ``advisories``
   (feeds.publish.advisory_writer: changes and both plans; the repo's key is the
   claim's) and ``alerts`` (tracker.alerts.evaluate.alert_publisher: the
   subscriptions table, unless the recording found none that can name the repo,
   then, for fit subscriptions, the configs and the context length of the
   record's typed plans, and one plan per distinct (config, workload), none when
   config.json did not change); the repo's summary. No publisher reads a blob.
   The check ends with main's order placed and the lease handed back in one
   transaction, so a worker that lost its lease renumbers nothing.

So each content key is read from the store at most once per revision, each
distinct (config, workload) is planned once, and the publishers read no blob;
tests/daemon/test_revision_walk.py counts both on SQLite and PostgreSQL. A
backfill (``record_one``) makes the same blob reads per revision and one plan
each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from sqlalchemy.orm import Session

from estimator import Plan
from storage import (
    Database,
    DiffBase,
    LeaseFence,
    diff_base,
    record_revision,
)
from storage.records import JsonValue, Publication, Revision, RevisionOutcome, Snapshot
from storage.storable import JsonDocument, json_document
from tracker.diff.common import by_severity
from tracker.diff.plan_delta import diff_plans
from tracker.diff.revision import RevisionContent, diff_revisions
from tracker.errors import RevisionGone
from tracker.hub.client import Hub
from tracker.revision.estimate import estimate, parent_plan
from tracker.revision.exact_parameters import available as exact_available
from tracker.revision.session_blobs import ReadSession, SessionBlobs, content_of
from tracker.revision.snapshot import take_snapshot
from tracker.revision.stored_builds import SessionSource, StoredBuilds
from tracker.revision.walk import Planned, Walk

CONFIG_PATHS: Final = ("config.json", "generation_config.json")
"""The model-level configs an outcome carries parsed, for publishers to read."""


Outcome = RevisionOutcome[Plan]
"""The outcome record as the tracker builds it: both plans typed."""

Publisher = Callable[[Session, Outcome, Publication], Publication]
"""One publisher: reads the outcome, writes its rows in the caller's transaction, and returns
the publication so far extended with what it wrote (an advisory id, outbox rows)."""


@dataclass(frozen=True)
class Publishers:
    """The table of publishers a revision's transaction runs, in order; only the top fills it.

    Order matters: the advisory writer runs before the alert queuer, which
    links the advisory it wrote.
    """

    entries: tuple[tuple[str, Publisher], ...] = ()

    def plus(self, name: str, publisher: Publisher) -> Publishers:
        """This table with ``publisher`` appended under ``name``."""
        return Publishers((*self.entries, (name, publisher)))

    @property
    def names(self) -> tuple[str, ...]:
        """The publishers' names in the order they run."""
        return tuple(name for name, _ in self.entries)

    def run(self, session: Session, outcome: Outcome) -> Publication:
        """Every publisher over ``outcome`` in ``session``; what they wrote, together."""
        publication = Publication()
        for _, publisher in self.entries:
            publication = publisher(session, outcome, publication)
        return publication


@dataclass(frozen=True)
class Prepared:
    """A revision read from the Hub and diffed, not yet written: its outcome and the blobs
    to write with it (texts fetched from the Hub, meta-device builds made for it), and
    what the walk keeps once it is recorded (``remember``)."""

    outcome: Outcome
    fetched: dict[str, bytes]
    in_hand: Mapping[str, bytes] = field(default_factory=dict)
    """The bytes of the revision's texts that were read or fetched, by content key."""
    planned: Planned | None = None
    """The revision's plan with its inputs, for the next revision to carry when they hold."""
    repo_pk: int | None = None
    """The repo's key in storage, read while preparing."""
    stored: frozenset[str] = frozenset()
    """The content keys seen in the store while preparing (not asked for again)."""
    plan_document: JsonDocument | None = None
    """The plan's JSON, encoded once (the walk's, as it was stored, when the plan is carried)."""


def prepare(
    database: Database,
    hub: Hub,
    revision: Revision,
    walk: Walk,
    history: Mapping[str, Revision] | None = None,
    *,
    deadline: float | None = None,
) -> Prepared | None:
    """Snapshot, diff and estimate ``revision`` against its parent; None if already recorded.

    The parent is main's previous commit. When storage does not hold it (``track``
    records a head alone, a backfill of older history comes later, a re-track after
    ``untrack``), it is snapshotted from the Hub here, not recorded, so the outcome is
    the one an oldest-first walk would have built. ``history`` (sha -> revision, the
    caller's commit listing) names the parent's date and title; without it, or when
    it lacks the parent, the Hub's listing is read. ``deadline`` (``time.monotonic()``)
    bounds the fetching: what is not read by then is left out with a finding
    (``tracker.revision.snapshot.take_snapshot``). ``walk`` is what the caller kept
    from the revision it recorded before (``remember``): its texts are not read
    again, and its plan is carried when config.json and the manifest are unchanged.
    """
    cache = walk.parsed
    with ReadSession(database) as session:
        base = _diff_base(session, revision, walk)
        walk.repo_pk = base.repo_pk
        if base.recorded:
            return None
        blobs = SessionBlobs(session, kept=walk.texts, stored=walk.stored())
        builds = StoredBuilds(session) if exact_available() else None
        previous, old_plan = base.previous, None
        old: RevisionContent | None = None
        carried = walk.planned if previous is not None else None
        if base.unrecorded_parent is not None:
            parent = _parent_revision(hub, revision, base.unrecorded_parent, history)
            result = take_snapshot(hub, parent, None, blobs, parse_cache=cache, deadline=deadline)
            blobs = blobs.with_fetched(result.fetched)
            previous, old = result.snapshot, result.content(blobs)
            old_plan = estimate(old, None, builds)[0]
        elif previous is not None:
            old = content_of(previous, blobs, cache)
            if carried is not None and carried.sha == previous.revision.sha:
                old_plan = carried.plan  # the very Plan stored with it: nothing to parse
            else:
                old_plan = parent_plan(base.previous_plan, old, builds)
        result = take_snapshot(hub, revision, previous, blobs, parse_cache=cache, deadline=deadline)
        new = result.content(blobs)
        found = diff_revisions(old, new) + list(result.problems)
        plan: Plan | None
        document: JsonDocument | None = None
        if _plan_holds(carried, previous, new) and carried is not None:
            plan, problem, document = carried.plan, None, carried.document
        else:
            plan, problem = estimate(new, old, builds)
        if problem is not None:
            found.append(problem)
        if plan is not old_plan:
            found += diff_plans(old_plan, plan)
        found = by_severity(found)
        configs = configs_of(new)
        previous_configs = _previous_configs(old, new, configs) if old else {}
        in_hand = blobs.in_hand()
    outcome: Outcome = RevisionOutcome(
        snapshot=result.snapshot,
        previous=previous,
        changes=tuple(found),
        configs=configs,
        previous_configs=previous_configs,
        plan=plan,
        previous_plan=old_plan,
    )
    if document is None and plan is not None:
        document = json_document(plan.to_json())
    # New meta-device builds are blobs of their own, written in the revision's transaction,
    # and so are the texts read for an unrecorded parent that this revision's snapshot names.
    return Prepared(
        outcome,
        {**blobs.fetched, **result.fetched, **(builds.new if builds else {})},
        {**in_hand, **result.fetched},
        _planned(result.snapshot, plan, document),
        base.repo_pk,
        frozenset(blobs.stored),
        document,
    )


def remember(walk: Walk, prepared: Prepared) -> None:
    """Keep what the walk's next revision reads of ``prepared``, once it is recorded."""
    walk.recorded(prepared.outcome.snapshot, prepared.in_hand, prepared.planned)


def _diff_base(session: SessionSource, revision: Revision, walk: Walk) -> DiffBase:
    """``storage.diff_base``, or where the walk recorded ``revision``'s parent a moment ago,
    the same answer from what it holds, asking nothing.

    The walk lists only revisions it has not seen recorded, so ``revision`` is taken as
    unrecorded: where another writer recorded it since, the recording transaction's first
    statement finds it and ``commit`` writes nothing and returns None, the answer a
    revision found recorded here gave. That answer leaves ``previous_plan`` out: the walk
    holds the parent's Plan itself (``walk.planned``, None exactly where the parent has no
    plan), which ``prepare`` takes.
    """
    held = walk.parent_of(revision)
    if held is None or walk.repo_pk is None:
        return diff_base(session(), revision, walk.repo_pk)
    return DiffBase(recorded=False, repo_pk=walk.repo_pk, previous=held)


def _plan_holds(carried: Planned | None, previous: Snapshot | None, new: RevisionContent) -> bool:
    """Whether the parent's plan, computed by this process, is the plan of ``new`` too: the
    same config.json and the same manifest are the same inputs, so the same plan."""
    if carried is None or previous is None or carried.sha != previous.revision.sha:
        return False
    return (
        new.snapshot.texts.get("config.json") == carried.config_key
        and new.snapshot.manifest == carried.manifest
    )


def _planned(
    snapshot: Snapshot, plan: Plan | None, document: JsonDocument | None
) -> Planned | None:
    config_key = snapshot.texts.get("config.json")
    if plan is None or document is None or config_key is None:
        return None
    return Planned(snapshot.revision.sha, config_key, snapshot.manifest, plan, document)


def _parent_revision(
    hub: Hub, revision: Revision, sha: str, history: Mapping[str, Revision] | None
) -> Revision:
    """The parent ``sha`` of ``revision`` as main's listing names it (date, title, author)."""
    if history is not None and sha in history:
        return history[sha]
    for listed in hub.commits(revision.repo_id):
        if listed.sha == sha:
            return listed
    raise RevisionGone(f"{revision.repo_id}@{sha}: the parent of {revision.sha} is not on main")


def commit(
    database: Database,
    prepared: Prepared,
    *,
    fence: LeaseFence | None,
    publish: Publishers | None,
    clock: Callable[[], datetime],
) -> Publication | None:
    """Write the revision, its blobs and its published rows in one transaction.

    ``clock`` (the daemon's, or a test's fake) is read once: every time the
    transaction stores is that reading. ``fence`` is the worker's lease on the repo
    (None for a writer that holds none, a backfill): the recording's first statement
    renews it and raises LeaseNotHeld, writing nothing, where it is no longer held.

    What the publishers wrote (empty without publishers), or None when
    (repo, sha) was already recorded and nothing was written.
    """
    outcome = prepared.outcome
    now = clock()
    with database.session() as session:
        if not record_revision(
            session,
            outcome.snapshot,
            list(outcome.changes),
            prepared.plan_document,
            processed_at=now,
            repo_pk=prepared.repo_pk,
            texts=prepared.fetched,
            stored_keys=prepared.stored,
            fence=fence,
        ):
            return None
        return Publication() if publish is None else publish.run(session, outcome)


def configs_of(content: RevisionContent) -> dict[str, JsonValue]:
    """The revision's model-level configs that exist and parse to a JSON object, by path."""
    configs: dict[str, JsonValue] = {}
    for path in CONFIG_PATHS:
        value = content.value(path) if path in content.snapshot.texts else None
        if isinstance(value, dict):
            configs[path] = value
    return configs


def _previous_configs(
    old: RevisionContent, new: RevisionContent, configs: Mapping[str, JsonValue]
) -> dict[str, JsonValue]:
    """The previous revision's configs: the new value where the file is unchanged (same
    content key, so nothing is read again), else what the differ already parsed."""
    previous: dict[str, JsonValue] = {}
    for path in CONFIG_PATHS:
        key = old.snapshot.texts.get(path)
        if key is None:
            continue
        unchanged = key == new.snapshot.texts.get(path)
        value = configs.get(path) if unchanged else old.value(path)
        if isinstance(value, dict):
            previous[path] = value
    return previous


__all__ = [
    "CONFIG_PATHS",
    "Prepared",
    "Publisher",
    "Publishers",
    "commit",
    "configs_of",
    "prepare",
    "remember",
]
