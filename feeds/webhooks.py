"""``POST /webhooks/huggingface``: Hub webhook deliveries into the inbox table, nothing more.

The Hub sends its secret verbatim in ``X-Webhook-Secret`` (no signature), or,
as its documentation allows, in the URL's query (``?secret=``) for a webhook
whose URL carries it; the header wins when both are present. It is compared
in constant time, and a missing or wrong secret gets 401 with nothing stored. An accepted delivery is written to ``webhook_events``
under a key derived from what it says (event, repo, head sha, updated refs),
so a redelivery or a replay from the Hub's activity tab stores nothing new;
then the endpoint answers 202 at once. The tracker drains the inbox: a
delivery answered 2xx survives the daemon dying right after. ``headSha`` is
read from the raw JSON (huggingface_hub's own payload model drops it).

Nothing hostile reaches the inbox: the body is read no further than
``max_body_bytes`` (413), parsed with ``feeds.limits.parse_json`` (400 for
JSON nested past ``max_json_depth``, NaN/Infinity, bad UTF-8), and the repo
names it carries (``repo.name``, ``movedTo.name``) must pass the Hub's own
naming rule, ``storage.repo_id`` (400), and every string must be
text (no NUL, no lone surrogate). The app's
``BodyLimits`` middleware applies the same caps before this router runs;
the router keeps them so it is safe mounted on its own.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from feeds.limits import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_JSON_DEPTH,
    RequestRefused,
    parse_json,
    read_body,
)
from storage import Database, InvalidRecord, InvalidRepoId, RepoId, record_webhook_event, repo_id

PATH = "/webhooks/huggingface"


class WebhookEvent(BaseModel):
    model_config = ConfigDict(extra="allow")
    action: str
    scope: str


class WebhookRepo(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    type: str = "model"
    name: str
    id: str | None = None
    private: bool | None = None
    head_sha: str | None = Field(default=None, alias="headSha")


class UpdatedRef(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    ref: str
    old_sha: str | None = Field(default=None, alias="oldSha")
    new_sha: str | None = Field(default=None, alias="newSha")


class MovedTo(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str


class WebhookPayload(BaseModel):
    """The fields of a Hub webhook (version 3) the tracker acts on."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    event: WebhookEvent
    repo: WebhookRepo
    updated_refs: list[UpdatedRef] = Field(default_factory=list, alias="updatedRefs")
    moved_to: MovedTo | None = Field(default=None, alias="movedTo")
    updated_config: dict[str, Any] | None = Field(default=None, alias="updatedConfig")

    def delivery_key(self) -> str:
        """Same event, same key: what makes a redelivery a no-op."""
        identity = {
            "action": self.event.action,
            "scope": self.event.scope,
            "repo": self.repo.id or self.repo.name,
            "head": self.repo.head_sha,
            "refs": sorted((r.ref, r.old_sha or "", r.new_sha or "") for r in self.updated_refs),
            "moved": self.moved_to.name if self.moved_to else None,
            "config": self.updated_config,
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    def check_names(self) -> RepoId:
        """``repo.name`` as a RepoId; InvalidRepoId (naming the field) for any name the Hub refuses."""
        named = [("repo.name", self.repo.name)]
        if self.moved_to is not None:
            named.append(("movedTo.name", self.moved_to.name))
        checked = []
        for field, name in named:
            try:
                checked.append(repo_id(name))
            except InvalidRepoId as exc:
                raise InvalidRepoId(f"{field}: {exc}") from None
        return checked[0]


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(status_code=status, content={"error": message})


def create_webhook_router(
    database: Database,
    *,
    secret: str | None,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH,
) -> APIRouter:
    """The webhook endpoint; with no secret configured every delivery is refused (401)."""
    router = APIRouter(tags=["webhooks"])
    expected = secret.encode("ascii") if secret else None

    @router.post(PATH, status_code=202, response_model=None)
    async def receive(
        request: Request,
        x_webhook_secret: str | None = Header(default=None),
    ) -> dict[str, Any] | JSONResponse:
        if expected is None:
            return _error(401, "webhooks are disabled: no server.webhook_secret is configured")
        sent = x_webhook_secret
        if sent is None:
            sent = request.query_params.get("secret")
        if sent is None:
            return _error(401, "X-Webhook-Secret header (or ?secret=) not set")
        given = sent.encode("utf-8", "surrogateescape")
        if not hmac.compare_digest(given, expected):
            return _error(401, "invalid webhook secret")
        try:
            raw = parse_json(await read_body(request, max_body_bytes), max_depth=max_json_depth)
        except RequestRefused as refused:
            return _error(refused.status, refused.message)
        try:
            payload = WebhookPayload.model_validate(raw)
        except ValidationError as exc:
            return _error(400, f"not a Hub webhook payload: {_first_error(exc)}")
        try:
            name = payload.check_names()
            _check_storable(raw)
        except InvalidRecord as exc:
            return _error(400, f"not a Hub webhook payload: {exc}")
        if not payload.event.scope.startswith("repo") or payload.repo.type != "model":
            return {"accepted": False, "reason": "only model repo events are tracked"}
        key = payload.delivery_key()
        try:
            stored = _store(database, key, name, raw, clock())
        except InvalidRecord as exc:
            return _error(400, f"not a Hub webhook payload: {exc}")
        return {"accepted": True, "duplicate": not stored, "delivery_key": key}

    return router


def _first_error(exc: ValidationError) -> str:
    """Pydantic's first error as one line: where, and what is wrong."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "body"
    return f"{where}: {first['msg']}"


def _check_storable(raw: Any) -> None:
    """Refuse lone surrogates: a string that cannot be encoded as UTF-8 would fail later in
    whatever reads the event (logs, pages, a JSONB column), not here where it can be refused.

    (NUL, the other such text, storage itself refuses with InvalidRecord.)
    """
    try:
        json.dumps(raw, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRecord(
            "a string contains a lone UTF-16 surrogate, which cannot be stored"
        ) from None


def _store(database: Database, key: str, repo_id: RepoId, raw: Any, now: datetime) -> bool:
    with database.session() as session:
        return record_webhook_event(session, key, raw, now, repo_id=repo_id)


__all__ = ["PATH", "WebhookPayload", "create_webhook_router"]
