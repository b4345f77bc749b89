"""Where an alert is pushed: one ``Sender`` interface, one implementation per channel kind.

    Sender (protocol)       send(delivery, channel) -> None, or raises DeliveryFailed
    ├── WebhookSender       a JSON POST signed as Standard Webhooks (``standardwebhooks``)
    ├── AppriseSender       any notification URL apprise understands (discord://, json://, ...)
    └── FeedSender          the subscription's Atom feed: nothing to push

    TrackerError
    └── DeliveryFailed      the attempt failed; ``permanent`` says whether retrying can help

Every push goes only where ``tracker.alerts.egress`` allows: the channel's host
is checked before sending, and every socket the send opens (redirects and
apprise's own requests included) at connect time (``tracker.alerts.guard``).
A refused destination is a permanent failure naming the host and address.

Only the top (the daemon) chooses and constructs senders; the delivery worker
looks them up by channel kind. A failure's message is shown on public pages
(the dead letters), so it never contains the channel's URL, which may carry
a token: "HTTP 503", "connection refused", "timed out after 10 s".
"""

from __future__ import annotations

import importlib
import json
import socket
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Final, Protocol

import requests
from standardwebhooks import Webhook

from storage.records import Delivery, JsonValue
from tracker.alerts.egress import (
    Cleared,
    ConnectRefused,
    Egress,
    EgressRefused,
    Unresolvable,
    channel_destination,
)
from tracker.alerts.guard import Guard, guarded
from tracker.alerts.spec import Channel, signing_secret
from tracker.errors import TrackerError

RETRYABLE_STATUS: Final = frozenset({408, 425, 429})
TITLE_LENGTH: Final = 120
APPRISE_MISSING: Final = "apprise is not installed: pip install 'neurarch-trace[apprise]'"

__all__ = [
    "APPRISE_MISSING",
    "AppriseSender",
    "DeliveryFailed",
    "FeedSender",
    "Sender",
    "WebhookSender",
    "delivery_key",
    "notification_text",
    "user_agent",
    "webhook_body",
]


class DeliveryFailed(TrackerError):
    """An attempt to push an alert failed; ``permanent`` failures go straight to dead letters."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.message = message
        self.permanent = permanent


class Sender(Protocol):
    """Pushes one outbox row to one channel; returns on success, raises DeliveryFailed."""

    def send(self, delivery: Delivery, channel: Channel | None) -> None:
        """Push ``delivery`` to ``channel`` (None for the feed, which has no configured channel).

        Returns on success; raises DeliveryFailed, whose ``permanent`` decides retry or dead letter.
        """
        ...


def user_agent() -> str:
    """``neurarch-trace/<installed version>``, so receivers can tell our requests apart."""
    try:
        return f"neurarch-trace/{version('neurarch-trace')}"
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "neurarch-trace/0+unknown"


def delivery_key(delivery: Delivery) -> str:
    """The delivery's stable id: the same on every retry, so a receiver can dedupe on it.

    A crash after the POST but before the outbox records success sends the
    row again; the receiver sees the same id twice and drops the second.
    """
    return f"{delivery.subscription_id}-{delivery.sequence}-{delivery.channel}"


def webhook_body(delivery: Delivery) -> dict[str, JsonValue]:
    """The JSON a webhook receives: the delivery's identity, then the alert itself.

    The payload may name the subscription itself (it wins over the id), but
    never the delivery id or sequence, which must match the headers.
    """
    body: dict[str, JsonValue] = {
        "delivery_id": delivery_key(delivery),
        "sequence": delivery.sequence,
        "subscription": delivery.subscription_id,
        **delivery.payload,
    }
    body["delivery_id"] = delivery_key(delivery)
    body["sequence"] = delivery.sequence
    return body


class WebhookSender:
    """POSTs a signed JSON alert; the status code decides retry or dead letter.

    2xx is success. 408, 425, 429, 5xx, refused connections and timeouts are
    worth retrying. Any other status is permanent: a receiver that rejects the
    signature or the path will not change its mind, and redirects are not
    followed (re-sending a signed body to wherever a 3xx points is not ours
    to decide; point the subscription at the final URL).
    """

    def __init__(
        self,
        http: requests.Session,
        clock: Callable[[], datetime],
        timeout_s: float = 10,
        egress: Egress | None = None,
    ) -> None:
        self.http = http
        self.clock = clock
        self.timeout_s = timeout_s
        self.egress = egress or Egress()
        self.agent = user_agent()

    def send(self, delivery: Delivery, channel: Channel | None) -> None:
        """POST the signed alert once, redirects not followed; network I/O to the channel's URL.

        Raises DeliveryFailed: permanent for a refused host, a missing secret or a 4xx.
        """
        if channel is None or channel.kind != "webhook":
            raise DeliveryFailed("not a webhook channel", permanent=True)
        if not channel.secret:
            raise DeliveryFailed("the webhook channel has no signing secret", permanent=True)
        body = json.dumps(webhook_body(delivery), separators=(",", ":")).encode()
        message_id, now = delivery_key(delivery), self.clock()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": self.agent,
            "X-Neurarch-Event": "alert",
            "webhook-id": message_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": Webhook(signing_secret(channel.secret)).sign(
                message_id, now, body
            ),
        }
        cleared = _clear(self.egress, channel)
        with guarded(self.egress, *cleared) as guard:
            try:
                response = self.http.post(
                    channel.url,
                    data=body,
                    headers=headers,
                    timeout=self.timeout_s,
                    allow_redirects=False,
                )
            except (requests.RequestException, ConnectRefused) as exc:
                raise _refused(guard) or _request_failure(exc, self.timeout_s) from None
        with response:
            status = response.status_code
        if 200 <= status < 300:
            return
        if 300 <= status < 400:
            raise DeliveryFailed(
                f"HTTP {status} (redirects are not followed; use the final URL)", permanent=True
            )
        retryable = status in RETRYABLE_STATUS or status >= 500
        raise DeliveryFailed(f"HTTP {status}", permanent=not retryable)


def _clear(egress: Egress, channel: Channel) -> tuple[Cleared, ...]:
    """Check the channel's host now; a refusal is permanent, no address yet is retried."""
    try:
        destination = channel_destination(channel.kind, channel.url)
        return () if destination is None else (egress.check_host(*destination),)
    except Unresolvable:
        raise DeliveryFailed("host name could not be resolved", permanent=False) from None
    except EgressRefused as exc:
        raise DeliveryFailed(exc.message, permanent=True) from None


