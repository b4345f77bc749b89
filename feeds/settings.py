"""What the published side needs to know that storage does not: its public URL and limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from estimator import Accuracy, measured_accuracy
from feeds.limits import DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_JSON_DEPTH


@dataclass(frozen=True)
class PublishSettings:
    """Settings of the HTTP app, built by the top (tracker.daemon) from its settings.

    ``base_url`` is where users reach the app: feeds and advisories link to
    it, so it must be the public address, not the bind address.
    ``accuracy`` is the estimator benchmark's last score
    (``estimator.measured_accuracy``); the model page shows it, or "not yet
    measured" when it is None.
    ``log_poll_seconds`` bounds how late a new or withdrawn advisory reaches
    feeds and OSV query results (renders are reused in between).
    ``max_body_bytes`` caps every request body (413 past it); 1 MiB holds a
    Hub webhook (a few kB) and a full 1,000-query batch (~240 kB) with room
    to spare. ``route_body_bytes`` gives exact paths their own cap where one
    needs more; ``POST /api/v1/plan`` always gets ``max_plan_body_bytes``.
    ``max_json_depth`` caps JSON nesting (400 past it): OSV queries, webhooks
    and subscriptions nest under 10 levels.
    ``body_read_seconds`` is how long a request may take to send its body
    (408 after it), so a client trickling bytes cannot hold a connection.
    The plan API computes in ``plan_workers`` processes (``plan_queue`` more
    calls may wait; 503 past that), each call within ``plan_cpu_seconds`` of
    CPU and ``plan_wall_seconds`` of wall time, and answers at most
    ``max_plan_response_bytes`` of Plan JSON (422 past either); each client
    address may call it ``plan_rate`` times (``limits`` notation, 429 past it).
    ``max_concurrent_renders`` bounds how many requests other than
    ``/healthz`` and ``/metrics`` the app works on at once (the rest wait
    their turn without holding a thread), so a flood of page requests cannot
    starve a health probe of the interpreter.
    """

    base_url: str = "http://127.0.0.1:8080"
    title: str = "neurarch-trace"
    query_page_size: int = 1000
    batch_page_size: int = 1000
    max_batch_queries: int = 1000
    feed_entries: int = 50
    max_plan_body_bytes: int = 1_000_000
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    route_body_bytes: tuple[tuple[str, int], ...] = ()
    max_json_depth: int = DEFAULT_MAX_JSON_DEPTH
    accuracy: Accuracy | None = field(default_factory=measured_accuracy)
    log_poll_seconds: float = 1.0
    body_read_seconds: float = 30.0
    plan_workers: int = 2
    plan_queue: int = 8
    plan_cpu_seconds: int = 2
    plan_wall_seconds: float = 10.0
    max_plan_response_bytes: int = 1024 * 1024
    plan_rate: str = "30/minute"
    max_concurrent_renders: int = 2

    def url(self, path: str) -> str:
        """An absolute URL of ``path`` on this app."""
        return self.base_url.rstrip("/") + path


__all__ = ["PublishSettings"]
