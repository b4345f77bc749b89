"""``/api/v1/subscriptions``: create, read, replace and remove alert subscriptions over HTTP.

Every route wants ``Authorization: Bearer <token>``, compared in constant
time; a missing or wrong token, or a server with no token configured, gets
401 before the body is read, so nothing changes. The daemon passes the
tracker's document parser as ``parse`` (feeds never imports the tracker):
it is the validator, and its ``ValueError`` becomes 422 with its message,
which names the field; ``schema`` is the JSON Schema of the field table the
parser reads (tracker.alerts.fields), shown as the request body in OpenAPI.
``vet`` is the tracker's destination check (alerts go only to public
addresses or the operator's allow-list); it runs after ``parse`` on every
POST and PUT, off the event loop since it resolves host names, and its
``ValueError`` is a 422 as well. Webhook secrets go in and never come out:
every stored channel is answered redacted (``"secret": "********"``), and a
PUT that sends the mask back for an unchanged channel keeps the stored
secret, so a GET, edit, PUT round trip works without re-typing it. A
channel's ``secret_env`` (a variable of the server's environment) is
refused: that is the configuration file's feature, not an API caller's to
read. Reading, validating and redacting documents is
feeds.subscription_documents; the handlers here only route.

Errors answer FastAPI's ``{"detail": ...}``::

    401  no or wrong bearer token / no token configured on the server
    404  no active subscription of that name
    409  POST of a name an active subscription has
    413  body over MAX_BODY_BYTES
    422  body not UTF-8 JSON, not an object, or refused by ``parse`` or ``vet``
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Final, NoReturn

from fastapi import APIRouter, Depends, Header, HTTPException, Query, Request, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from feeds.osv import timestamp
from feeds.subscription_documents import (
    MAX_BODY_BYTES,
    Parse,
    SubscriptionDraft,
    Vet,
    draft,
    keep_secrets,
    read_body,
    redacted_document,
)
from storage import (
    Database,
    IntegrityConflict,
    InvalidRecord,
    NotFound,
    dead_letters,
    deliveries,
    get_subscription,
    put_subscription,
    remove_subscription,
    subscriptions,
    subscriptions_by_id,
)
from storage.records import Delivery, DeliveryStatus, JsonValue, Subscription

PREFIX: Final = "/api/v1/subscriptions"
DEAD_LETTERS_PATH: Final = "/api/v1/dead-letters"
TOKEN_HINT: Final = "set [server] api_token or NEURARCH_API_TOKEN"
ANY_OBJECT: Final[Mapping[str, object]] = {"type": "object"}


def request_body(schema: Mapping[str, object]) -> dict[str, Any]:
    """The OpenAPI request body of POST and PUT: a subscription document of ``schema``."""
    return {
        "requestBody": {
            "required": True,
            "description": "a subscription document",
            "content": {"application/json": {"schema": dict(schema)}},
        }
    }


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
    schema: Mapping[str, object] = ANY_OBJECT,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> APIRouter:
    """The subscriptions API and ``/api/v1/dead-letters``; with no ``token`` every call is 401."""
    api = APIRouter(tags=["subscriptions"], dependencies=[Depends(bearer_guard(token))])
    body = request_body(schema)

    @api.get(PREFIX)
    def list_subscriptions() -> dict[str, Any]:
        """Every active subscription, by name, channels redacted."""
        with database.read_session() as session:
            found = subscriptions(session)
        return {"subscriptions": [_answer(record, parse) for record in found]}

    @api.post(PREFIX, status_code=201, openapi_extra=body)
    async def create(request: Request, response: Response) -> dict[str, Any]:
        """Store a new subscription (a removed one's name may be used again)."""
        parsed = await run_in_threadpool(draft, parse, await read_body(request), vet)
        record = await run_in_threadpool(_create, database, parsed, clock())
        response.headers["Location"] = f"{PREFIX}/{record.name}"
        return _answer(record, parse)

    @api.get(PREFIX + "/{name}")
    def read(name: str) -> dict[str, Any]:
        """One active subscription, channels redacted."""
        with database.read_session() as session:
            return _answer(_active(session, name), parse)

    @api.put(PREFIX + "/{name}", openapi_extra=body)
    async def replace(name: str, request: Request) -> dict[str, Any]:
        """Replace what a subscription asks for; its alert history stays."""
        document = await read_body(request)
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


def _create(database: Database, parsed: SubscriptionDraft, now: datetime) -> Subscription:
    name = parsed.name
    try:
        with database.session() as session:
            existing = _stored(session, name)
            if existing is not None and existing.active:
                raise HTTPException(
                    409,
                    f"a subscription named {name!r} exists; PUT {PREFIX}/{name} "
                    "to replace it, or pick another name",
                )
            record, _ = put_subscription(session, name, parsed.columns(), now=now)
            return record
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
            parsed = draft(parse, keep_secrets(document, current), vet)
            # the name is stored (and active), so this replaces; created_at stays
            record, _ = put_subscription(session, name, parsed.columns(), now=current.created_at)
            return record
    except InvalidRecord as exc:
        raise HTTPException(422, str(exc)) from None


def _active(session: Session, name: str) -> Subscription:
    _storable(name)
    record = _stored(session, name)
    if record is None or not record.active:
        raise HTTPException(404, _missing(name))
    return record


def _stored(session: Session, name: str) -> Subscription | None:
    try:
        return get_subscription(session, name)
    except NotFound:
        return None


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


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else timestamp(moment)


def _missing(name: str) -> str:
    return f"no subscription is named {name!r}; GET {PREFIX} lists them"


def _unauthorized(detail: str) -> NoReturn:
    raise HTTPException(401, detail, headers={"WWW-Authenticate": "Bearer"})


__all__ = [
    "DEAD_LETTERS_PATH",
    "MAX_BODY_BYTES",
    "PREFIX",
    "bearer_guard",
    "create_subscriptions_router",
    "delivery_json",
    "request_body",
]
