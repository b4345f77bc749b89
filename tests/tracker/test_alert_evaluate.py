"""Alerts from real revisions: the shipped demo configs, the real estimator, real databases.

Each revision is recorded the way ``tracker.revision.process.commit`` records it
(blobs first, then the revision, then the alerts in the same transaction),
with the outcome record built by the same code processing uses (the parsed
configs of ``tracker.revision.process.configs_of``, the plan of ``tracker.revision.estimate``).
The figures come from the estimator on the demo's Llama-2-7B history: serving
4 sequences at the model's own context on an L4 fits at 2,048 tokens (18.56 GiB,
largest batch 4) and not at 4,096 (24.00 GiB, largest batch 2); an A100 80GB
still fits at 4,096 (largest batch 20) and not at 131,072 (largest batch 0).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

import estimator
from storage import (
    Advisory,
    Database,
    Delivery,
    Revision,
    Severity,
    add_subscription,
    channel_key,
    deliveries,
    put_advisory,
    put_blob,
    record_revision,
)
from storage.models import SubscriptionRow
from storage.records import Change, JsonValue, RevisionOutcome, Snapshot, Subscription
from tests.storage.builders import RECORDED_AT, eos_change, git_blob_id, snapshot
from tracker.alerts.evaluate import AlertLinks, enqueue_alerts, evaluate, model_side
from tracker.alerts.plan_cache import ModelSide, stated_context
from tracker.alerts.registry import save_subscription
from tracker.alerts.spec import SubscriptionSpec, parse_subscription
from tracker.diff.revision import RevisionContent
from tracker.revision.estimate import estimate
from tracker.revision.process import configs_of

REPO = "neurarch-demo/llama2-7b"
HISTORY = Path(__file__).resolve().parents[2] / "tracker/demo/histories" / REPO
UPLOAD = "7dba8667ad27534931d66b826bbdc7b31fad885c"  # max_position_embeddings 2048
LONGER = "2c19299788366b0adb608e08386b56071abf010a"  # 2048 -> 4096
ROPE = "59187708e28f74d2a1074eae3e844f9a6d991ebd"  # 4096 -> 131072 (llama3 rope)
NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
LINKS = AlertLinks(base_url="https://trace.example.org/")
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
SERVE_4_AT_MAX = {"method": "serve", "batch": 4, "seq_len": "max", "alert_on": ["fit"]}


def demo_config(sha: str) -> bytes:
    return (HISTORY / sha / "config.json").read_bytes()


def config_with(sha: str, **fields: Any) -> bytes:
    return json.dumps({**json.loads(demo_config(sha)), **fields}, indent=2).encode()


def subscribe(database: Database, **document: Any) -> Subscription:
    spec = parse_subscription({"name": "watch", "repos": [REPO], **document})
    with database.session() as session:
        return save_subscription(session, spec, now=NOW)[0]


class History:
    """A repo's revisions recorded one transaction each, alerts queued inside it."""

    def __init__(self, database: Database, repo_id: str = REPO) -> None:
        self.database = database
        self.repo_id = repo_id
        self.previous: tuple[Snapshot, dict[str, JsonValue], dict[str, Any] | None] | None = None
        self.processed: list[RevisionOutcome] = []

    def commit(
        self,
        sha: str,
        texts: Mapping[str, bytes],
        changes: Sequence[Change] = (),
        *,
        advisory_id: str | None = None,
    ) -> list[Delivery]:
        index = len(self.processed)
        before = None if self.previous is None else self.previous[0].revision
        revision = Revision(
            repo_id=self.repo_id,
            sha=sha,
            parents=() if before is None else (before.sha,),
            date=datetime(2024, 4, 1, tzinfo=UTC) + timedelta(days=index),
            title=f"revision {index}",
        )
        shot = snapshot(revision, dict(texts))
        content = RevisionContent(shot, dict(texts))
        configs = configs_of(content)
        plan, _ = estimate(content)
        outcome = RevisionOutcome(
            snapshot=shot,
            previous=None if self.previous is None else self.previous[0],
            changes=tuple(changes),
            configs=configs,
            previous_configs={} if self.previous is None else self.previous[1],
            plan=plan,
            previous_plan=None if self.previous is None else self.previous[2],
        )
        with self.database.session() as session:
            for data in texts.values():
                put_blob(session, git_blob_id(data), data, at=RECORDED_AT)
            assert record_revision(
                session, shot, list(changes), plan and plan.to_json(), processed_at=RECORDED_AT
            )
            if advisory_id is not None:  # what the daemon's publisher writes first
                put_advisory(session, advisory(advisory_id, revision, before))
            queued = self.enqueue(session, outcome, advisory_id)
        self.previous = (shot, configs, plan)
        self.processed.append(outcome)
        return queued

    def enqueue(
        self, session: Any, outcome: RevisionOutcome[estimator.Plan], advisory_id: str | None
    ) -> list[Delivery]:
        return enqueue_alerts(session, outcome, advisory_id=advisory_id, links=LINKS, now=NOW)

    def configs(self, *shas: str) -> list[list[Delivery]]:
        return [self.commit(sha, {"config.json": demo_config(sha)}) for sha in shas]


