"""Subscription documents at the HTTP edge: read the body, validate it, redact what is shown.

The API's handlers (feeds.subscriptions_api) stay thin: a body is read here
no further than ``MAX_BODY_BYTES``, handed to the tracker's parser (passed
in as ``parse``: feeds never imports the tracker) and destination check
(``vet``), whose ``columns()`` are what storage keeps. What goes
out is the parser's own redacted document; a stored row the parser now
refuses is masked here instead, never shown raw.

Webhook secrets go in and never come out; a PUT that sends the mask back for
an unchanged channel keeps the stored secret (``keep_secrets``), and a
channel's ``secret_env`` is refused: the server's environment is the
operator's, read only from the configuration file.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from fastapi import HTTPException, Request

from storage import SubscriptionColumns, subscription_document
from storage.records import JsonValue, Subscription
from storage.subscription_rows import MASK

MAX_BODY_BYTES: Final = 64 * 1024


class ChannelDraft(Protocol):
    """A validated channel: its stored JSON form (with the real secret)."""

    def to_json(self) -> Mapping[str, JsonValue]:
        """The channel as stored, secret included: never sent back to a client."""


class SubscriptionDraft(Protocol):
    """What ``parse`` hands back: a validated subscription, ready to store or show."""

    @property
    def name(self) -> str:
        """The unique name the subscription is stored and addressed under."""

    @property
    def channels(self) -> Sequence[ChannelDraft]:
        """Where alerts go, in the order the document listed them."""

    def columns(self) -> SubscriptionColumns:
        """What storage keeps of the subscription beside its name, real secrets included."""

    def to_document(self, *, redact: bool = ...) -> Mapping[str, JsonValue]:
        """The subscription as a document; ``redact`` masks webhook secrets for display."""


Parse = Callable[[Mapping[str, Any]], SubscriptionDraft]
Vet = Callable[[SubscriptionDraft], None]
"""Raises ValueError (naming the channel) if a draft's channels point where alerts may not go."""


def draft(parse: Parse, document: Mapping[str, Any], vet: Vet) -> SubscriptionDraft:
    """The validated subscription of ``document``; 422 naming the field if it is refused."""
    channels = document.get("channels")
    for i, channel in enumerate(channels if isinstance(channels, list) else []):
        if isinstance(channel, dict) and "secret_env" in channel:
            raise HTTPException(
                422,
                f"channels[{i}]: secret_env names a variable of the server and is only "
                "read from the configuration file; send the secret itself",
            )
    try:
        parsed = parse(document)
        vet(parsed)
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
    return parsed


def redacted_document(record: Subscription, parse: Parse) -> dict[str, JsonValue]:
    """The stored subscription as a document with its channels' secrets masked.

    The parser's own redaction is used (it also masks apprise credentials);
    a stored row the parser now refuses is masked here, channel URLs other
    than webhooks' included, rather than shown raw.
    """
    stored = subscription_document(record)
    try:
        return dict(parse(stored).to_document(redact=True))
    except ValueError:
        return {**stored, "channels": [_mask(channel) for channel in record.channels]}


def keep_secrets(document: dict[str, Any], current: Subscription) -> dict[str, Any]:
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


async def read_body(request: Request) -> dict[str, Any]:
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


def _mask(channel: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
    masked = dict(channel)
    if "secret" in masked:
        masked["secret"] = MASK
    url = masked.get("url")
    if masked.get("type") != "webhook" and isinstance(url, str):
        masked["url"] = f"{urlsplit(url).scheme or 'url'}://{MASK}"
    return masked


def _too_large() -> str:
    return f"request body is over {MAX_BODY_BYTES} bytes; a subscription document is much smaller"


__all__ = [
    "MASK",
    "MAX_BODY_BYTES",
    "ChannelDraft",
    "Parse",
    "SubscriptionDraft",
    "Vet",
    "draft",
    "keep_secrets",
    "read_body",
    "redacted_document",
]
