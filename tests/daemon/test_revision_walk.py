"""One revision from claim to alert: what it reads, counted on a real database.

A check worker claims the repo, snapshots the new revision from the Hub
emulator, diffs it, estimates it and commits it with the daemon's publisher
table (advisory writer, then alert queuer) in one transaction. Every SELECT
that fetches blob bytes is counted with SQLAlchemy's ``before_cursor_execute``
event, and every ``estimator.plan`` call and every Plan JSON decode
(``estimator.plan_json.from_json``) through a pass-through wrapper of the real
function. The promises: within one revision each blob is read at most
once and each plan is computed once per (config, workload), however many
subscriptions ask; the publishers read no blob at all; the only Plan JSON
read back is the parent's stored plan, once per revision. Every statement is also
counted by the transaction it ran in (``begin``): a walked revision asks the store only
what the walk does not hold, and a revision recorded by another writer meanwhile is
written once and not claimed by the worker.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

import estimator
import tracker.schedule.worker as worker_module
from estimator import plan_json
from storage import (
    Database,
    LeaseFence,
    claim_due_repos,
    deliveries,
    ensure_repo,
    plan_at,
    revision_log,
    snapshot_at,
)
from storage.records import Publication, Revision, RevisionOutcome, Subscription
from tests.daemon.conftest import Transactions, run_until_idle, track_all
from tests.storage.builders import RECORDED_AT, recorded_at
from tracker.alerts.registry import save_subscription
from tracker.alerts.spec import parse_subscription
from tracker.daemon import Daemon, publisher
from tracker.demo import HISTORIES
from tracker.diff.revision import Parsed
from tracker.hub.api import connect
from tracker.hub.client import Hub
from tracker.hub.discovery import HeadProbe
from tracker.hubsim import HubEmulator
from tracker.revision.backfill import backfill, record_one
from tracker.revision.process import (
    Prepared,
    Publisher,
    Publishers,
    commit,
    prepare,
    remember,
)
from tracker.revision.walk import Walk
from tracker.schedule.metrics import DaemonMetrics
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import HubSettings, Settings

pytestmark = pytest.mark.parametrize("hub_emulator", [{"corpus": None}], indirect=True)

REPO = "walk/llama2-7b"
LLAMA2 = HISTORIES / "neurarch-demo" / "llama2-7b" / "7dba8667ad27534931d66b826bbdc7b31fad885c"
START = datetime(2025, 3, 3, 9, 0, tzinfo=UTC)
SERVE_4_AT_MAX = {"method": "serve", "batch": 4, "seq_len": "max", "cards": ["L4", "A100 80GB"]}
SUBSCRIPTIONS = (
    {"name": "fit-a", "alert_on": ["fit", "config"], **SERVE_4_AT_MAX},
    {"name": "fit-b", "alert_on": ["fit"], **SERVE_4_AT_MAX},  # same workload as fit-a
    {
        "name": "lora",
        "method": "lora",
        "batch": 8,
        "seq_len": 512,
        "cards": ["T4"],
        "alert_on": ["fit", "generation_config", "chat_template"],
    },
)


def config(**override: object) -> bytes:
    document = json.loads((LLAMA2 / "config.json").read_text())
    return json.dumps({**document, **override}, indent=2).encode()


def tokenizer_config(template: str) -> bytes:
    return json.dumps({"chat_template": template, "model_max_length": 4096}).encode()


UPLOAD = {
    "config.json": config(),
    "generation_config.json": (LLAMA2 / "generation_config.json").read_bytes(),
    "tokenizer_config.json": tokenizer_config("{{ messages[0]['content'] }}"),
    "README.md": (LLAMA2 / "README.md").read_bytes(),
}
STEPS = {
    "context 2048 -> 4096": {"config.json": config(max_position_embeddings=4096)},
    "generation_config only": {"generation_config.json": b'{"eos_token_id": [2, 32000]}'},
    "chat template": {"tokenizer_config.json": tokenizer_config("{{ bos_token }}{{ messages }}")},
    "context 4096 -> 2048": {"config.json": config()},
}


@dataclass
class Reads:
    """What the database and the estimator were asked for since the last ``take``."""

    blobs: list[str] = field(default_factory=list)
    """Content keys of every SELECT that fetched blob bytes, in order."""
    probes: int = 0
    """SELECTs that only asked which content keys the store holds."""
    plans: list[tuple[str, estimator.Workload]] = field(default_factory=list)
    """(digest of the config, workload) of every estimator.plan call."""
    decodes: int = 0
    """Plan JSON documents read back into a typed Plan (``estimator.plan_json.from_json``)."""
    encodes: int = 0
    """Typed Plans written out as JSON documents (``estimator.plan_json.to_json``)."""

    by_publishers: dict[str, int] = field(default_factory=dict)
    """Blob reads made while each publisher ran."""

    def take(self) -> Reads:
        taken = Reads(
            list(self.blobs),
            self.probes,
            list(self.plans),
            self.decodes,
            self.encodes,
            dict(self.by_publishers),
        )
        self.blobs.clear()
        self.plans.clear()
        self.probes = self.decodes = self.encodes = 0
        self.by_publishers.clear()
        return taken

    def watch(self, name: str, publisher: Publisher) -> Publisher:
        """``publisher`` as it is, with the blob reads it makes counted under ``name``."""

        def watched(
            session: Any, outcome: RevisionOutcome, publication: Publication
        ) -> Publication:
            before = len(self.blobs)
            try:
                return publisher(session, outcome, publication)
            finally:
                self.by_publishers[name] = (
                    self.by_publishers.get(name, 0) + len(self.blobs) - before
                )

        return watched


@pytest.fixture
def reads(database: Database, monkeypatch: pytest.MonkeyPatch) -> Iterator[Reads]:
    counted = Reads()

    def on_execute(
        conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
    ) -> None:
        text = " ".join(statement.split())
        if not text.upper().startswith("SELECT") or " FROM blobs" not in text:
            return
        if "blobs.data" in text:
            values = parameters.values() if isinstance(parameters, dict) else parameters
            counted.blobs.extend(str(v) for v in values if isinstance(v, str))
        else:
            counted.probes += 1

    real_plan: Callable[..., estimator.Plan] = estimator.plan

    def counting_plan(
        config: Any, workload: estimator.Workload | None = None, **kwargs: Any
    ) -> estimator.Plan:
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:12]
        counted.plans.append((digest, workload or estimator.Workload()))
        return real_plan(config, workload, **kwargs)

    real_decode: Callable[[Any], estimator.Plan] = plan_json.from_json

    def counting_decode(document: Any) -> estimator.Plan:
        counted.decodes += 1
        return real_decode(document)

    real_encode: Callable[[estimator.Plan], dict[str, Any]] = plan_json.to_json

    def counting_encode(plan: estimator.Plan) -> dict[str, Any]:
        counted.encodes += 1
        return real_encode(plan)

    event.listen(database.engine, "before_cursor_execute", on_execute)
    monkeypatch.setattr(estimator, "plan", counting_plan)
    monkeypatch.setattr(plan_json, "from_json", counting_decode)
    monkeypatch.setattr(plan_json, "to_json", counting_encode)
    try:
        yield counted
    finally:
        event.remove(database.engine, "before_cursor_execute", on_execute)


def daemon_worker(
    database: Database, hub: HubEmulator, tmp_path: Path, clock: Clock, reads: Reads
) -> Worker:
    """A check worker with the publisher table the daemon registers (advisories, then alerts),
    each entry watched for the blob reads it makes."""
    settings = Settings.in_dir(tmp_path)
    daemon = Daemon(settings=settings, config=settings.daemon, database=database, clock=clock)
    table = daemon.with_alerts(publisher(clock))
    assert table.names == ("advisories", "alerts")
    return Worker(
        database,
        Hub(connect(HubSettings(hub.endpoint)), max_retries=2, timeout=5.0),
        HeadProbe(connect(HubSettings(hub.endpoint))),
        owner="walk/0",
        policy=WorkerPolicy(interval_s=60.0, max_backoff_s=600.0, lease_s=60.0),
        metrics=DaemonMetrics(),
        clock=clock,
        publish=Publishers(tuple((name, reads.watch(name, p)) for name, p in table.entries)),
    )


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


EXPECTED = {
    # step: (blob reads, plan calls, alerts queued by subscription)
    "context 2048 -> 4096": (3, 7, {"fit-a": ["fit", "changes"], "fit-b": ["fit"]}),
    "generation_config only": (3, 1, {"lora": ["changes"]}),
    "chat template": (3, 1, {"lora": ["changes"]}),
    "context 4096 -> 2048": (4, 7, {"fit-a": ["fit", "changes"], "fit-b": ["fit"]}),
}
"""What each revision of the walk costs. Blob reads are the texts the diff or the record needs
that were not fetched from the Hub (each once); plans are the revision's own estimate plus, when
config.json changed, one per side and distinct (workload, card): serve on L4 and A100 (shared by
fit-a and fit-b) and LoRA on T4."""


def test_one_revision_reads_each_blob_once_and_plans_each_workload_once(
    database: Database,
    hub_emulator: HubEmulator,
    tmp_path: Path,
    reads: Reads,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with database.session() as session:
        stored = [
            save_subscription(session, parse_subscription({"repos": [REPO], **document}), now=START)
            for document in SUBSCRIPTIONS
        ]
    clock = Clock()
    hub_emulator.publish(REPO, UPLOAD, title="Upload folder", date=START)
    track_all(database, [REPO], clock.now)
    worker = daemon_worker(database, hub_emulator, tmp_path, clock, reads)
    run_until_idle(worker)
    baseline = reads.take()  # the initial commit and the upload: fetched, nothing read back

    walked: dict[str, tuple[Reads, dict[str, list[str]]]] = {}
    for index, (title, files) in enumerate(STEPS.items(), start=1):
        hub_emulator.publish(REPO, files, title=title, date=START + timedelta(minutes=index))
        clock.now += timedelta(minutes=2)
        before = queued_alerts(database, stored)
        with caplog.at_level(logging.INFO, logger="neurarch.worker"):
            assert run_until_idle(worker) == 1
        after = queued_alerts(database, stored)
        alerts = {
            name: after[name][len(before[name]) :] for name in after if after[name] != before[name]
        }
        walked[title] = (reads.take(), alerts)

    assert (len(baseline.blobs), len(baseline.plans)) == (0, 1)
    assert baseline.by_publishers == {"advisories": 0, "alerts": 0}
    for title, (step, _) in walked.items():
        assert max(Counter(step.blobs).values()) == 1, (title, step.blobs)
        assert max(Counter(step.plans).values()) == 1, (title, step.plans)
        assert step.by_publishers == {"advisories": 0, "alerts": 0}, title
    figures = {
        title: (len(step.blobs), len(step.plans), alerts)
        for title, (step, alerts) in walked.items()
    }
    # The parent's stored plan is read back once; the record carries both Plans typed to the
    # differ and every publisher, which decode nothing.
    assert [step.decodes for step, _ in walked.values()] == [1, 1, 1, 1]
    assert figures == EXPECTED
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neurarch.worker"]
    recorded = [e for e in logged if e["event"] == "revision_recorded"]
    assert [e["alerts"] for e in recorded] == [3, 1, 1, 3]  # feed rows: what the queuer returned
    assert all(isinstance(e["advisory"], str) for e in recorded), recorded


def queued_alerts(
    database: Database, stored: list[tuple[Subscription, bool]]
) -> dict[str, list[str]]:
    """Per subscription, the kinds of the alerts in its feed channel, oldest first."""
    with database.read_session() as session:
        return {
            record.name: [
                d.event_key.rsplit("/", 1)[-1]
                for d in deliveries(session, record.id)
                if d.channel == "feed"
            ]
            for record, _ in stored
        }


def published_steps(hub_emulator: HubEmulator) -> Hub:
    """The upload and every step of ``STEPS`` published, a minute apart; a client of that Hub."""
    hub_emulator.publish(REPO, UPLOAD, title="Upload folder", date=START)
    for index, (title, files) in enumerate(STEPS.items(), start=1):
        hub_emulator.publish(REPO, files, title=title, date=START + timedelta(minutes=index))
    return Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=2, timeout=5.0)


def test_backfill_builds_the_same_record_with_each_blob_read_once_per_revision(
    database: Database, hub_emulator: HubEmulator, reads: Reads
) -> None:
    hub = published_steps(hub_emulator)
    with database.session() as session:
        ensure_repo(session, REPO, now=RECORDED_AT)
    cache: dict[tuple[str, str], Parsed] = {}
    per_revision = []
    decodes = []
    for revision in hub.commits(REPO):
        assert record_one(database, hub, revision, cache, clock=recorded_at) is not None
        step = reads.take()
        assert max(Counter(step.blobs).values(), default=0) <= 1, (revision.title, step.blobs)
        per_revision.append((revision.title, len(step.blobs), len(step.plans)))
        decodes.append(step.decodes)

    # Every text a differ needs was parsed into the shared cache when its revision was
    # recorded: nothing is read back from the store.
    assert per_revision[2:] == [(title, 0, 1) for title in EXPECTED]
    assert decodes == [0, 0, 1, 1, 1, 1]  # the parent's stored plan, where it has one


def test_a_walk_reads_no_blob_back_and_plans_only_when_config_json_changed(
    database: Database, hub_emulator: HubEmulator, reads: Reads
) -> None:
    hub = published_steps(hub_emulator)
    report = backfill(database, hub, REPO, clock=recorded_at)
    walked = reads.take()

    assert report.recorded == len(STEPS) + 2
    assert walked.blobs == []
    # the initial commit has no config.json; the upload and the two context steps plan
    assert len(walked.plans) == 3
    # and only those plans are written out: the others are stored as the document before
    assert walked.encodes == 3
    with database.read_session() as session:
        plans = [plan_at(session, REPO, r.sha) for r in hub.commits(REPO)]
    assert plans[0] is None
    assert plans[2] == plans[3] == plans[4] != plans[1] == plans[5]


WALKED = {
    # revision: statements per transaction it ran, in order (the read session, if any; the write)
    "initial commit": [2, 5],  # no walk yet: the repo, then its standing (storage.diff_base)
    "Upload folder": [8],  # its new texts are small: fetched without asking the store
    "context 2048 -> 4096": [8],
    "generation_config only": [8],
    "chat template": [8],
    "context 4096 -> 2048": [7],  # config.json back to a text the walk recorded: not fetched
    "drop the README": [7],  # every text the walk's: nothing fetched, no blob written
}
"""What each revision of a walk asks the database, prepared and committed as a worker does,
fenced by its lease. A walked revision whose new texts are small
(``tracker.revision.snapshot.ASK_ABOVE``) opens no read session: its one transaction is the
write, whose first statement renews the lease and returns the recording's one read
(``storage.recording``), which also answers whether the revision is recorded."""


def test_a_walked_revision_asks_the_store_only_what_the_walk_does_not_hold(
    database: Database, hub_emulator: HubEmulator, transactions: Transactions
) -> None:
    hub = published_steps(hub_emulator)
    hub_emulator.publish(REPO, {}, deletions=["README.md"], title="drop the README", date=START)
    now = datetime.now(UTC)
    with database.session() as session:
        ensure_repo(session, REPO, now=now)
        assert claim_due_repos(session, "walk/0", now, 1, 600)  # a worker's lease on it
    fence = LeaseFence("walk/0", now, now + timedelta(seconds=600))
    walk = Walk()
    per_revision: dict[str, list[list[str]]] = {}
    transactions.take()
    for revision in hub.commits(REPO):
        prepared = prepare(database, hub, revision, walk)
        assert prepared is not None
        assert commit(database, prepared, fence=fence, publish=None, clock=recorded_at)
        remember(walk, prepared)
        per_revision[revision.title] = transactions.take()

    assert {title: [len(t) for t in done] for title, done in per_revision.items()} == WALKED
    for title, done in per_revision.items():
        *reads, write = done
        assert all(verb == "SELECT" for read in reads for verb in read), title
        # the fence and the recording's read are one statement: nothing is read after it
        assert write[0] == "UPDATE" and "SELECT" not in write[1:], (title, write)
    # the walk recorded what a backfill records: every revision once, the README gone last
    with database.read_session() as session:
        log = revision_log(session, REPO)
        assert [stored.revision.title for stored in log] == list(reversed(WALKED))
        assert "README.md" not in snapshot_at(session, REPO, log[0].revision.sha).texts


def test_a_revision_recorded_by_another_writer_meanwhile_is_written_once_and_not_counted(
    database: Database,
    hub_emulator: HubEmulator,
    tmp_path: Path,
    reads: Reads,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    hub_emulator.publish(REPO, UPLOAD, title="Upload folder", date=START)
    track_all(database, [REPO], clock.now)
    worker = daemon_worker(database, hub_emulator, tmp_path, clock, reads)
    run_until_idle(worker)
    for index, (title, files) in enumerate(STEPS.items(), start=1):
        hub_emulator.publish(REPO, files, title=title, date=START + timedelta(minutes=index))
    raced = "generation_config only"
    other = Hub(connect(HubSettings(hub_emulator.endpoint)), max_retries=2, timeout=5.0)
    held_parent: list[bool] = []

    def prepare_then_lose_the_race(
        database: Database, hub: Hub, revision: Revision, walk: Walk, *args: Any, **kwargs: Any
    ) -> Prepared | None:
        held_parent.append(walk.parent_of(revision) is not None)
        prepared = prepare(database, hub, revision, walk, *args, **kwargs)
        if revision.title == raced:  # another worker records it before this one commits
            assert record_one(database, other, revision, clock=recorded_at) is not None
        return prepared

    monkeypatch.setattr(worker_module, "prepare", prepare_then_lose_the_race)
    recorded_before = worker.metrics.revisions._value.get()
    clock.now += timedelta(minutes=10)
    with caplog.at_level(logging.INFO, logger="neurarch.worker"):
        assert run_until_idle(worker) == 1

    # the raced revision's parent was the walk's, so nothing asked whether it was recorded;
    # the walk kept nothing of it, so the next revision read its parent from the store
    assert held_parent == [False, True, False, True]
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.name == "neurarch.worker"]
    titles = {r.sha: r.title for r in other.commits(REPO)}
    claimed = [titles[e["sha"]] for e in logged if e["event"] == "revision_recorded"]
    assert claimed == [title for title in STEPS if title != raced]
    assert worker.metrics.revisions._value.get() == recorded_before + len(STEPS) - 1
    with database.read_session() as session:
        log = revision_log(session, REPO)
    assert Counter(stored.revision.title for stored in log) == Counter(
        ["initial commit", "Upload folder", *STEPS]
    )
    # written by the other writer, at its clock, not by this worker at the worker's
    assert [s.processed_at for s in log if s.revision.title == raced] == [RECORDED_AT]
