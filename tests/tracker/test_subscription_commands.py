"""subscribe / subscriptions / unsubscribe through the real CLI, and the TOML file's subscriptions."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from storage import (
    Database,
    enqueue_delivery,
    get_subscription,
    open_database,
    record_delivery_failure,
    record_delivery_success,
    subscriptions,
)
from storage.records import Severity
from tracker.alerts.registry import save_subscription, sync_configured
from tracker.alerts.spec import parse_subscription
from tracker.cli import main
from tracker.commands.demo import DEMO_SUBSCRIPTIONS, store_demo_subscriptions
from tracker.config_file import ConfigFileError, load_daemon_config, parse_daemon_config

ROOT = Path(__file__).resolve().parents[2]
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def cli_env(monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: Path) -> str:
    monkeypatch.setenv("NEURARCH_DATABASE_URL", database_url)
    monkeypatch.setenv("NEURARCH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("NEURARCH_CONFIG", raising=False)
    return database_url


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_subscribe_list_unsubscribe_round_trip(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = run_json(
        capsys,
        "subscribe", "lora-t4",
        "--repo", "meta-llama/*", "--repo", "mistralai/Mistral-7B-Instruct-v0.3",
        "--method", "lora", "--batch", "8", "--seq-len", "1024", "--precision", "fp16",
        "--lora-rank", "32", "--card", "t4", "--card", "A10G", "--gpus", "2",
        "--alert-on", "fit,chat_template", "--alert-on", "tokenizer",
        "--min-severity", "moderate",
    )  # fmt: skip
    assert stored["created"] is True
    assert stored["page"] == "http://127.0.0.1:8080/subscriptions/lora-t4"
    assert stored["feed"] == "http://127.0.0.1:8080/subscriptions/lora-t4/alerts.atom"

    [row] = run_json(capsys, "subscriptions")
    assert {k: row[k] for k in stored["subscription"]} == {
        "name": "lora-t4",
        "repos": ["meta-llama/*", "mistralai/Mistral-7B-Instruct-v0.3"],
        "method": "lora",
        "batch": 8,
        "seq_len": 1024,
        "precision": "fp16",
        "lora_rank": 32,
        "cards": ["T4", "A10G"],
        "gpus": 2,
        "engine": None,
        "stack": "",
        "alert_on": ["fit", "chat_template", "tokenizer"],
        "min_severity": "moderate",
        "channels": [],
    }
    assert row["active"] is True
    assert row["deliveries"] == {"pending": 0, "delivered": 0, "dead_letter": 0}

    assert main(["subscriptions"]) == 0
    table = capsys.readouterr().out
    assert "lora-t4" in table and "T4, A10G" in table and "feed only" in table

    assert main(["unsubscribe", "lora-t4"]) == 0
    assert "lora-t4: unsubscribed" in capsys.readouterr().out
    assert run_json(capsys, "subscriptions") == []
    assert main(["unsubscribe", "lora-t4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no active subscription is named 'lora-t4'" in err


def test_seq_len_max_is_stored_as_the_models_context(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    stored = run_json(
        capsys, "subscribe", "long", "--repo", "org/*", "--method", "serve", "--seq-len", "max"
    )
    assert stored["subscription"]["seq_len"] == "max"
    assert main(["subscribe", "long2", "--repo", "org/*", "--seq-len", "max"]) == 0
    assert "at the model's context length" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--card", "Z9000"], "unknown card 'Z9000'"),
        (["--batch", "0"], "batch must be between 1"),
        (["--batch", "eight"], "--batch 'eight': expected an integer"),
        (["--seq-len", "lots"], "expected an integer or 'max'"),
        (["--repo", "no-slash"], "repos entry 'no-slash' must be ORG/NAME"),
        (["--repo", "a/b/*"], "repos entry 'a/b/*' must be ORG/NAME"),
        (["--webhook", "https://hooks.example/x"], "a webhook needs a secret"),
        (["--webhook", "https://hooks.example/x", "--secret", "short"], "Standard Webhooks secret"),
        (
            ["--webhook", "https://hooks.example/x", "--secret", "whsec_" + "A" * 20],
            "24 to 64 random bytes",
        ),
        (["--webhook", "ftp://hooks.example/x", "--secret", SECRET], "http:// or https://"),
        (["--secret", SECRET], "give --webhook URL"),
        (["--webhook", "https://h.example/x", "--secret-env", "NO_SUCH_VAR_X"], "NO_SUCH_VAR_X"),
        (["--alert-on", "fit,bogus"], "alert_on entry 'bogus'"),
        (["--method", "pretrain"], "method must be one of"),
        (["--min-severity", "urgent"], "unknown severity 'urgent'"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_stores_nothing(
    cli_env: str, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    repo = [] if "--repo" in flags else ["--repo", "org/*"]
    assert main(["subscribe", "bad", *repo, *flags]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert run_json(capsys, "subscriptions") == []


def test_a_bad_name_and_a_missing_repo_are_refused(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["subscribe", "has space", "--repo", "a/b"]) == 2
    assert "(it appears in URLs)" in capsys.readouterr().err
    assert main(["subscribe", "norepo"]) == 2
    assert "at least one --repo" in capsys.readouterr().err


def test_a_taken_name_needs_replace(cli_env: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["subscribe", "s", "--repo", "a/*", "--batch", "2"]) == 0
    capsys.readouterr()
    assert main(["subscribe", "s", "--repo", "b/*", "--batch", "4"]) == 2
    assert "exists; use --replace" in capsys.readouterr().err
    assert run_json(capsys, "subscriptions")[0]["repos"] == ["a/*"]

    replaced = run_json(capsys, "subscribe", "s", "--repo", "b/*", "--batch", "4", "--replace")
    assert (replaced["created"], replaced["replaced"]) == (False, True)
    [row] = run_json(capsys, "subscriptions")
    assert (row["repos"], row["batch"]) == (["b/*"], 4)

    # An unsubscribed name is free again; the stored row (and its outbox) comes back.
    assert main(["unsubscribe", "s"]) == 0
    capsys.readouterr()
    again = run_json(capsys, "subscribe", "s", "--repo", "c/*")
    assert (again["created"], again["replaced"]) == (False, False)
    assert [r["repos"] for r in run_json(capsys, "subscriptions")] == [["c/*"]]


def test_secrets_never_appear_in_output(
    cli_env: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_SECRET_FOR_TEST", SECRET)
    monkeypatch.setenv("NEURARCH_ALERTS_ALLOW", "localhost")  # the apprise receiver below
    flags = ["--repo", "org/*", "--webhook", "https://hooks.example/in"]
    assert main(["subscribe", "a", *flags, "--secret-env", "HOOK_SECRET_FOR_TEST"]) == 0
    text = capsys.readouterr().out
    stored = run_json(
        capsys, "subscribe", "b", *flags, "--secret", SECRET, "--apprise", "json://localhost"
    )
    listing = run_json(capsys, "subscriptions")
    assert main(["subscriptions"]) == 0
    table = capsys.readouterr().out
    for shown in (text, json.dumps(stored), json.dumps(listing), table):
        assert SECRET not in shown
    assert stored["subscription"]["channels"] == [
        {"type": "webhook", "url": "https://hooks.example/in", "secret": "********"},
        {"type": "apprise", "url": "json://********"},
    ]
    assert [c["type"] for c in listing[0]["channels"]] == ["webhook"]
    assert "webhook, apprise" in table

    # The secret itself is stored (deliveries are signed with it), from the variable too.
    database = open_database(cli_env)
    try:
        with database.read_session() as session:
            assert get_subscription(session, "a").channels[0]["secret"] == SECRET
    finally:
        database.close()


def test_deliveries_and_dead_letters_are_listed(
    cli_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["subscribe", "s", "--repo", "org/*"]) == 0
    capsys.readouterr()
    database = open_database(cli_env)
    try:
        with database.session() as session:
            sid = get_subscription(session, "s").id
            rows = [
                enqueue_delivery(session, sid, "feed", f"e{i}", {"summary": f"alert {i}"}, now=NOW)
                for i in range(3)
            ]
            ids = [row.id for row in rows if row is not None]
            record_delivery_success(session, ids[0], NOW + timedelta(seconds=1))
            record_delivery_failure(session, ids[1], "HTTP 500 from receiver", retry_at=None)
    finally:
        database.close()

    [row] = run_json(capsys, "subscriptions")
    assert row["deliveries"] == {"pending": 1, "delivered": 1, "dead_letter": 1}
    outbox = run_json(capsys, "subscriptions", "--deliveries", "s")
    assert [(d["sequence"], d["status"], d["summary"]) for d in outbox] == [
        (1, "delivered", "alert 0"),
        (2, "dead_letter", "alert 1"),
        (3, "pending", "alert 2"),
    ]
    dead = run_json(capsys, "subscriptions", "--dead")
    assert [(d["subscription"], d["last_error"]) for d in dead] == [("s", "HTTP 500 from receiver")]
    assert run_json(capsys, "subscriptions", "--deliveries", "s", "--dead") == dead
    assert main(["subscriptions", "--deliveries", "s"]) == 0
    assert "s #2 feed dead_letter attempts=0: alert 1" in capsys.readouterr().out
    assert main(["subscriptions", "--deliveries", "nope"]) == 2
    assert "no subscription is named 'nope'" in capsys.readouterr().err


def document(name: str, **overrides: Any) -> dict[str, Any]:
    return {"name": name, "repos": ["org/*"], "cards": ["T4"], **overrides}


@pytest.mark.parametrize(
    ("entries", "named"),
    [
        ([document("ok"), document("x", cards=["Z9"])], "subscriptions[1]: cards"),
        ([document("x", batch=0)], "subscriptions[0]: batch"),
        ([document("x", seq_len="long")], "subscriptions[0]: seq_len"),
        ([document("x", alert_on=["fits"])], "subscriptions[0]: alert_on"),
        ([document("x", colour="red")], "subscriptions[0]: unknown field 'colour'"),
        ([document("x", channels=[{"type": "webhook", "url": "https://h/x"}])], "channels[0]"),
        ([document("x"), document("x")], "subscriptions[1]: name 'x' is already used"),
        ([{"repos": ["a/b"]}], "subscriptions[0]: name"),
    ],
)
def test_toml_subscription_errors_name_the_entry_and_field(
    entries: list[dict[str, Any]], named: str
) -> None:
    with pytest.raises(ConfigFileError, match=r"^neurarch\.toml: ") as error:
        parse_daemon_config({"subscriptions": entries}, "neurarch.toml")
    assert named in str(error.value)


def test_subscriptions_must_be_an_array_of_tables() -> None:
    with pytest.raises(ConfigFileError, match=r"\[\[subscriptions\]\]"):
        parse_daemon_config({"subscriptions": {"name": "x"}}, "neurarch.toml")


def test_sync_configured_adds_replaces_and_keeps_others(database: Database) -> None:
    mine = parse_subscription(document("by-hand"))
    with database.session() as session:
        save_subscription(session, mine, now=NOW)
    first = [parse_subscription(document("a")), parse_subscription(document("b", batch=2))]
    with database.session() as session:
        assert sync_configured(session, first, now=NOW) == ["a", "b"]
    with database.session() as session:
        assert sync_configured(session, first, now=NOW) == []  # unchanged: nothing rewritten
    changed = [first[0], parse_subscription(document("b", batch=4, min_severity="high"))]
    with database.session() as session:
        assert sync_configured(session, changed[1:], now=NOW) == ["b"]
        stored = get_subscription(session, "b")
        assert (stored.spec["batch"], stored.min_severity) == (4, Severity.HIGH)
        # Neither a subscription the file no longer lists nor one made by hand is touched.
        assert get_subscription(session, "a").active
        assert get_subscription(session, "by-hand").active
    with database.session() as session:
        names = [s.name for s in subscriptions(session)]
    assert names == ["a", "b", "by-hand"]


def test_the_shipped_demo_subscriptions_parse_and_store(database: Database) -> None:
    spec, vllm = load_daemon_config(DEMO_SUBSCRIPTIONS).subscriptions
    assert spec.to_document() == {
        "name": "demo-full-context",
        "repos": ["neurarch-demo/*"],
        "method": "serve",
        "batch": 4,
        "seq_len": "max",
        "precision": "bf16",
        "lora_rank": 16,
        "cards": ["L4", "A100 80GB"],
        "gpus": 1,
        "engine": None,
        "stack": "",
        "alert_on": ["fit", "chat_template", "tokenizer"],
        "min_severity": "moderate",
        "channels": [],
    }
    assert spec.matches("neurarch-demo/llama2-7b") and not spec.matches("meta-llama/x")
    assert (vllm.name, vllm.engine, vllm.follow_context, vllm.cards) == (
        "demo-vllm",
        "vllm",
        True,
        ("L4", "A100 80GB"),
    )
    names = ["demo-full-context", "demo-vllm"]
    assert store_demo_subscriptions(database) == names
    assert store_demo_subscriptions(database) == names  # a rerun is harmless
    with database.read_session() as session:
        assert get_subscription(session, "demo-full-context").spec["seq_len"] == "max"


def test_the_example_configuration_documents_a_working_subscription(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (ROOT / "deploy" / "neurarch-trace.example.toml").read_text(encoding="utf-8")
    [spec] = parse_daemon_config(tomllib.loads(text)).subscriptions
    assert (spec.name, spec.fit, spec.artifacts) == ("lora-on-t4", True, ("chat_template",))
    assert [c.kind for c in spec.channels] == ["apprise"]
    # The commented webhook line works once its secret variable is set.
    monkeypatch.setenv("NEURARCH_HOOK_SECRET", SECRET)
    enabled = text.replace('  # { type = "webhook"', '  { type = "webhook"')
    [spec] = parse_daemon_config(tomllib.loads(enabled)).subscriptions
    assert [(c.kind, c.secret) for c in spec.channels] == [("webhook", SECRET), ("apprise", None)]