def _refused(guard: Guard) -> DeliveryFailed | None:
    """The guard's first connect-time refusal as a permanent failure, if there was one."""
    if guard.refused is None:
        return None
    return DeliveryFailed(guard.refused.message, permanent=True)


def _request_failure(exc: BaseException, timeout_s: float) -> DeliveryFailed:
    """requests' exception as a failure whose message names no host or URL."""
    if isinstance(exc, requests.Timeout):
        return DeliveryFailed(f"timed out after {timeout_s:g} s", permanent=False)
    if isinstance(exc, requests.ConnectionError):
        return DeliveryFailed(_connection_message(exc), permanent=False)
    invalid = (
        requests.exceptions.InvalidURL,
        requests.exceptions.InvalidSchema,
        requests.exceptions.MissingSchema,
    )
    if isinstance(exc, invalid):
        return DeliveryFailed("the webhook URL is not valid", permanent=True)
    return DeliveryFailed(f"request failed ({type(exc).__name__})", permanent=False)


def _connection_message(exc: BaseException) -> str:
    """What went wrong, from requests' wrapped exception chain, without host or URL."""
    seen: list[BaseException] = []
    pending: list[Any] = [exc]
    while pending:
        current = pending.pop()
        if not isinstance(current, BaseException) or any(current is s for s in seen):
            continue
        seen.append(current)
        pending.extend([*current.args, getattr(current, "reason", None)])
        pending.extend([current.__cause__, current.__context__])
    if any(isinstance(e, ConnectionRefusedError) for e in seen):
        return "connection refused"
    if any(isinstance(e, socket.gaierror) or "NameResolution" in type(e).__name__ for e in seen):
        return "host name could not be resolved"
    if any(isinstance(e, requests.exceptions.SSLError) for e in seen):
        return "TLS handshake failed"
    if any(isinstance(e, ConnectionResetError) for e in seen):
        return "connection reset"
    return "connection failed"


class AppriseSender:
    """Sends through apprise (an optional dependency, imported on first use).

    apprise reports success as a truth value and logs its reasons, so a
    falsy ``notify`` is retried, while a URL ``add`` refuses is a configuration
    error no retry will fix. apprise swallows a refused connect into a falsy
    result, so the guard's record of it decides: refused is permanent.
    """

    def __init__(self, egress: Egress | None = None) -> None:
        self.egress = egress or Egress()

    def send(self, delivery: Delivery, channel: Channel | None) -> None:
        """Notify through apprise once; network I/O to whatever the notification URL names.

        Raises DeliveryFailed: permanent when apprise is missing or refuses the URL.
        """
        if channel is None or channel.kind != "apprise":
            raise DeliveryFailed("not an apprise channel", permanent=True)
        try:
            apprise = importlib.import_module("apprise")
        except ImportError:
            raise DeliveryFailed(APPRISE_MISSING, permanent=True) from None
        cleared = _clear(self.egress, channel)
        notifier = apprise.Apprise()
        if not notifier.add(channel.url):
            raise DeliveryFailed(
                "apprise does not understand this notification URL", permanent=True
            )
        title, body = notification_text(delivery.payload)
        with guarded(self.egress, *cleared) as guard:
            # a bool before apprise 2, an AppriseResult (truthy on success) since
            accepted = notifier.notify(title=title, body=body)
        failure = _refused(guard)
        if failure is not None:
            raise failure
        if not accepted:
            raise DeliveryFailed("the notification service did not accept it", permanent=False)


def notification_text(payload: Mapping[str, JsonValue]) -> tuple[str, str]:
    """A title (the summary, shortened) and a body (the summary and the advisory link)."""
    summary = str(payload.get("summary") or "neurarch-trace alert")
    title = summary.splitlines()[0] if summary.strip() else "neurarch-trace alert"
    if len(title) > TITLE_LENGTH:
        title = title[: TITLE_LENGTH - 1].rstrip() + "…"
    link = payload.get("advisory_url")
    body = f"{summary}\n\n{link}" if isinstance(link, str) and link else summary
    return title, body


class FeedSender:
    """The subscription's Atom feed is rendered from storage: nothing to push."""

    def send(self, delivery: Delivery, channel: Channel | None) -> None:
        """Succeed at once: the feed is rendered from storage when it is read."""
        return None
