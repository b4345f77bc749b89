"""``/api/v1/subscriptions``: create, read, replace and remove alert subscriptions over HTTP.

Every route wants ``Authorization: Bearer <token>``, compared in constant
time; a missing or wrong token, or a server with no token configured, gets
401 before the body is read, so nothing changes. The daemon passes the
tracker's document parser as ``parse`` (feeds never imports the tracker):
it is the validator, and its ``ValueError`` becomes 422 with its message,
which names the field. ``vet`` is the tracker's destination check (alerts
go only to public addresses or the operator's allow-list); it runs after
``parse`` on every POST and PUT, off the event loop since it resolves host
names, and its ``ValueError`` is a 422 as well. Webhook secrets go in and
never come out: every stored channel is answered redacted (``"secret":
"********"``), and a PUT that sends the mask back for an unchanged channel
keeps the stored secret, so a GET, edit, PUT round trip works without
re-typing it. A channel's
``secret_env`` (a variable of the server's environment) is refused: that is
the configuration file's feature, not an API caller's to read.

Errors answer FastAPI's ``{"detail": ...}``::

    401  no or wrong bearer token / no token configured on the server
    404  no active subscription of that name
    409  POST of a name an active subscription has
    413  body over MAX_BODY_BYTES
    422  body not UTF-8 JSON, not an object, or refused by ``parse`` or ``vet``
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Final, NoReturn, Protocol
from urllib.parse import urlsplit

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from feeds.osv import timestamp
from storage import (
    Database,
    IntegrityConflict,
    InvalidRecord,
    NotFound,
    add_subscription,
    dead_letters,
    deliveries,
    get_subscription,
    remove_subscription,
    subscriptions,
    subscriptions_by_id,
    update_subscription,
)
from storage.records import Delivery, DeliveryStatus, JsonValue, Severity, Subscription

PREFIX: Final = "/api/v1/subscriptions"
DEAD_LETTERS_PATH: Final = "/api/v1/dead-letters"
MAX_BODY_BYTES: Final = 64 * 1024
MASK: Final = "********"
TOKEN_HINT: Final = "set [server] api_token or NEURARCH_API_TOKEN"
_JSON_BODY: Final[dict[str, Any]] = {
    "requestBody": {
        "required": True,
        "description": "a subscription document (name, repos, method, batch, seq_len, cards, "
        "alert_on, min_severity, channels)",
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}


class ChannelDraft(Protocol):
    """A validated channel: its stored JSON form (with the real secret)."""

    def to_json(self) -> Mapping[str, JsonValue]: ...


class SubscriptionDraft(Protocol):
    """What ``parse`` hands back: a validated subscription, ready to store or show."""

    @property
    def name(self) -> str: ...
    @property
    def repos(self) -> Sequence[str]: ...
    @property
    def min_severity(self) -> Severity: ...
    @property
    def channels(self) -> Sequence[ChannelDraft]: ...
    def spec_json(self) -> Mapping[str, JsonValue]: ...
    def to_document(self, *, redact: bool = ...) -> Mapping[str, JsonValue]: ...


Parse = Callable[[Mapping[str, Any]], SubscriptionDraft]
Vet = Callable[[SubscriptionDraft], None]
"""Raises ValueError (naming the channel) if a draft's channels point where alerts may not go."""


def bearer_guard(token: str | None) -> Callable[[str | None], None]:
    """The dependency that refuses a request unless it carries ``token`` as a bearer token."""
    expected = token.encode("utf-8") if token else None

    def guard(authorization: Annotated[str | None, Header()] = None) -> None:
        if expected is None:
            _unauthorized(f"the subscriptions API is disabled on this server: {TOKEN_HINT}")
        if authorization is None:
            _unauthorized(
                "send Authorization: Bearer <token> with the server's api_token "
                f"({TOKEN_HINT} on the server)"
            )
        scheme, _, given = authorization.partition(" ")
        candidate = given.strip().encode("utf-8", "surrogateescape")
        if scheme.lower() != "bearer" or not hmac.compare_digest(candidate, expected):
            _unauthorized(
                "invalid API token: send Authorization: Bearer <token> with the server's "
                f"api_token ({TOKEN_HINT})"
            )

    return guard


