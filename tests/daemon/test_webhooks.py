"""The webhook endpoint on a real server: the secret guards the inbox, redelivery stores nothing,
and a drained delivery makes its repo due at once."""

from __future__ import annotations

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
from tracker.inbox import drain
from tracker.pollstate import track

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


@pytest.fixture
def server(database: Database) -> Iterator[str]:
    app = FastAPI()
    app.include_router(create_webhook_router(database, secret=SECRET))
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