def side(sha: str, config: Mapping[str, Any] | None) -> ModelSide | None:
    """A revision's side as ``enqueue_alerts`` builds it from the outcome record."""
    if config is None:
        return None
    data = json.dumps(config).encode()
    content = RevisionContent(
        snapshot(Revision(REPO, sha, (), NOW, sha), {"config.json": data}), {"config.json": data}
    )
    plan, _ = estimate(content)
    return model_side(content.snapshot, configs_of(content), plan)


def advisory(advisory_id: str, revision: Revision, previous: Revision | None) -> Advisory:
    return Advisory(
        id=advisory_id,
        repo_id=revision.repo_id,
        old_sha=None if previous is None else previous.sha,
        new_sha=revision.sha,
        published=NOW,
        modified=NOW,
        summary="chat template changed",
        severity=Severity.HIGH,
        osv={"id": advisory_id, "modified": NOW.isoformat()},
    )


def only(queued: list[Delivery]) -> Delivery:
    assert len(queued) == 1, [(d.channel, d.event_key) for d in queued]
    return queued[0]


def change(artifact: str, severity: Severity, message: str, path: str = "x.json") -> Change:
    return Change(artifact, path, "modified", None, None, severity, message)


def test_serving_on_l4_no_longer_fits_when_the_context_doubles(database: Database) -> None:
    subscription = subscribe(database, **SERVE_4_AT_MAX, cards=["L4"])
    history = History(database)
    upload, longer = history.configs(UPLOAD, LONGER)

    assert upload == []
    alert = only(longer)
    assert alert.channel == "feed" and alert.event_key == f"{REPO}@{LONGER}/fit"
    assert (alert.repo_id, alert.sha, alert.subscription_id) == (REPO, LONGER, subscription.id)
    payload = alert.payload
    assert payload["summary"] == (
        "Serving, batch 4 at 2,048 -> 4,096 tokens on L4 24GB: 18.56 GiB -> 24.00 GiB, "
        f"no longer fits; largest batch now 2 ({REPO}@2c19299)"
    )
    (flip,) = payload["fit"]
    assert (flip["card"], flip["method"]) == ("L4", "serve")
    assert (flip["seq_len_before"], flip["seq_len_after"]) == (2048, 4096)
    before, after = flip["before"], flip["after"]
    assert (before["fits"], before["largest_batch"], before["split_cards"]) == (True, 4, None)
    assert (after["fits"], after["largest_batch"], after["split_cards"]) == (False, 2, None)
    assert round(before["device_bytes"] / 1e9, 1) == 19.9
    assert round(after["device_bytes"] / 1e9, 1) == 25.8
    assert payload["schema"] == "neurarch-trace.alert/1" and payload["kind"] == "fit"
    assert (payload["subscription"], payload["previous_sha"]) == ("watch", UPLOAD)
    assert payload["workload"] == {
        "method": "serve",
        "batch": 4,
        "seq_len": "max",
        "precision": "bf16",
        "lora_rank": 16,
        "cards": ["L4"],
        "gpus": 1,
    }
    assert payload["changes"] == [] and payload["advisory_id"] is None
    assert payload["advisory_url"] is None
    assert payload["revision_url"] == f"https://huggingface.co/{REPO}/commit/{LONGER}"
    assert json.loads(json.dumps(payload)) == payload


