"""``serve`` wired together: storage, Hub access, workers, ticker, and the HTTP app.

This is one of the two modules allowed to import ``feeds`` (the other is the
CLI): it builds the app from ``feeds.app.create_app`` when the publishing
side is installed, adds the webhook and ops routers, and serves it with
uvicorn (``serve_http``); the check workers run on threads
(``start_background``). tracker.roles decides which of the two a process
runs: ``serve --role all`` puts them in separate OS processes. One
``Daemon`` is one instance; several on one PostgreSQL share the work
through row leases. SIGTERM (or SIGINT) stops the ticker, lets every worker
finish the revision it is writing, hands back unstarted leases, and exits 0.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from types import FrameType
from typing import Any

import requests
import uvicorn
from fastapi import APIRouter, FastAPI
from prometheus_client import CollectorRegistry

from storage import (
    Database,
    RepoId,
    RepoNotFound,
    open_database,
    poll_state,
    poll_states,
    record_last_modified,
    schedule_check,
    tracking_summary,
)
from tracker.alerts.channels import AppriseSender, FeedSender, Sender, WebhookSender
from tracker.alerts.deliver import DeliveryWorker, RetryPolicy
from tracker.alerts.egress import Egress
from tracker.alerts.evaluate import AlertLinks, alert_publisher
from tracker.alerts.fields import document_schema
from tracker.alerts.registry import sync_configured
from tracker.alerts.spec import parse_subscription
from tracker.hub.api import connect
from tracker.hub.budget import budget_key
from tracker.hub.client import Hub
from tracker.hub.discovery import Discovery, HeadProbe
from tracker.hub.ratelimit import RateLimiter, install
from tracker.hub.shared_budget import SharedBudget
from tracker.revision.process import Publishers
from tracker.schedule.inbox import drain
from tracker.schedule.leases import release_previous, track, watermark
from tracker.schedule.metrics import BudgetWatch, DaemonMetrics
from tracker.schedule.ticker import Ticker
from tracker.schedule.worker import Worker, WorkerPolicy
from tracker.settings import DaemonConfig, Settings

log = logging.getLogger("neurarch.daemon")


def utc_now() -> datetime:
    """The wall clock, timezone-aware in UTC: the clock the daemon hands to what it wires."""
    return datetime.now(UTC)


@dataclass
class Daemon:
    """One running instance."""

    settings: Settings
    config: DaemonConfig
    database: Database
    metrics: DaemonMetrics = field(default_factory=DaemonMetrics)
    instance: str = ""
    stop_event: threading.Event = field(default_factory=threading.Event)
    role: str = "all"
    """What this process runs: "web" (the app only), "worker" (checks only) or "all"."""
    metrics_registry: CollectorRegistry | None = None
    """What /metrics exports; None: this process's own ``metrics``."""
    clock: Callable[[], datetime] = utc_now
    """Every time this instance stores or schedules by; tests pass a fake one."""
    _workers: list[threading.Thread] = field(default_factory=list)
    _ticker: Ticker | None = None
    _alerts: DeliveryWorker | None = None
    _watermark: datetime | None = None
    _handled: Mapping[str, str | None] = field(default_factory=dict)
    """The last walk's items at its watermark's second, acted on: the next walk skips them."""
    _budget: BudgetWatch | None = None
    _server: uvicorn.Server | None = None

    @classmethod
    def open(cls, settings: Settings, config: DaemonConfig | None = None) -> Daemon:
        """Migrate and open the database; ``config`` overrides ``settings.daemon`` (CLI flags)."""
        database = open_database(settings.storage.database_url)
        database.migrate()
        return cls(settings=settings, config=config or settings.daemon, database=database)

    def __post_init__(self) -> None:
        self.instance = self.instance or self.config.instance or default_instance(self.config)

    def track_configured(self) -> None:
        """Follow every repo of the config file and store its subscriptions.

        A subscription whose channel points where alerts may not go stops the
        start (EgressRefused naming it) before anything is stored.
        """
        for spec in self.config.subscriptions:
            self.egress.vet(spec)
        now = self.clock()
        with self.database.session() as session:
            for repo in self.config.repos:
                track(session, repo.repo_id, now=now, interval_s=repo.interval_s)
            changed = sync_configured(session, self.config.subscriptions, now=now)
        if changed:
            log.info(json.dumps({"event": "subscriptions_configured", "names": changed}))

    def with_alerts(self, publish: Publishers | None) -> Publishers:
        """The publisher table ``publish`` (the advisory writer), then the alert queuer.

        Every entry runs in the revision's transaction, so an alert is queued
        exactly when its revision (and advisory) commits; the queuer links the
        advisory id the writer returned.
        """
        links = AlertLinks(base_url=self.public_url)
        table = publish if publish is not None else Publishers()
        return table.plus("alerts", alert_publisher(links, self.clock))

    def deliver_alerts(self, worker: DeliveryWorker) -> None:
        """Start a lane for each channel with a due alert; a slow receiver holds no tick."""
        report = worker.dispatch()
        if report.delivered or report.retried or report.dead:
            log.info(json.dumps({"event": "alerts_delivered", **report.__dict__}))

    def start_background(self, publish: Publishers | None = None) -> None:
        """Start the workers and the ticker (discovery, inbox); returns at once."""
        install(
            self.rate_limiter(),
            timeout_s=self.config.hub_timeout_s,
            observers=(self.metrics.observe_response,),
        )
        self.metrics.watch_storage(self.database, self.clock)
        freed = release_previous(self.database, self.instance)
        if freed:
            log.warning(json.dumps({"event": "leases_recovered", "count": freed}))
        policy = WorkerPolicy(
            interval_s=self.config.interval_s,
            max_backoff_s=self.config.max_backoff_s,
            lease_s=self.config.lease_s,
        )
        api = connect(self.settings.hub)
        for index in range(self.config.workers):
            worker = Worker(
                self.database,
                Hub(api, timeout=self.config.hub_timeout_s),
                HeadProbe(api),
                owner=f"{self.instance}/{index}/{os.getpid()}",
                policy=policy,
                metrics=self.metrics,
                clock=self.clock,
                publish=self.with_alerts(publish),
                stop=self.stop_event,
            )
            thread = threading.Thread(
                target=worker.run, args=(self.config.tick_s,), name=f"worker-{index}", daemon=True
            )
            thread.start()
            self._workers.append(thread)
        discovery = Discovery(api)
        with self.database.read_session() as session:
            self._watermark = watermark(session)
        ticker = Ticker(self.drain_inbox, self.config.tick_s, name="inbox")
        ticker.add(lambda: self.discover(discovery), self.config.discovery_s, name="discovery")
        alerts = self.delivery_worker()
        ticker.add(lambda: self.deliver_alerts(alerts), self.config.alerts.tick_s, name="alerts")
        ticker.start()
        self._ticker = ticker
        self._alerts = alerts

    def delivery_worker(self) -> DeliveryWorker:
        """The outbox drainer: webhooks, apprise URLs and the feed channel, with retries."""
        policy = RetryPolicy(
            base_s=self.config.alerts.retry_base_s,
            max_delay_s=self.config.alerts.retry_max_delay_s,
            give_up_after_s=self.config.alerts.give_up_after_s,
        )
        senders: dict[str, Sender] = {
            "webhook": WebhookSender(requests.Session(), self.clock, egress=self.egress),
            "apprise": AppriseSender(self.egress),
            "feed": FeedSender(),
        }
        return DeliveryWorker(self.database, senders, self.clock, policy)

    def drain_inbox(self) -> None:
        """Make the repos of pending webhook deliveries due now (commits); logs what it drained."""
        drained = drain(self.database, now=self.clock())
        if drained.deliveries or drained.deferred:
            log.info(json.dumps({"event": "inbox_drained", **drained.__dict__}))

    def discover(self, discovery: Discovery) -> None:
        """One bulk walk: tracked repos that moved become due now.

        The walk asks storage only about the repos it passes (``TrackedShas``): an
        idle cycle over 100,000 tracked repos reads one or two poll states, not all.
        """
        result = discovery.walk(self._watermark, TrackedShas(self.database), self._handled)
        now = self.clock()
        with self.database.session() as session:
            # keys TrackedShas found among storage's repos, so ids storage checked
            for repo_id, stamp in result.last_modified.items():
                record_last_modified(session, RepoId(repo_id), stamp)
            for repo_id in result.moved:
                schedule_check(session, RepoId(repo_id), now)
        self._watermark, self._handled = result.watermark, result.at_watermark
        if result.moved:
            log.info(json.dumps({"event": "discovered", "moved": sorted(result.moved)}))

    def rate_limiter(self) -> RateLimiter:
        """This instance's pacer; with ``[daemon] hub_budget``, drawing on the shared budget.

        Its report is exported in /metrics and /healthz, and logged once at
        start when the budget cannot cover the interval.
        """
        budget = self.config.hub_budget
        if budget is None:
            return RateLimiter(self.config.requests_per_second)
        shared = SharedBudget(
            self.database, budget_key(self.settings.hub.endpoint, self.settings.hub.token), budget
        )
        limiter = RateLimiter(self.config.requests_per_second, shared=shared)
        self._budget = BudgetWatch(
            self.metrics, limiter, shared, self.database, self.config.interval_s, time.time
        )
        self.metrics.watch_budget(self._budget)
        report = self._budget.report()
        if report is not None and report.schedule_lag_s > 0:
            log.warning(json.dumps({"event": "hub_budget_short", **report.to_json()}))
        return limiter

    def health(self) -> Mapping[str, Any]:
        """The /healthz body, read from the database (so a web-only process tells the truth).

        ``backfill`` is "done" once every active tracked repo has been checked
        through; ``workers_alive`` is reported by processes that run workers.
        """
        with self.database.read_session() as session:
            summary = tracking_summary(session)
        body: dict[str, Any] = {
            "status": "ok",
            "role": self.role,
            "instance": self.instance,
            "database": self.database.dialect,
            "tracked": summary.tracked,
            "backfill": "done" if not summary.backfill_pending else "running",
            "backfill_pending": summary.backfill_pending,
            "failing": summary.failing,
            "repo_status": dict(summary.by_status),
        }
        report = None if self._budget is None else self._budget.report()
        if report is not None:
            body["hub_budget"] = report.to_json()
        if self.role != "web":
            alive = self.workers_alive()
            body["workers_alive"] = alive
            body["status"] = "ok" if not self._workers or alive else "degraded"
        return body

    def workers_alive(self) -> int:
        """How many of this process's check worker threads are running."""
        return sum(1 for t in self._workers if t.is_alive())

    def serve(self, app: FastAPI) -> None:
        """Serve ``app`` in this thread beside the workers, until SIGTERM/SIGINT; then stop all."""
        try:
            self.serve_http(app)
        finally:
            self.stop()

    def serve_http(
        self,
        app: FastAPI,
        sock: socket.socket | None = None,
        on_serving: Callable[[], None] | None = None,
    ) -> None:
        """Serve ``app`` (on ``sock`` if given, else host:port) until SIGTERM/SIGINT or
        ``stop_serving``. ``on_serving`` runs once the server exists, before it starts."""
        previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}

        def on_signal(signum: int, frame: FrameType | None) -> None:
            self.stop_serving()

        for sig in previous:
            signal.signal(sig, on_signal)
        from feeds.serving import server_config  # uvicorn with header and keep-alive deadlines

        config = server_config(app, host=self.config.host, port=self.config.port)
        self._server = uvicorn.Server(config)
        try:
            if on_serving is not None:
                on_serving()
            if not self.stop_event.is_set():
                self._server.run(sockets=None if sock is None else [sock])
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if not self._server.started and not self.stop_event.is_set():
            raise OSError(f"cannot serve on {self.config.host}:{self.config.port}")

    def stop_serving(self) -> None:
        """Ask the HTTP server (and the workers) to finish; safe from any thread or handler."""
        self.stop_event.set()
        if self._server is not None:
            self._server.should_exit = True

    def stop(self) -> None:
        """Finish or release the work in hand, stop ticking, close the database."""
        self.stop_event.set()
        if self._ticker is not None:
            self._ticker.shutdown(wait=True)
            self._ticker = None
        if self._alerts is not None:
            self._alerts.close()  # rows being sent finish (each within its timeout)
            self._alerts = None
        for thread in self._workers:
            thread.join()
        self._workers.clear()
        self.database.close()

    def routers(self) -> tuple[APIRouter, ...]:
        """The feeds app's extra routers: webhooks, ops, subscriptions, CLI reads, shared plans."""
        from feeds import shared_plans
        from feeds.cli_api import create_cli_router
        from feeds.ops import create_ops_router
        from feeds.settings import PublishSettings
        from feeds.subscriptions_api import create_subscriptions_router
        from feeds.webhooks import create_webhook_router
        from tracker.reads.documents import answer
        from tracker.reads.local_daemon import database_digest

        return (
            create_webhook_router(
                self.database, secret=self.config.webhook_secret, clock=self.clock
            ),
            create_ops_router(
                health=self.health, registry=self.metrics_registry or self.metrics.registry
            ),
            create_subscriptions_router(
                self.database,
                token=self.config.api_token,
                parse=parse_subscription,
                vet=self.egress.vet,
                schema=document_schema(),
                clock=self.clock,
            ),
            create_cli_router(
                partial(answer, self.database),
                database_digest=database_digest(self.settings.storage.database_url),
            ),
            shared_plans.router(
                self.database,
                PublishSettings(base_url=self.public_url),
                self.config.api_token,
                clock=self.clock,
            ),
        )

    def build_app(self) -> FastAPI:
        """The feeds app with our routers (webhooks, /healthz, /metrics, subscriptions API)."""
        from feeds.app import create_app
        from feeds.settings import PublishSettings

        public = PublishSettings(base_url=self.public_url)
        created: FastAPI = create_app(self.database, settings=public, routers=self.routers())
        return created

    @property
    def egress(self) -> Egress:
        """Where alerts may go: public addresses, and what [alerts] allow lists."""
        return Egress(self.config.alerts.allow)

    @property
    def public_url(self) -> str:
        """Where users reach the app: links in feeds, advisories and alerts."""
        return _public_url(self.config)


