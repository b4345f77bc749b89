"""Every request body is bounded and parsed depth-safely, on real servers on loopback.

The whole app (create_app with the webhook and subscriptions routers) runs in
uvicorn; the 200 MB delivery goes to a server in its own process, so its
memory figure is the server's alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from feeds import PublishSettings, create_app
from feeds.plan_api import CONFIG_EXAMPLE
from feeds.subscriptions_api import create_subscriptions_router
from feeds.webhooks import PATH as WEBHOOK
from feeds.webhooks import create_webhook_router
from storage import Database, open_database
from storage.models import WebhookEventRow
from tests.feeds import rawhttp
from tests.feeds.conftest import ServerThread
from tests.fixtures.receiver import free_port
from tracker.alerts.egress import Egress
from tracker.alerts.spec import parse_subscription

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hook-secret"
TOKEN = "api-token-for-the-tests-0123456789"
MIB = 1024 * 1024
DEEP_ARRAYS = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECTS = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
HEADERS = {
    "X-Webhook-Secret": SECRET,
    "Authorization": f"Bearer {TOKEN}",
    "Content-Type": "application/json",
}
# Every route that takes a body, with the error shape its path answers in.
BODY_ROUTES = [
    ("POST", "/v1/query", "osv"),
    ("POST", "/v1/querybatch", "osv"),
    ("POST", "/api/v1/plan", "detail"),
    ("POST", WEBHOOK, "error"),
    ("POST", "/api/v1/subscriptions", "detail"),
    ("PUT", "/api/v1/subscriptions/lora-on-t4", "detail"),
]


def delivery(repo: str = "acme/model", pad: str = "") -> dict[str, Any]:
    """A Hub webhook (version 3) for a push to ``repo``."""
    return {
        "event": {"action": "update", "scope": "repo.content"},
        "repo": {"type": "model", "name": repo, "id": "64f0", "headSha": "a" * 40},
        "updatedRefs": [{"ref": "refs/heads/main", "oldSha": "b" * 40, "newSha": "a" * 40}],
        "pad": pad,
    }


def message_of(response: httpx.Response, shape: str) -> str:
    """The refusal's message, after checking it has the shape its path promises."""
    document = response.json()
    if shape == "osv":
        assert set(document) == {"code", "message"}
        assert document["code"] == (8 if response.status_code == 413 else 3)
        return str(document["message"])
    assert set(document) == {shape}
    return str(document[shape])


def stored_events(database: Database) -> int:
    with database.read_session() as session:
        return int(session.scalar(select(func.count()).select_from(WebhookEventRow)) or 0)


def serve(database: Database, **settings: Any) -> ServerThread:
    """The whole app with the webhook and subscriptions routers, ``settings`` overriding."""
    server = ServerThread()
    routers = [
        create_webhook_router(database, secret=SECRET),
        create_subscriptions_router(
            database, token=TOKEN, parse=parse_subscription, vet=Egress().vet
        ),
    ]
    published = PublishSettings(base_url=server.url, **settings)
    return server.mount(create_app(database, settings=published, routers=routers))


@pytest.fixture
def site(database: Database) -> Iterator[ServerThread]:
    with serve(database) as server:
        yield server


@pytest.mark.parametrize(("method", "path", "shape"), BODY_ROUTES)
def test_deep_nesting_is_400_on_every_body_route(
    database: Database, site: ServerThread, method: str, path: str, shape: str
) -> None:
    for body in (DEEP_ARRAYS, DEEP_OBJECTS):
        response = httpx.request(method, site.url + path, content=body, headers=HEADERS)
        assert response.status_code == 400, response.text
        assert message_of(response, shape) == (
            "JSON body nests 100000 levels deep; at most 64 are accepted"
        )
    assert stored_events(database) == 0


@pytest.mark.parametrize(("method", "path", "shape"), BODY_ROUTES)
def test_content_length_over_the_cap_is_413_before_any_body_is_sent(
    site: ServerThread, method: str, path: str, shape: str
) -> None:
    answer = rawhttp.declare(site.port, path, HEADERS, 200_000_000, method=method)
    assert answer.status == 413
    assert answer.seconds < 1.0
    expected = (
        "config.json body is over 1000000 bytes"
        if path == "/api/v1/plan"
        else f"request body is over {MIB} bytes"
    )
    assert message_of(_response(answer), shape) == expected


@pytest.mark.parametrize(("method", "path", "shape"), BODY_ROUTES)
def test_a_chunked_body_is_cut_off_at_the_cap(
    site: ServerThread, method: str, path: str, shape: str
) -> None:
    answer = rawhttp.stream(site.port, path, HEADERS, b'{"pad": "', 50 * MIB, method=method)
    assert answer.status == 413
    assert answer.sent < 50 * MIB, "the server answered before the body ended"
    assert " body is over " in message_of(_response(answer), shape)


def _response(answer: rawhttp.Answer) -> httpx.Response:
    return httpx.Response(answer.status, content=answer.body)


