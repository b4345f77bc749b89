"""The subscriptions API over a real server, on SQLite and PostgreSQL, with the tracker's parser.

The router gets the tracker's destination check as ``vet`` with no allow-list,
as the daemon builds it by default: channels must point at public addresses.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from feeds import PublishSettings, create_app
from feeds.subscriptions_api import MAX_BODY_BYTES, create_subscriptions_router
from storage import (
    Database,
    enqueue_delivery,
    get_subscription,
    record_delivery_failure,
    subscriptions,
)
from tests.feeds.conftest import ServerThread
from tests.fixtures.hostile_hosts import REFUSED_HOSTS
from tracker.alerts.egress import AllowList, Egress
from tracker.alerts.spec import parse_subscription

TOKEN = "api-token-for-the-tests-0123456789"
SECRET = "whsec_bmV1cmFyY2gtdGVzdC1zZWNyZXQta2V5"
APPRISE = "discord://4815162342/very-secret-apprise-token"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BASE = "/api/v1/subscriptions"


def document(name: str = "lora-on-t4", **override: Any) -> dict[str, Any]:
    return {
        "name": name,
        "repos": ["meta-llama/*", "mistralai/Mistral-7B-v0.1"],
        "method": "lora",
        "batch": 8,
        "seq_len": 512,
        "cards": ["T4", "A10G"],
        "alert_on": ["fit", "chat_template"],
        "min_severity": "moderate",
        "channels": [
            {"type": "webhook", "url": "https://hooks.example/alerts", "secret": SECRET},
            {"type": "apprise", "url": APPRISE},
        ],
        **override,
    }


def serve(database: Database, token: str | None) -> ServerThread:
    server = ServerThread()
    router = create_subscriptions_router(
        database, token=token, parse=parse_subscription, vet=Egress().vet, clock=lambda: NOW
    )
    app = create_app(database, settings=PublishSettings(base_url=server.url), routers=[router])
    return server.mount(app)


@pytest.fixture
def client(database: Database) -> Iterator[httpx.Client]:
    with (
        serve(database, TOKEN) as server,
        httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30
        ) as client,
    ):
        yield client


def stored(database: Database) -> list[tuple[Any, ...]]:
    """Everything storage holds of every subscription, removed ones included."""
    with database.read_session() as session:
        return [
            (s.name, s.repo_patterns, dict(s.spec), s.channels, s.min_severity, s.active)
            for s in subscriptions(session, include_inactive=True)
        ]


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong-token-wrong-token-00", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"],
)
def test_requests_without_the_token_get_401_and_change_nothing(
    client: httpx.Client, database: Database, authorization: str | None
) -> None:
    assert client.post(BASE, json=document()).status_code == 201
    before = stored(database)
    headers = {} if authorization is None else {"Authorization": authorization}
    calls = [
        ("POST", BASE, document("another")),
        ("PUT", f"{BASE}/lora-on-t4", document(batch=1)),
        ("DELETE", f"{BASE}/lora-on-t4", None),
        ("GET", BASE, None),
        ("GET", f"{BASE}/lora-on-t4/deliveries", None),
        ("GET", "/api/v1/dead-letters", None),
    ]
    with httpx.Client(base_url=str(client.base_url), headers=headers) as anonymous:
        for method, path, body in calls:
            response = anonymous.request(method, path, json=body)
            assert response.status_code == 401, (method, path, response.text)
            assert response.headers["www-authenticate"] == "Bearer"
            assert "api_token" in response.json()["detail"]
            assert SECRET not in response.text
    assert stored(database) == before


def test_a_server_without_a_token_refuses_everyone_and_says_how_to_set_one(
    database: Database,
) -> None:
    with serve(database, None) as server, httpx.Client(base_url=server.url) as anonymous:
        for headers in ({"Authorization": f"Bearer {TOKEN}"}, {"Authorization": "Bearer"}, {}):
            response = anonymous.post(BASE, json=document(), headers=headers)
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["detail"] == (
                "the subscriptions API is disabled on this server: "
                "set [server] api_token or NEURARCH_API_TOKEN"
            )
    assert stored(database) == []


def test_create_read_replace_delete_round_trip(client: httpx.Client, database: Database) -> None:
    created = client.post(BASE, json=document())
    assert created.status_code == 201, created.text
    assert created.headers["location"] == f"{BASE}/lora-on-t4"
    body = created.json()
    assert body["created_at"] == "2026-03-01T12:00:00Z"
    assert body["links"]["alerts"] == "/subscriptions/lora-on-t4/alerts.atom"
    shown = body["subscription"]
    assert shown["repos"] == ["meta-llama/*", "mistralai/Mistral-7B-v0.1"]
    assert (shown["method"], shown["batch"], shown["cards"]) == ("lora", 8, ["T4", "A10G"])
    assert shown["alert_on"] == ["fit", "chat_template"] and shown["min_severity"] == "moderate"
    assert client.get(f"{BASE}/lora-on-t4").json() == body
    assert [s["subscription"]["name"] for s in client.get(BASE).json()["subscriptions"]] == [
        "lora-on-t4"
    ]

    # what a GET answers, edited and sent back: the masked secret means "keep the stored one"
    edited = {**shown, "batch": 2, "cards": ["L4"], "channels": shown["channels"][:1]}
    replaced = client.put(f"{BASE}/lora-on-t4", json=edited)
    assert replaced.status_code == 200, replaced.text
    assert replaced.json()["subscription"]["batch"] == 2
    assert replaced.json()["subscription"]["cards"] == ["L4"]
    with database.read_session() as session:
        record = get_subscription(session, "lora-on-t4")
    assert record.spec["batch"] == 2 and record.spec["cards"] == ["L4"]
    assert [dict(c) for c in record.channels] == [
        {"type": "webhook", "url": "https://hooks.example/alerts", "secret": SECRET}
    ]

    assert client.delete(f"{BASE}/lora-on-t4").status_code == 204
    assert client.get(f"{BASE}/lora-on-t4").status_code == 404
    assert client.get(BASE).json() == {"subscriptions": []}
    assert client.delete(f"{BASE}/lora-on-t4").status_code == 404
    assert client.put(f"{BASE}/lora-on-t4", json=document()).status_code == 404
    # a removed subscription's name is free again
    again = client.post(BASE, json=document(batch=4))
    assert again.status_code == 201 and again.json()["subscription"]["batch"] == 4


def test_a_taken_name_is_a_conflict_and_changes_nothing(
    client: httpx.Client, database: Database
) -> None:
    assert client.post(BASE, json=document()).status_code == 201
    before = stored(database)
    conflict = client.post(BASE, json=document(batch=1))
    assert conflict.status_code == 409
    assert conflict.json()["detail"].startswith("a subscription named 'lora-on-t4' exists; PUT")
    assert stored(database) == before


def test_unknown_names_are_404(client: httpx.Client) -> None:
    for method, path in (
        ("GET", f"{BASE}/nobody"),
        ("DELETE", f"{BASE}/nobody"),
        ("GET", f"{BASE}/nobody/deliveries"),
    ):
        response = client.request(method, path)
        assert response.status_code == 404
        assert response.json()["detail"] == (
            f"no subscription is named 'nobody'; GET {BASE} lists them"
        )
    assert client.put(f"{BASE}/nobody", json=document("nobody")).status_code == 404
    for method in ("GET", "DELETE", "PUT"):  # PostgreSQL would refuse the NUL as a 500
        body = document("a\x00b") if method == "PUT" else None
        assert client.request(method, f"{BASE}/a%00b", json=body).status_code == 404


@pytest.mark.parametrize(
    ("body", "detail"),
    [
        (document(batch="eight"), "subscription 'lora-on-t4': batch must be an integer"),
        (document(cards=["Nope"]), "subscription 'lora-on-t4': cards: unknown card 'Nope'"),
        (document(colour="red"), "subscription: unknown field 'colour'"),
        ({"name": "x", "repos": "noslash"}, "subscription 'x': repos entry 'noslash' must be"),
        (
            document(channels=[{"type": "webhook", "url": "https://h.example/"}]),
            "subscription 'lora-on-t4': channels[0]: a webhook needs a secret",
        ),
        (
            document(
                channels=[{"type": "webhook", "url": "https://h.example/", "secret_env": "HOME"}]
            ),
            "channels[0]: secret_env names a variable of the server",
        ),
        (b"{not json", "request body is not valid JSON: Expecting property name"),
        (b"\xff\xfe{}", "request body is not UTF-8 JSON"),
        (b"[1, 2]", "request body must be a JSON object (a subscription document), not list"),
    ],
)
def test_refused_documents_are_422_naming_the_field(
    client: httpx.Client, database: Database, body: dict[str, Any] | bytes, detail: str
) -> None:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    response = client.post(BASE, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["detail"].startswith(detail)
    assert stored(database) == []


def test_put_cannot_rename_and_oversized_bodies_are_413(
    client: httpx.Client, database: Database
) -> None:
    assert client.post(BASE, json=document()).status_code == 201
    before = stored(database)
    renamed = client.put(f"{BASE}/lora-on-t4", json=document("other"))
    assert renamed.status_code == 422
    assert renamed.json()["detail"].startswith("name: the body names 'other'")
    huge = json.dumps(document(repos=["org/x"] * 10_000)).encode()
    assert len(huge) > MAX_BODY_BYTES
    for method, path in (("POST", BASE), ("PUT", f"{BASE}/lora-on-t4")):
        response = client.request(method, path, content=huge)
        assert response.status_code == 413
        assert response.json()["detail"].startswith(f"request body is over {MAX_BODY_BYTES}")
    chunked = client.post(BASE, content=iter([huge[:40_000], huge[40_000:]]))
    assert chunked.status_code == 413
    assert stored(database) == before


def test_secrets_and_apprise_credentials_never_come_back(
    client: httpx.Client, database: Database
) -> None:
    answers = [client.post(BASE, json=document())]
    answers.append(client.put(f"{BASE}/lora-on-t4", json=document(batch=2)))
    answers += [client.get(BASE), client.get(f"{BASE}/lora-on-t4")]
    for answer in answers:
        assert answer.status_code in (200, 201)
        assert SECRET not in answer.text and "very-secret-apprise-token" not in answer.text
    channels = answers[-1].json()["subscription"]["channels"]
    assert channels == [
        {"type": "webhook", "url": "https://hooks.example/alerts", "secret": "********"},
        {"type": "apprise", "url": "discord://********"},
    ]
    with database.read_session() as session:
        record = get_subscription(session, "lora-on-t4")
    assert record.channels[0]["secret"] == SECRET and record.channels[1]["url"] == APPRISE


def test_dead_letters_are_listed_with_their_subscription(
    client: httpx.Client, database: Database
) -> None:
    assert client.post(BASE, json=document()).status_code == 201
    with database.session() as session:
        subscription = get_subscription(session, "lora-on-t4")
        payload = {"summary": "LoRA r=16 no longer fits T4", "repo_id": "meta-llama/x"}
        dead = enqueue_delivery(session, subscription.id, "webhook:0", "e1", payload, now=NOW)
        pending = enqueue_delivery(session, subscription.id, "feed", "e1", payload, now=NOW)
        assert dead is not None and pending is not None
        record_delivery_failure(session, dead.id, "HTTP 503 from receiver", retry_at=None)

    letters = client.get("/api/v1/dead-letters").json()["dead_letters"]
    assert len(letters) == 1
    letter = letters[0]
    assert letter["subscription"] == "lora-on-t4" and letter["channel"] == "webhook:0"
    assert letter["status"] == "dead_letter" and letter["last_error"] == "HTTP 503 from receiver"
    assert letter["payload"]["summary"] == "LoRA r=16 no longer fits T4"
    assert letter["created_at"] == "2026-03-01T12:00:00Z"

    url = f"{BASE}/lora-on-t4/deliveries"
    every = client.get(url).json()
    assert every["subscription"] == "lora-on-t4"
    assert [(d["channel"], d["status"]) for d in every["deliveries"]] == [
        ("webhook:0", "dead_letter"),
        ("feed", "pending"),
    ]
    only_dead = client.get(url, params={"status": "dead_letter"}).json()["deliveries"]
    assert [d["id"] for d in only_dead] == [dead.id]
    assert [
        d["id"] for d in client.get(url, params={"status": "pending"}).json()["deliveries"]
    ] == [pending.id]
    assert client.get(url, params={"status": "delivered"}).json()["deliveries"] == []
    bogus = client.get(url, params={"status": "lost"})
    assert bogus.status_code == 422
    assert (
        bogus.json()["detail"]
        == "status must be one of pending, delivered, dead_letter, not 'lost'"
    )


def test_the_openapi_document_lists_the_subscription_paths(client: httpx.Client) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert {"get", "post"} <= set(paths[BASE])
    assert {"get", "put", "delete"} <= set(paths[BASE + "/{name}"])
    assert "requestBody" in paths[BASE]["post"]
    assert "/api/v1/dead-letters" in paths and "/subscriptions/{name}/alerts.atom" in paths


def test_every_internal_host_is_422_on_post_and_put(
    client: httpx.Client, database: Database
) -> None:
    """POST refuses each host as a webhook and as an apprise URL; PUT (the same vet) as a webhook."""
    assert client.post(BASE, json=document()).status_code == 201
    before = stored(database)
    outcomes = []
    for host, words in REFUSED_HOSTS:
        webhook = {"type": "webhook", "url": f"https://{host}/alerts", "secret": SECRET}
        apprise = {"type": "apprise", "url": f"jsons://{host}/alerts"}
        answers = [
            client.post(BASE, json=document("other", channels=[webhook])),
            client.post(BASE, json=document("other", channels=[apprise])),
            client.put(f"{BASE}/lora-on-t4", json=document(channels=[webhook])),
        ]
        details = [answer.json()["detail"] for answer in answers]
        outcomes.append(
            (
                host,
                [answer.status_code for answer in answers],
                all(d.startswith("subscription ") and words in d for d in details),
            )
        )
    assert outcomes == [(host, [422, 422, 422], True) for host, _ in REFUSED_HOSTS]
    assert stored(database) == before


def test_a_loopback_receiver_the_allow_list_names_is_accepted(database: Database) -> None:
    server = ServerThread()
    allow = Egress(AllowList.parse(["127.0.0.1:9100"]))
    router = create_subscriptions_router(
        database, token=TOKEN, parse=parse_subscription, vet=allow.vet, clock=lambda: NOW
    )
    app = create_app(database, settings=PublishSettings(base_url=server.url), routers=[router])
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with server.mount(app) as running, httpx.Client(base_url=running.url, headers=headers) as api:
        for port, status in ((9101, 422), (9100, 201)):
            hook = {"type": "webhook", "url": f"http://127.0.0.1:{port}/in", "secret": SECRET}
            answer = api.post(BASE, json=document(channels=[hook]))
            assert answer.status_code == status, answer.text