def create_subscriptions_router(
    database: Database,
    *,
    token: str | None,
    parse: Parse,
    vet: Vet,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> APIRouter:
    """The subscriptions API and ``/api/v1/dead-letters``; with no ``token`` every call is 401."""
    api = APIRouter(tags=["subscriptions"], dependencies=[Depends(bearer_guard(token))])

    @api.get(PREFIX)
    def list_subscriptions() -> dict[str, Any]:
        """Every active subscription, by name, channels redacted."""
        with database.read_session() as session:
            found = subscriptions(session)
        return {"subscriptions": [_answer(record, parse) for record in found]}

    @api.post(PREFIX, status_code=201, openapi_extra=_JSON_BODY)
    async def create(request: Request, response: Response) -> dict[str, Any]:
        """Store a new subscription (a removed one's name may be used again)."""
        draft = await run_in_threadpool(_draft, parse, await _body(request), vet)
        record = await run_in_threadpool(_create, database, draft, clock())
        response.headers["Location"] = f"{PREFIX}/{record.name}"
        return _answer(record, parse)

    @api.get(PREFIX + "/{name}")
    def read(name: str) -> dict[str, Any]:
        """One active subscription, channels redacted."""
        with database.read_session() as session:
            return _answer(_active(session, name), parse)

    @api.put(PREFIX + "/{name}", openapi_extra=_JSON_BODY)
    async def replace(name: str, request: Request) -> dict[str, Any]:
        """Replace what a subscription asks for; its alert history stays."""
        document = await _body(request)
        record = await run_in_threadpool(_replace, database, name, document, parse, vet)
        return _answer(record, parse)

    @api.delete(PREFIX + "/{name}", status_code=204)
    def delete(name: str) -> Response:
        """Remove a subscription: no more alerts; its history stays in storage."""
        _storable(name)
        with database.session() as session:
            if not remove_subscription(session, name):
                raise HTTPException(404, _missing(name))
        return Response(status_code=204)

    @api.get(PREFIX + "/{name}/deliveries")
    def list_deliveries(
        name: str,
        status: Annotated[
            str | None, Query(description="pending, delivered or dead_letter")
        ] = None,
    ) -> dict[str, Any]:
        """A subscription's outbox rows in sequence order, optionally of one status."""
        wanted = _status(status)
        with database.read_session() as session:
            record = _active(session, name)
            rows = deliveries(session, record.id, status=wanted)
        return {"subscription": name, "deliveries": [delivery_json(d) for d in rows]}

    @api.get(DEAD_LETTERS_PATH)
    def list_dead_letters() -> dict[str, Any]:
        """Every alert given up on, oldest first, with the name of its subscription."""
        with database.read_session() as session:
            rows = dead_letters(session)
            owners = subscriptions_by_id(session, [d.subscription_id for d in rows])
        return {
            "dead_letters": [
                {"subscription": owners[d.subscription_id].name, **delivery_json(d)}
                for d in rows
                if d.subscription_id in owners
            ]
        }

    return api


def delivery_json(delivery: Delivery) -> dict[str, JsonValue]:
    """One outbox row as the API shows it."""
    return {
        "id": delivery.id,
        "sequence": delivery.sequence,
        "channel": delivery.channel,
        "event_key": delivery.event_key,
        "status": delivery.status.value,
        "attempts": delivery.attempts,
        "created_at": timestamp(delivery.created_at),
        "next_attempt_at": timestamp(delivery.next_attempt_at),
        "delivered_at": _time(delivery.delivered_at),
        "last_error": delivery.last_error,
        "advisory_id": delivery.advisory_id,
        "repo_id": delivery.repo_id,
        "sha": delivery.sha,
        "payload": dict(delivery.payload),
    }


def redacted_document(record: Subscription, parse: Parse) -> dict[str, JsonValue]:
    """The stored subscription as a document with its channels' secrets masked.

    The parser's own redaction is used (it also masks apprise credentials);
    a stored row the parser now refuses is masked here, channel URLs other
    than webhooks' included, rather than shown raw.
    """
    stored = _stored_document(record)
    try:
        return dict(parse(stored).to_document(redact=True))
    except ValueError:
        return {**stored, "channels": [_mask(channel) for channel in record.channels]}


def _answer(record: Subscription, parse: Parse) -> dict[str, Any]:
    return {
        "subscription": redacted_document(record, parse),
        "created_at": timestamp(record.created_at),
        "links": {
            "page": f"/subscriptions/{record.name}",
            "alerts": f"/subscriptions/{record.name}/alerts.atom",
            "deliveries": f"{PREFIX}/{record.name}/deliveries",
        },
    }


def _create(database: Database, draft: SubscriptionDraft, now: datetime) -> Subscription:
    fields = _fields(draft)
    try:
        with database.session() as session:
            try:
                existing = get_subscription(session, draft.name)
            except NotFound:
                return add_subscription(session, draft.name, created_at=now, **fields)
            if existing.active:
                raise HTTPException(
                    409,
                    f"a subscription named {draft.name!r} exists; PUT {PREFIX}/{draft.name} "
                    "to replace it, or pick another name",
                )
            return update_subscription(session, draft.name, **fields)
    except IntegrityConflict as exc:  # a concurrent POST of the same name won
        raise HTTPException(409, str(exc)) from None
    except InvalidRecord as exc:
        raise HTTPException(422, str(exc)) from None


def _replace(
    database: Database, name: str, document: dict[str, Any], parse: Parse, vet: Vet
) -> Subscription:
    given = document.setdefault("name", name)
    if given != name:
        raise HTTPException(
            422,
            f"name: the body names {given!r} but the path {name!r}; a subscription cannot "
            "be renamed (POST the new name, then DELETE the old one)",
        )
    try:
        with database.session() as session:
            current = _active(session, name)
            draft = _draft(parse, _keep_secrets(document, current), vet)
            return update_subscription(session, name, **_fields(draft))
    except InvalidRecord as exc:
        raise HTTPException(422, str(exc)) from None


def _fields(draft: SubscriptionDraft) -> dict[str, Any]:
    return {
        "repo_patterns": tuple(draft.repos),
        "spec": dict(draft.spec_json()),
        "channels": [dict(channel.to_json()) for channel in draft.channels],
        "min_severity": draft.min_severity,
    }


def _keep_secrets(document: dict[str, Any], current: Subscription) -> dict[str, Any]:
    """The masked secret of a channel whose type and url are unchanged is the stored one."""
    channels = document.get("channels")
    if not isinstance(channels, list):
        return document
    stored = {
        (c.get("type"), c.get("url")): c.get("secret")
        for c in current.channels
        if isinstance(c.get("secret"), str)
    }
    kept = []
    for channel in channels:
        key = (channel.get("type"), channel.get("url")) if isinstance(channel, dict) else None
        if key in stored and channel.get("secret") == MASK:
            channel = {**channel, "secret": stored[key]}
        kept.append(channel)
    return {**document, "channels": kept}


def _draft(parse: Parse, document: Mapping[str, Any], vet: Vet) -> SubscriptionDraft:
    channels = document.get("channels")
    for i, channel in enumerate(channels if isinstance(channels, list) else []):
        if isinstance(channel, dict) and "secret_env" in channel:
            # the server's environment is the operator's, not an API caller's to read
            raise HTTPException(
                422,
                f"channels[{i}]: secret_env names a variable of the server and is only "
                "read from the configuration file; send the secret itself",
            )
    try:
        draft = parse(document)
        vet(draft)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return draft


async def _body(request: Request) -> dict[str, Any]:
    """The JSON object of the body, read no further than MAX_BODY_BYTES."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise HTTPException(413, _too_large())
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise HTTPException(413, _too_large())
    try:
        document = json.loads(bytes(body).decode("utf-8"))
    except UnicodeDecodeError:
        raise HTTPException(422, "request body is not UTF-8 JSON") from None
    except json.JSONDecodeError as exc:
        raise HTTPException(422, f"request body is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise HTTPException(
            422,
            f"request body must be a JSON object (a subscription document), "
            f"not {type(document).__name__}",
        )
    return document


def _active(session: Session, name: str) -> Subscription:
    _storable(name)
    try:
        record = get_subscription(session, name)
    except NotFound:
        raise HTTPException(404, _missing(name)) from None
    if not record.active:
        raise HTTPException(404, _missing(name))
    return record


def _storable(name: str) -> None:
    """404 for a name no subscription can have, before PostgreSQL refuses its NUL as a 500."""
    if any(ord(ch) < 32 for ch in name):
        raise HTTPException(404, _missing(name))


def _status(text: str | None) -> DeliveryStatus | None:
    if text is None:
        return None
    try:
        return DeliveryStatus(text)
    except ValueError:
        choices = ", ".join(s.value for s in DeliveryStatus)
        raise HTTPException(422, f"status must be one of {choices}, not {text!r}") from None


def _stored_document(record: Subscription) -> dict[str, JsonValue]:
    return {
        "name": record.name,
        "repos": list(record.repo_patterns),
        **record.spec,
        "min_severity": record.min_severity.label,
        "channels": [dict(channel) for channel in record.channels],
    }


def _mask(channel: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    masked = dict(channel)
    if "secret" in masked:
        masked["secret"] = MASK
    url = masked.get("url")
    if masked.get("type") != "webhook" and isinstance(url, str):
        masked["url"] = f"{urlsplit(url).scheme or 'url'}://{MASK}"
    return masked


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else timestamp(moment)


def _missing(name: str) -> str:
    return f"no subscription is named {name!r}; GET {PREFIX} lists them"


def _too_large() -> str:
    return f"request body is over {MAX_BODY_BYTES} bytes; a subscription document is much smaller"


def _unauthorized(detail: str) -> NoReturn:
    raise HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


__all__ = [
    "DEAD_LETTERS_PATH",
    "MAX_BODY_BYTES",
    "PREFIX",
    "ChannelDraft",
    "Parse",
    "SubscriptionDraft",
    "Vet",
    "bearer_guard",
    "create_subscriptions_router",
    "delivery_json",
    "redacted_document",
]