def test_brackets_inside_strings_are_not_nesting(database: Database, site: ServerThread) -> None:
    brackets = '[{"' * 30_000 + '\\"\\\\' + "]}" * 30_000
    query = httpx.post(f"{site.url}/v1/query", json={"commit": brackets})
    assert (query.status_code, query.json()) == (200, {})
    plan = httpx.post(f"{site.url}/api/v1/plan", json={**CONFIG_EXAMPLE, "note": brackets})
    assert plan.status_code == 200, plan.text
    hook = httpx.post(site.url + WEBHOOK, json=delivery(pad=brackets), headers=HEADERS)
    assert hook.status_code == 202, hook.text
    assert stored_events(database) == 1


def test_a_full_batch_of_the_longest_queries_fits_under_the_default_cap(
    site: ServerThread,
) -> None:
    package = {"ecosystem": "GIT", "name": "https://huggingface.co/" + "o" * 40 + "/" + "n" * 55}
    batch = {"queries": [{"package": package, "commit": "b" * 40}] * 1000}
    body = json.dumps(batch).encode()
    assert 200_000 < len(body) < MIB // 4
    response = httpx.post(f"{site.url}/v1/querybatch", content=body, headers=HEADERS, timeout=30)
    assert response.status_code == 200, response.text
    assert response.json() == {"results": [{}] * 1000}


def test_caps_and_depth_come_from_the_settings(database: Database) -> None:
    batch = {"queries": [{"commit": "c" * 40}] * 1000}
    limits = serve(
        database, max_body_bytes=2048, route_body_bytes=(("/v1/querybatch", MIB),), max_json_depth=3
    )
    with limits as site:
        small = httpx.post(f"{site.url}/v1/query", json={"commit": "c" * 3000})
        large = httpx.post(f"{site.url}/v1/querybatch", json=batch)
        deep = httpx.post(f"{site.url}/v1/query", json={"package": {"name": [["x"]]}})
    assert (small.status_code, small.json()["message"]) == (413, "request body is over 2048 bytes")
    assert large.status_code == 200
    assert (deep.status_code, deep.json()["message"]) == (
        400,
        "JSON body nests 4 levels deep; at most 3 are accepted",
    )


def test_requests_without_a_body_and_normal_deliveries_pass(
    database: Database, site: ServerThread
) -> None:
    assert httpx.get(f"{site.url}/").status_code == 200
    assert httpx.get(f"{site.url}/feeds/all.atom").status_code == 200
    response = httpx.post(site.url + WEBHOOK, json=delivery(), headers=HEADERS)
    assert response.status_code == 202 and response.json()["duplicate"] is False
    assert stored_events(database) == 1


@pytest.mark.parametrize(
    "repo", ["../../etc", "a/b/c", "acme/x\x00y", "acme/" + "n" * 10_000, "<script>x</script>"]
)
def test_hostile_repo_names_are_refused_by_the_whole_app(
    database: Database, site: ServerThread, repo: str
) -> None:
    response = httpx.post(site.url + WEBHOOK, json=delivery(repo), headers=HEADERS)
    assert response.status_code == 400
    assert "repo.name: repo id" in response.json()["error"]
    assert stored_events(database) == 0


@dataclass(frozen=True)
class AppProcess:
    port: int
    pid: int
    database: Database


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS (now) and VmHWM (the peak so far) of a process, in MiB."""
    figures: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            figures[name] = int(value.split()[0]) / 1024
    return figures


@pytest.fixture(scope="module")
def app_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppProcess]:
    url = f"sqlite:///{tmp_path_factory.mktemp('limits') / 'app.db'}"
    port = free_port()
    command = [sys.executable, "-m", "tests.feeds.app_process", url, str(port), SECRET]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "the app process exited"
            assert time.monotonic() < deadline, "the app process did not start"
            try:
                if httpx.get(f"http://127.0.0.1:{port}/index.json").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        database = open_database(url)
        yield AppProcess(port, process.pid, database)
        database.close()
    finally:
        process.terminate()
        process.wait(10)


def test_a_200_mb_chunked_delivery_is_413_and_the_server_stays_small(
    app_process: AppProcess,
) -> None:
    url = f"http://127.0.0.1:{app_process.port}{WEBHOOK}"
    # Warm every path the refusal takes (routes, database, JSON) before measuring.
    assert httpx.post(url, json=delivery(), headers=HEADERS).status_code == 202
    before = memory_mib(app_process.pid)
    prefix = json.dumps(delivery())[:-3].encode()  # the body runs on inside "pad"
    answer = rawhttp.stream(app_process.port, WEBHOOK, HEADERS, prefix, 200_000_000)
    after = memory_mib(app_process.pid)
    assert answer.status == 413
    assert json.loads(answer.body) == {"error": f"request body is over {MIB} bytes"}
    assert answer.sent < 64 * MIB
    assert after["VmHWM"] - before["VmHWM"] < 20
    assert after["VmRSS"] - before["VmRSS"] < 20
    assert stored_events(app_process.database) == 1
    declared = rawhttp.declare(app_process.port, WEBHOOK, HEADERS, 200_000_000)
    assert (declared.status, declared.seconds < 1.0) == (413, True)