def test_a_transition_back_says_it_fits_again(database: Database) -> None:
    subscribe(database, **SERVE_4_AT_MAX, cards=["L4"])
    history = History(database)
    history.configs(LONGER)
    alert = only(history.commit(UPLOAD, {"config.json": demo_config(UPLOAD)}))

    assert alert.payload["summary"] == (
        "Serving, batch 4 at 4,096 -> 2,048 tokens on L4 24GB: 24.00 GiB -> 18.56 GiB, "
        f"fits again; largest batch now 4 ({REPO}@7dba866)"
    )
    (flip,) = alert.payload["fit"]
    assert (flip["before"]["fits"], flip["after"]["fits"]) == (False, True)


def test_only_cards_whose_verdict_flipped_are_listed(database: Database) -> None:
    subscribe(database, **SERVE_4_AT_MAX, cards=["L4", "A100-80GB"])
    _, longer, rope = History(database).configs(UPLOAD, LONGER, ROPE)

    assert [flip["card"] for flip in only(longer).payload["fit"]] == ["L4"]
    (a100,) = only(rope).payload["fit"]  # L4 stays unfit although its figures grow 15x
    assert a100["card"] == "A100 80GB"
    assert (a100["before"]["largest_batch"], a100["after"]["largest_batch"]) == (20, 0)
    assert only(rope).payload["summary"] == (
        "Serving, batch 4 at 4,096 -> 131,072 tokens on A100 80GB: 24.05 GiB -> 361.05 GiB, "
        f"no longer fits, not even split over 8 cards ({REPO}@5918770)"
    )


def test_a_model_that_outgrows_the_card_names_the_split_it_needs(database: Database) -> None:
    subscribe(database, method="serve", batch=1, seq_len=512, cards=["L4"], alert_on=["fit"])
    history = History(database)
    history.configs(UPLOAD)
    alert = only(history.commit(LONGER, {"config.json": config_with(UPLOAD, num_hidden_layers=48)}))

    assert alert.payload["summary"] == (
        "Serving, batch 1 at 512 tokens on L4 24GB: 13.47 GiB -> 19.70 GiB, "
        f"no longer fits; needs a split over 2 cards ({REPO}@2c19299)"
    )
    (flip,) = alert.payload["fit"]
    assert flip["after"]["split_cards"] == 2 and flip["seq_len_before"] == 512


def test_a_revision_that_changes_nothing_watched_alerts_no_one(database: Database) -> None:
    subscribe(database, **{**SERVE_4_AT_MAX, "alert_on": ["fit", "chat_template"]}, cards=["L4"])
    history = History(database)
    texts = {"config.json": demo_config(UPLOAD)}
    history.commit(UPLOAD, {**texts, "generation_config.json": b'{"eos_token_id": 2}'})
    fixed = {**texts, "generation_config.json": b'{"eos_token_id": 3}'}

    assert history.commit(LONGER, fixed, [eos_change(2, 3)]) == []


def test_changes_are_filtered_by_artifact_and_severity(database: Database) -> None:
    subscription = subscribe(
        database,
        alert_on=["chat_template", "tokenizer"],
        min_severity="moderate",
        cards=["L4"],
    )
    history = History(database)
    history.configs(UPLOAD)
    found = [
        change("tokenizer_config", Severity.LOW, "tokenizer_config.json: padding_side"),
        change("generation_config", Severity.HIGH, "eos_token_id 2 -> 3"),
        change("tokenizer", Severity.MODERATE, "tokenizer.json: 2 tokens added"),
        change("chat_template", Severity.HIGH, "chat_template: system prompt dropped"),
    ]
    config = {"config.json": demo_config(LONGER)}  # fit is not watched: no fit alert
    alert = only(history.commit(LONGER, config, found, advisory_id="NEURARCH-2024-0001"))

    assert alert.event_key == f"{REPO}@{LONGER}/changes"
    assert alert.advisory_id == "NEURARCH-2024-0001"
    payload = alert.payload
    assert payload["summary"] == (
        f"chat_template, tokenizer changed in {REPO}@2c19299: "
        "chat_template: system prompt dropped (+1 more)"
    )
    assert [tuple(c.values()) for c in payload["changes"]] == [
        ("chat_template", "x.json", "modified", "high", "chat_template: system prompt dropped"),
        ("tokenizer", "x.json", "modified", "moderate", "tokenizer.json: 2 tokens added"),
    ]
    assert list(payload["changes"][0]) == ["artifact", "path", "kind", "severity", "message"]
    assert payload["fit"] == [] and payload["advisory_id"] == "NEURARCH-2024-0001"
    assert payload["advisory_url"] == "https://trace.example.org/advisories/NEURARCH-2024-0001"
    with database.read_session() as session:
        assert [d.event_key for d in deliveries(session, subscription.id)] == [alert.event_key]


