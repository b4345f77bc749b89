"""The webhook endpoint on a real server: the secret guards the inbox, redelivery stores nothing,
and a drained delivery makes its repo due at once."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy import func, select

from feeds.webhooks import PATH, create_webhook_router
from storage import Database, poll_state
from storage.models import WebhookEventRow
from tests.daemon.harness import free_port
from tracker.schedule.inbox import drain
from tracker.schedule.leases import track

SECRET = "hook-secret"
SHA = "a" * 40


def payload(sha: str = SHA, repo: str = "acme/model") -> dict[str, Any]:
    """A delivery shaped like the Hub's (hub-docs webhooks.md, version 3)."""
    return {
        "event": {"action": "update", "scope": "repo.content"},
        "repo": {
            "type": "model",
            "name": repo,
            "id": f"id-of-{repo}",
            "private": False,
            "url": {"web": f"https://huggingface.co/{repo}", "api": f"/api/models/{repo}"},
            "owner": {"id": "64f0"},
            "headSha": sha,
        },
        "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "b" * 40, "newSha": sha}],
        "webhook": {"id": "6521f0e3a1b2c3d4e5f60719", "version": 3},
    }


@contextlib.contextmanager
def serving(database: Database, max_body_bytes: int = 1024 * 1024) -> Iterator[str]:
    """The bare webhook router (no app middleware) on a real uvicorn server."""
    app = FastAPI()
    router = create_webhook_router(database, secret=SECRET, max_body_bytes=max_body_bytes)
    app.include_router(router)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    while not instance.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}{PATH}"
    finally:
        instance.should_exit = True
        thread.join(10)


@pytest.fixture
def server(database: Database) -> Iterator[str]:
    with serving(database) as url:
        yield url


def stored(database: Database) -> int:
    with database.read_session() as session:
        return int(session.scalar(select(func.count()).select_from(WebhookEventRow)) or 0)


@pytest.mark.parametrize("headers", [{}, {"X-Webhook-Secret": "wrong"}, {"X-Webhook-Secret": ""}])
def test_missing_or_wrong_secret_is_401_and_stores_nothing(
    database: Database, server: str, headers: dict[str, str]
) -> None:
    response = httpx.post(server, json=payload(), headers=headers)
    assert response.status_code == 401
    assert "error" in response.json()
    assert stored(database) == 0


def test_the_secret_in_the_webhook_urls_query_is_accepted(database: Database, server: str) -> None:
    """The Hub's docs let a webhook URL carry its secret as ``?secret=``."""
    wrong = httpx.post(server, params={"secret": "wrong"}, json=payload())
    assert wrong.status_code == 401 and stored(database) == 0
    right = httpx.post(server, params={"secret": SECRET}, json=payload())
    assert right.status_code == 202 and stored(database) == 1
    header_wins = httpx.post(
        server, params={"secret": SECRET}, json=payload("c" * 40), headers={"X-Webhook-Secret": "x"}
    )
    assert header_wins.status_code == 401 and stored(database) == 1


def test_redelivery_is_stored_once(database: Database, server: str) -> None:
    first = httpx.post(server, json=payload(), headers={"X-Webhook-Secret": SECRET})
    again = httpx.post(server, json=payload(), headers={"X-Webhook-Secret": SECRET})
    assert first.status_code == again.status_code == 202
    assert (first.json()["duplicate"], again.json()["duplicate"]) == (False, True)
    assert stored(database) == 1
    other = httpx.post(server, json=payload("c" * 40), headers={"X-Webhook-Secret": SECRET})
    assert other.json()["duplicate"] is False
    assert stored(database) == 2


def test_head_sha_is_kept_from_the_raw_payload(database: Database, server: str) -> None:
    httpx.post(server, json=payload(), headers={"X-Webhook-Secret": SECRET})
    with database.read_session() as session:
        row = session.scalars(select(WebhookEventRow)).one()
        assert row.repo_id == "acme/model"
        assert row.payload["repo"]["headSha"] == SHA


def test_malformed_body_is_400_and_stores_nothing(database: Database, server: str) -> None:
    response = httpx.post(server, content=b'{"event": 1}', headers={"X-Webhook-Secret": SECRET})
    assert response.status_code == 400
    assert stored(database) == 0


