"""The web process's doors: the plan API in workers with budgets, read deadlines, OSV content types.

Each test tries one way an anonymous caller could stall or break the web
process (nothing upstream or anonymous may blind, stall, bloat or inject it),
on a real uvicorn server on loopback with the app's own launch settings
(``feeds.serving.server_config``).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn

from feeds import PublishSettings, create_app
from feeds.plan_api import CONFIG_EXAMPLE
from feeds.serving import server_config
from storage import open_database
from tests.feeds.rawhttp import read_answer

HEAVY = {**CONFIG_EXAMPLE, "num_hidden_layers": 10000}


class Served:
    """The app on a free loopback port, served with ``server_config`` in a thread."""

    def __init__(self, settings: PublishSettings, database_path: Path, header_seconds: float):
        self.database = open_database(f"sqlite:///{database_path}")
        self.database.migrate()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        app = create_app(self.database, settings=settings)
        config = server_config(app, port=self.port, header_seconds=header_seconds)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "uvicorn did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()
        self.database.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    settings = PublishSettings(
        accuracy=None,
        plan_rate="6/minute",
        plan_workers=1,
        plan_queue=0,
        max_plan_response_bytes=1024 * 1024,
        body_read_seconds=1.0,
    )
    site = Served(settings, tmp_path_factory.mktemp("doors") / "site.db", header_seconds=1.0)
    yield site
    site.close()


def post_plan(url: str, body: bytes, client: str = "127.0.0.1") -> httpx.Response:
    """POST /api/v1/plan from ``client`` (a loopback address of its own: its own rate)."""
    transport = httpx.HTTPTransport(local_address=client)
    with httpx.Client(transport=transport, timeout=30) as http:
        return http.post(
            f"{url}/api/v1/plan", content=body, headers={"content-type": "application/json"}
        )


def test_plan_refuses_huge_integers_and_nan_with_400(served: Served) -> None:
    digits = b'{"num_hidden_layers": ' + b"9" * 5000 + b"}"
    answer = post_plan(served.url, digits, "127.0.0.2")
    assert answer.status_code == 400, answer.text
    assert "integer of 5,000 digits (at most 64)" in answer.json()["detail"]
    nan = post_plan(served.url, b'{"num_hidden_layers": NaN}', "127.0.0.2")
    assert nan.status_code == 400
    assert "NaN is not a JSON number" in nan.json()["detail"]


def test_plan_over_the_response_budget_is_422_and_never_sent(served: Served) -> None:
    answer = post_plan(served.url, json.dumps(HEAVY).encode(), "127.0.0.3")
    assert answer.status_code == 422, answer.status_code
    assert len(answer.content) < 1000
    assert "over the 1,048,576-byte response budget" in answer.json()["detail"]


def test_plan_still_answers_an_ordinary_config(served: Served) -> None:
    answer = post_plan(served.url, json.dumps(CONFIG_EXAMPLE).encode(), "127.0.0.4")
    assert answer.status_code == 200
    assert answer.json()["parameters"]["total"] > 1_000_000_000


def test_plan_rate_per_client_address_is_429_with_retry_after(served: Served) -> None:
    body = json.dumps(CONFIG_EXAMPLE).encode()
    statuses = [post_plan(served.url, body, "127.0.0.5").status_code for _ in range(7)]
    assert statuses[:6] == [200] * 6 and statuses[6] == 429
    refused = post_plan(served.url, body, "127.0.0.5")
    assert int(refused.headers["retry-after"]) >= 1
    assert "plan requests from 127.0.0.5" in refused.json()["detail"]
    assert post_plan(served.url, body, "127.0.0.6").status_code == 200  # another caller


def test_plan_does_not_hold_the_event_loop(served: Served) -> None:
    """While a worker computes a heavy plan, the app still answers at once."""
    done = threading.Event()

    def heavy() -> None:
        post_plan(served.url, json.dumps(HEAVY).encode(), "127.0.0.7")
        done.set()

    thread = threading.Thread(target=heavy)
    thread.start()
    worst = 0.0
    while not done.is_set():
        started = time.perf_counter()
        assert httpx.get(f"{served.url}/index.json", timeout=10).status_code == 200
        worst = max(worst, time.perf_counter() - started)
    thread.join()
    assert worst < 0.5, worst


def test_silent_and_trickling_headers_are_closed_at_the_deadline(served: Served) -> None:
    for sent in (b"", b"GET /index.json HTTP/1.1\r\nHost: x\r\n"):
        with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
            sock.sendall(sent)
            started = time.monotonic()
            assert sock.recv(1024) == b""  # closed by the server, no answer
            assert 0.5 < time.monotonic() - started < 5


def test_a_body_not_sent_in_time_is_408(served: Served) -> None:
    with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
        sock.sendall(
            b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        started = time.monotonic()
        answer = read_answer(sock, timeout=10)  # head and body may come in two segments
        assert answer.startswith(b"HTTP/1.1 408"), answer
        assert b"not received within 1 s" in answer
        assert time.monotonic() - started < 5


def test_osv_query_accepts_json_under_curls_form_content_type(served: Served) -> None:
    body = json.dumps({"commit": "a" * 40})
    for content_type in ("application/x-www-form-urlencoded", "text/plain", None):
        headers = {} if content_type is None else {"content-type": content_type}
        answer = httpx.post(f"{served.url}/v1/query", content=body, headers=headers)
        assert (answer.status_code, answer.json()) == (200, {}), content_type
    bad = httpx.post(
        f"{served.url}/v1/query",
        content=b"commit=abc",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert bad.status_code == 400 and bad.json()["code"] == 3


def test_openapi_documents_the_400_and_404_answers(served: Served) -> None:
    paths = httpx.get(f"{served.url}/openapi.json").json()["paths"]
    expected = {
        ("post", "/v1/query"): {"400", "413"},
        ("get", "/v1/vulns/{vuln_id}"): {"404"},
        ("get", "/models/{org}/{name}/feed.{kind}"): {"400", "404"},
        ("get", "/feeds/all.{kind}"): {"400"},
        ("get", "/models/{org}/{name}"): {"404"},
        ("get", "/models/{org}/{name}/badge.json"): {"404"},
        ("get", "/advisories/{advisory_id}"): {"404"},
        ("post", "/api/v1/plan"): {"400", "413", "422", "429", "503"},
    }
    for (method, path), statuses in expected.items():
        assert statuses <= set(paths[path][method]["responses"]), (method, path)