def test_repo_patterns_are_globs_and_other_repos_are_not_alerted(database: Database) -> None:
    names = {
        "org-glob": ["neurarch-demo/*"],
        "exact": [REPO],
        "other-org": ["other-org/*"],
        "case-differs": ["Neurarch-Demo/*"],
        "prefix-only": ["neurarch-demo/llama2"],
    }
    with database.session() as session:
        stored = {
            name: save_subscription(
                session,
                parse_subscription(
                    {"name": name, "repos": patterns, **SERVE_4_AT_MAX, "cards": ["L4"]}
                ),
                now=NOW,
            )[0]
            for name, patterns in names.items()
        }
    History(database).configs(UPLOAD, LONGER)
    History(database, "other-demo/llama2-7b").configs(UPLOAD, LONGER)

    with database.read_session() as session:
        queued = {name: deliveries(session, s.id) for name, s in stored.items()}
    assert {name: [d.repo_id for d in rows] for name, rows in queued.items()} == {
        "org-glob": [REPO],
        "exact": [REPO],
        "other-org": [],
        "case-differs": [],
        "prefix-only": [],
    }


def test_enqueueing_a_revision_twice_queues_its_alerts_once(database: Database) -> None:
    subscription = subscribe(database, **SERVE_4_AT_MAX, cards=["L4"])
    history = History(database)
    _, first = history.configs(UPLOAD, LONGER)
    with database.session() as session:
        again = history.enqueue(session, history.processed[-1], None)

    assert len(first) == 1 and again == []
    with database.read_session() as session:
        assert [(d.channel, d.sequence) for d in deliveries(session, subscription.id)] == [
            ("feed", 1)
        ]


def test_the_first_revision_of_a_repo_alerts_no_one(database: Database) -> None:
    subscription = subscribe(database, **SERVE_4_AT_MAX, cards=["L4"])
    found = [change("chat_template", Severity.CRITICAL, "chat_template added")]
    queued = History(database).commit(LONGER, {"config.json": demo_config(LONGER)}, found)

    assert queued == []
    with database.read_session() as session:
        assert deliveries(session, subscription.id) == []


def test_the_upload_after_the_hubs_empty_initial_commit_is_a_baseline(database: Database) -> None:
    subscription = subscribe(database, **{**SERVE_4_AT_MAX, "alert_on": ["fit", "tokenizer"]})
    history = History(database)
    history.commit("0" * 40, {".gitattributes": b"*.safetensors filter=lfs\n"})
    added = [change("tokenizer", Severity.HIGH, "tokenizer.json added", "tokenizer.json")]
    uploaded = history.commit(UPLOAD, {"config.json": demo_config(UPLOAD)}, added)
    longer = history.commit(LONGER, {"config.json": demo_config(LONGER)})

    assert uploaded == []
    assert [d.event_key for d in longer if d.channel == "feed"] == [f"{REPO}@{LONGER}/fit"]
    with database.read_session() as session:
        assert len(deliveries(session, subscription.id)) == 1


def test_each_configured_channel_gets_its_own_row_beside_the_feed(database: Database) -> None:
    channels = [
        {"type": "webhook", "url": "https://hooks.example.org/a", "secret": SECRET},
        {"type": "apprise", "url": "discord://id/token"},
    ]
    subscribe(database, **SERVE_4_AT_MAX, cards=["L4"], channels=channels)
    _, queued = History(database).configs(UPLOAD, LONGER)

    assert [(d.channel, d.sequence) for d in queued] == [
        ("feed", 1),
        (channel_key("webhook", "https://hooks.example.org/a"), 2),  # by identity, not place
        (channel_key("apprise", "discord://id/token"), 3),
    ]
    assert {d.event_key for d in queued} == {f"{REPO}@{LONGER}/fit"}
    assert queued[0].payload == queued[1].payload == queued[2].payload