def test_drained_delivery_makes_the_repo_due_now_and_drains_once(
    database: Database, server: str
) -> None:
    now = datetime.now(UTC)
    with database.session() as session:
        # Tracked "in an hour": its first check is not due yet.
        track(session, "acme/model", now=now + timedelta(hours=1))
    httpx.post(server, json=payload(), headers={"X-Webhook-Secret": SECRET})
    httpx.post(server, json=payload(repo="other/untracked"), headers={"X-Webhook-Secret": SECRET})
    first = drain(database, now=now)
    assert (first.deliveries, first.checks_requested) == (2, 1)
    with database.read_session() as session:
        assert poll_state(session, "acme/model").next_check_at == now
    assert drain(database, now=now).deliveries == 0


def post_raw(server: str, body: bytes) -> httpx.Response:
    return httpx.post(
        server,
        content=body,
        headers={"X-Webhook-Secret": SECRET, "Content-Type": "application/json"},
    )


def with_field(value: str) -> bytes:
    """A valid delivery with one extra field spliced in as raw JSON text."""
    text = json.dumps(payload())
    return (text[:-1] + f', "extra": {value}}}').encode()


HOSTILE_NAMES = [
    "../../etc",
    "a/b/c",
    "acme/mo\x00del",
    "acme/" + "n" * 10_000,
    "<script>alert(1)</script>",
    "acme/model.git",
    "acme/..",
    "acme\\model",
    "acme/mödel",
    "",
    "acme/",
    "acme/-model",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_repo_names_are_400_and_store_nothing(
    database: Database, server: str, name: str
) -> None:
    response = httpx.post(server, json=payload(repo=name), headers={"X-Webhook-Secret": SECRET})
    assert response.status_code == 400
    assert response.json()["error"].startswith("not a Hub webhook payload: repo.name: repo id")
    assert len(response.json()["error"]) < 200
    assert stored(database) == 0


def test_a_move_to_a_hostile_name_is_400(database: Database, server: str) -> None:
    body = {**payload(), "movedTo": {"name": "../../etc/passwd"}}
    response = httpx.post(server, json=body, headers={"X-Webhook-Secret": SECRET})
    assert response.status_code == 400
    assert "movedTo.name" in response.json()["error"]
    assert stored(database) == 0


HOSTILE_BODIES = {
    "deep arrays": (b"[" * 100_000 + b"]" * 100_000, "nests 100000 levels deep; at most 64"),
    "deep objects": (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nests 100000 levels deep"),
    "deep inside a valid delivery": (with_field("[" * 65 + "]" * 65), "nests 66 levels deep"),
    "NaN": (with_field("NaN"), "NaN is not a JSON number"),
    "Infinity": (with_field("-Infinity"), "-Infinity is not a JSON number"),
    "5000-digit integer": (with_field("9" * 5000), "not JSON the server accepts"),
    "lone surrogate": (with_field('"\\ud800"'), "lone UTF-16 surrogate"),
    "NUL in a field": (with_field('"a\\u0000b"'), "NUL character"),
    "invalid UTF-8": (b'{"event": "\xff\xfe"}', "not UTF-8 JSON"),
    "not an object": (b"[1, 2, 3]", "not a Hub webhook payload"),
    "truncated": (json.dumps(payload()).encode()[:-5], "not valid JSON"),
}


@pytest.mark.parametrize("case", HOSTILE_BODIES)
def test_hostile_bodies_are_400_and_store_nothing(
    database: Database, server: str, case: str
) -> None:
    body, message = HOSTILE_BODIES[case]
    response = post_raw(server, body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert stored(database) == 0


def test_brackets_inside_strings_are_not_nesting(database: Database, server: str) -> None:
    deep_text = json.dumps("[{" * 50_000 + '\\"' + "]}" * 50_000)
    response = post_raw(server, with_field(deep_text))
    assert response.status_code == 202
    assert stored(database) == 1


def test_nesting_at_the_cap_is_accepted(database: Database, server: str) -> None:
    # payload() itself is 1 level deep at "extra"; 63 more make 64.
    response = post_raw(server, with_field("[" * 63 + "]" * 63))
    assert response.status_code == 202
    assert stored(database) == 1


def test_the_router_caps_its_body_even_without_the_app_middleware(database: Database) -> None:
    with serving(database, max_body_bytes=4096) as url:
        big = post_raw(url, with_field('"' + "x" * 5000 + '"'))
        small = post_raw(url, json.dumps(payload()).encode())
    assert big.status_code == 413
    assert big.json() == {"error": "request body is over 4096 bytes"}
    assert small.status_code == 202
    assert stored(database) == 1