class TrackedShas(Mapping[str, str | None]):
    """repo id -> the head sha last seen, for tracked repos, read from storage per lookup.

    Each repo is read at most once per walk; iterating reads every poll state (O(N)),
    which the discovery walk never does.
    """

    def __init__(self, database: Database) -> None:
        self._database = database
        self._seen: dict[str, str | None] = {}
        self._untracked: set[str] = set()

    def __getitem__(self, repo_id: str) -> str | None:
        if repo_id in self._seen:
            return self._seen[repo_id]
        if repo_id in self._untracked:
            raise KeyError(repo_id)
        try:
            with self._database.read_session() as session:
                # a Hub listing's id as a lookup key: one storage never stored finds nothing
                self._seen[repo_id] = poll_state(session, RepoId(repo_id)).last_seen_sha
        except RepoNotFound:
            self._untracked.add(repo_id)
            raise KeyError(repo_id) from None
        return self._seen[repo_id]

    def __contains__(self, repo_id: object) -> bool:
        if not isinstance(repo_id, str):
            return False
        try:
            self[repo_id]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        with self._database.read_session() as session:
            return iter([state.repo_id for state in poll_states(session)])

    def __len__(self) -> int:
        with self._database.read_session() as session:
            return len(poll_states(session))


def default_instance(config: DaemonConfig) -> str:
    """host:port: stable across restarts, distinct between instances on one host."""
    return f"{socket.gethostname()}:{config.port}"


def _public_url(config: DaemonConfig) -> str:
    """Where users reach the app ([server] public_url, else host and port)."""
    return (config.public_url or f"http://{config.host}:{config.port}").rstrip("/")


def publisher(clock: Callable[[], datetime]) -> Publishers:
    """The publisher table every worker starts from: the advisory writer from feeds."""
    from feeds.publish import advisory_writer

    return Publishers().plus("advisories", advisory_writer(clock))


def revision_publishers(settings: Settings, clock: Callable[[], datetime]) -> Publishers:
    """The table a daemon's workers run (advisories, then alerts), for a command that records
    revisions itself (``track``): what it records is published in the same transaction,
    exactly as a worker would, and the daemon delivers the alerts it queued."""
    links = AlertLinks(base_url=_public_url(settings.daemon))
    return publisher(clock).plus("alerts", alert_publisher(links, clock))


__all__ = ["Daemon", "default_instance", "publisher", "revision_publishers", "utc_now"]