def test_a_subscription_that_no_longer_parses_is_skipped_with_a_warning(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    with database.session() as session:
        add_subscription(
            session,
            "broken",
            [REPO],
            {**SERVE_4_AT_MAX, "cards": ["NoSuchCard"]},
            [],
            created_at=NOW,
        )
    good = subscribe(database, **SERVE_4_AT_MAX, cards=["L4"])
    with caplog.at_level(logging.WARNING, logger="tracker.alerts.evaluate"):
        _, queued = History(database).configs(UPLOAD, LONGER)

    assert [d.subscription_id for d in queued] == [good.id]
    (warning,) = [json.loads(r.getMessage()) for r in caplog.records]
    assert warning["event"] == "subscription_skipped" and warning["name"] == "broken"
    assert "NoSuchCard" in warning["error"]


def test_an_unreadable_previous_config_skips_fit_but_not_changes(database: Database) -> None:
    subscribe(database, **{**SERVE_4_AT_MAX, "alert_on": ["fit", "config"]}, cards=["L4"])
    history = History(database)
    history.commit(UPLOAD, {"config.json": b'{"architectures": ["LlamaForCausalLM"'})
    found = [change("config", Severity.HIGH, "config.json parses again", "config.json")]
    queued = history.commit(LONGER, {"config.json": demo_config(LONGER)}, found)

    assert [d.event_key for d in queued] == [f"{REPO}@{LONGER}/changes"]


def test_a_config_the_estimator_refuses_gives_no_fit_alert() -> None:
    spec = parse_subscription({"name": "w", "repos": [REPO], **SERVE_4_AT_MAX, "cards": ["L4"]})
    good = json.loads(demo_config(LONGER))
    broken = {**good, "num_attention_heads": 7}

    old, new = side(UPLOAD, broken), side(LONGER, good)
    assert evaluate(spec, REPO, LONGER, UPLOAD, old, new, []) == []
    assert evaluate(spec, REPO, LONGER, UPLOAD, new, side(UPLOAD, broken), []) == []
    assert evaluate(spec, REPO, LONGER, UPLOAD, None, new, []) == []


def test_fit_and_changes_are_two_alerts_of_one_revision() -> None:
    spec: SubscriptionSpec = parse_subscription(
        {"name": "w", "repos": [REPO], **SERVE_4_AT_MAX, "cards": ["L4"]}
        | {"alert_on": ["fit", "config"]}
    )
    old = side(UPLOAD, json.loads(demo_config(UPLOAD)))
    new = side(LONGER, json.loads(demo_config(LONGER)))
    found = [change("config", Severity.HIGH, "max_position_embeddings 2048 -> 4096")]
    alerts = evaluate(spec, REPO, LONGER, UPLOAD, old, new, found)

    assert [(a.kind, a.event_key) for a in alerts] == [
        ("fit", f"{REPO}@{LONGER}/fit"),
        ("changes", f"{REPO}@{LONGER}/changes"),
    ]
    assert alerts[1].summary == (
        f"config changed in {REPO}@2c19299: max_position_embeddings 2048 -> 4096"
    )
    assert evaluate(spec, REPO, LONGER, UPLOAD, old, new, found) == alerts


def test_the_context_is_read_from_the_recorded_plan() -> None:
    current = side(UPLOAD, json.loads(demo_config(UPLOAD)))
    assert current is not None and current.context == 2048
    longer = side(LONGER, json.loads(demo_config(LONGER)))
    assert longer is not None and longer.context == 4096
    assert stated_context(None) is None  # no plan: the estimator refused the config


def test_a_revision_reads_and_parses_no_subscription_to_other_repos(database: Database) -> None:
    with database.session() as session:
        for n in range(100):
            repos = [f"org-{n}/model"] if n % 2 else [f"org-{n}/*"]
            document = {"name": f"other-{n:03}", "repos": repos, **SERVE_4_AT_MAX, "cards": ["L4"]}
            save_subscription(session, parse_subscription(document), now=NOW)
    loaded: list[str] = []

    def count(row: SubscriptionRow, _: object) -> None:
        loaded.append(row.name)

    event.listen(SubscriptionRow, "load", count)
    try:
        history = History(database)
        assert history.configs(UPLOAD, LONGER) == [[], []]
        assert loaded == []  # none of the 100 was read, so none was parsed
        subscribe(database, **SERVE_4_AT_MAX, cards=["L4"])
        history.configs(ROPE)
    finally:
        event.remove(SubscriptionRow, "load", count)
    assert loaded == ["watch"]
