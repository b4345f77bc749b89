"""The CLI, the HTTP API and the public page expose exactly the subscription field table's fields.

One table (tracker.alerts.fields) names every field; the ``subscribe``
flags, the document the CLI builds, the API's OpenAPI request body and
answers, and the page's rows are checked against it on a real server and a
real database (SQLite and PostgreSQL), so a field added to the table and
forgotten by one of them, or kept by one after the table drops it, fails
here. The table's choices are checked against the estimator's own.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest

from estimator.engines import ENGINE_NAMES
from estimator.workload import METHODS, PRECISIONS
from feeds import PublishSettings, create_app
from feeds.subscriptions_api import create_subscriptions_router
from storage import Database
from storage.records import Severity
from tests.feeds.conftest import ServerThread
from tracker.alerts.egress import Egress
from tracker.alerts.fields import BY_NAME, FIELDS, NAMES, STORED_SPEC, document_schema
from tracker.alerts.spec import FIT, WATCHABLE, parse_subscription
from tracker.cli import build_parser
from tracker.commands.subscribe import build_document

TOKEN = "api-token-for-the-field-tests-0123"
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
CHANNEL_FLAGS = {"--webhook", "--secret", "--secret-env", "--apprise"}
COMMAND_FLAGS = {"-h", "--help", "--replace", "--json"}
EVERY_FLAG = [
    "every-field",
    "--repo",
    "org/model",
    "--method",
    "serve",
    "--batch",
    "4",
    "--seq-len",
    "max",
    "--precision",
    "fp16",
    "--lora-rank",
    "8",
    "--card",
    "L4",
    "--gpus",
    "2",
    "--engine",
    "vllm",
    "--stack",
    "vllm==0.6.4",
    "--alert-on",
    "fit,tokenizer",
    "--min-severity",
    "high",
    "--webhook",
    "https://hooks.example/alerts",
    "--secret",
    SECRET,
]


def subscribe_parser() -> argparse.ArgumentParser:
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    child: argparse.ArgumentParser = commands.choices["subscribe"]
    return child


def test_the_subscribe_flags_are_the_tables_fields() -> None:
    options = {
        flag
        for action in subscribe_parser()._actions
        for flag in action.option_strings
        if flag not in COMMAND_FLAGS | CHANNEL_FLAGS
    }
    assert options == {f.flag for f in FIELDS if f.flag is not None}
    positionals = [a.dest for a in subscribe_parser()._actions if not a.option_strings]
    assert positionals == [f.name for f in FIELDS if f.flag is None and f.type != "channels"]


def test_every_flag_given_builds_a_document_of_exactly_the_tables_fields() -> None:
    document = build_document(subscribe_parser().parse_args(EVERY_FLAG))
    assert list(document) == list(NAMES)
    spec = parse_subscription(document)
    assert spec.workload.method == "serve" and spec.workload.gpus == 2
    assert spec.follow_context and spec.cards == ("L4",) and spec.engine == "vllm"
    assert spec.stack == "vllm==0.6.4" and spec.workload.stack == "vllm==0.6.4"


def test_help_shows_each_fields_help_and_default() -> None:
    text = "".join(subscribe_parser().format_help().split())  # argparse wraps at hyphens too
    for field in FIELDS:
        if field.flag is not None:
            assert "".join(field.help_text().split()) in text, field.name
    assert "(default512)" in text and "(defaultA10G)" in text


def test_a_minimal_document_takes_every_default_from_the_table() -> None:
    document = parse_subscription({"name": "d", "repos": ["o/m"]}).to_document()
    assert list(document) == list(NAMES)
    for field in FIELDS:
        if not field.required:
            default = field.default
            expected = list(default) if isinstance(default, tuple) else default
            assert document[field.name] == expected, field.name


def test_the_tables_choices_are_the_estimators_and_the_watchable_artifacts() -> None:
    assert BY_NAME["method"].choices == METHODS
    assert BY_NAME["precision"].choices == PRECISIONS
    assert BY_NAME["min_severity"].choices == tuple(s.label for s in Severity)
    assert BY_NAME["alert_on"].choices == (FIT, *WATCHABLE)
    assert BY_NAME["engine"].choices == ENGINE_NAMES


@pytest.fixture
def server(database: Database) -> Iterator[ServerThread]:
    server = ServerThread()
    router = create_subscriptions_router(
        database,
        token=TOKEN,
        parse=parse_subscription,
        vet=Egress().vet,
        schema=document_schema(),
        clock=lambda: NOW,
    )
    app = create_app(database, settings=PublishSettings(base_url=server.url), routers=[router])
    with server.mount(app) as running:
        yield running


def test_the_api_body_and_answers_are_the_tables_fields(server: ServerThread) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        openapi = client.get("/openapi.json").json()
        path = openapi["paths"]["/api/v1/subscriptions"]
        body = path["post"]["requestBody"]["content"]["application/json"]["schema"]
        assert list(body["properties"]) == list(NAMES)
        assert body["required"] == ["name", "repos"]
        put = openapi["paths"]["/api/v1/subscriptions/{name}"]["put"]["requestBody"]
        assert list(put["content"]["application/json"]["schema"]["properties"]) == list(NAMES)

        document = build_document(subscribe_parser().parse_args(EVERY_FLAG))
        created = client.post("/api/v1/subscriptions", json=document)
        assert created.status_code == 201, created.text
        assert list(created.json()["subscription"]) == list(NAMES)
        read = client.get("/api/v1/subscriptions/every-field").json()["subscription"]
        assert list(read) == list(NAMES)
        assert read["channels"][0]["secret"] == "********"


def test_the_page_shows_the_stored_fields_and_no_channel(server: ServerThread) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        document = build_document(subscribe_parser().parse_args(EVERY_FLAG))
        assert client.post("/api/v1/subscriptions", json=document).status_code == 201
        page = client.get("/subscriptions/every-field")
    assert page.status_code == 200
    workload = re.search(r'<table id="workload">(.*?)</table>', page.text, re.S)
    assert workload is not None
    rows = re.findall(r"<tr><th>([^<]+)</th>", workload.group(1))
    assert rows == [*STORED_SPEC, "min_severity"]
    shown = {"name", "repos", *rows}
    assert shown == set(NAMES) - {"channels"}
    assert "<h1>Subscription every-field</h1>" in page.text
    assert "<code>org/model</code>" in page.text
    assert "hooks.example" not in page.text and SECRET not in page.text
