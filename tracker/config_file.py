"""The daemon's sections of the TOML file: repos, intervals, the server and alerts.

``Settings.load`` (tracker.settings) reads the file once and hands the parsed
document here for the ``[daemon]``, ``[server]``, ``[alerts]``, ``[[repos]]``
and ``[[subscriptions]]`` tables; the result is ``Settings.daemon``. An
annotated example, naming every setting, lives in
deploy/neurarch-trace.example.toml. Durations are seconds or a number with a
unit (``"90s"``, ``"30m"``, ``"1h"``, ``"1d"``), so an interval reads the way
people say it. ``[[subscriptions]]`` tables have the document shape of
tracker.alerts.spec; they are stored at start (added or replaced, never
deleted) by tracker.alerts.registry.sync_configured.

Every table and key the file may hold is listed once, in ``FILE_KEYS``;
``check_known_keys`` refuses anything else before a value is read, so a typo
(``[server] prot``, a ``[sever]`` table, a misspelt ``database_url`` that would
silently fall back to SQLite) is one line naming the file, the table and the
key, never a default used in silence.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.alerts.egress import AllowList, AllowListError
from tracker.errors import ConfigFileError, RepoIdError
from tracker.hub.budget import HubBudget

if TYPE_CHECKING:
    from tracker.alerts.spec import SubscriptionSpec

DEFAULT_INTERVAL_S = 3600.0
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8080
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smhd]?)\s*$")

FILE_KEYS: Mapping[str, tuple[str, ...]] = {
    "storage": ("database_url",),
    "hub": ("endpoint",),
    "daemon": (
        "interval",
        "max_backoff",
        "workers",
        "tick",
        "discovery",
        "requests_per_second",
        "hub_budget",
        "lease",
        "hub_timeout",
        "instance",
    ),
    "server": ("host", "port", "public_url", "webhook_secret", "api_token"),
    "alerts": ("tick", "retry_base", "retry_max_delay", "give_up_after", "allow"),
    "repos": ("id", "interval"),
}
"""Every table of the file and its keys; ``[[subscriptions]]`` tables are checked by
tracker.alerts.spec, which knows their fields."""
SUBSCRIPTIONS = "subscriptions"


@dataclass(frozen=True)
class RepoConfig:
    """One followed repo; ``interval_s`` None means the daemon-wide default."""

    repo_id: str
    interval_s: float | None = None


@dataclass(frozen=True)
class AlertsConfig:
    """The ``[alerts]`` table: how often the outbox is drained and how failures back off.

    A failed delivery is retried after ``retry_base_s``, doubling up to
    ``retry_max_delay_s``, until ``give_up_after_s`` after the alert was
    queued; then it becomes a dead letter. ``allow`` lists the internal
    receivers alerts may reach beside public addresses.
    """

    tick_s: float = 5.0
    retry_base_s: float = 30.0
    retry_max_delay_s: float = 3600.0
    give_up_after_s: float = 86400.0
    allow: AllowList = field(default_factory=AllowList)


@dataclass(frozen=True)
class DaemonConfig:
    """Everything ``serve`` needs beyond Settings."""

    repos: tuple[RepoConfig, ...] = ()
    interval_s: float = DEFAULT_INTERVAL_S
    max_backoff_s: float = 6 * 3600.0
    workers: int = 4
    tick_s: float = 5.0
    discovery_s: float = 300.0
    requests_per_second: float = 5.0
    hub_budget: HubBudget | None = None
    """The account's Hub requests per window, shared by every instance (tracker.hub.budget)."""
    lease_s: float = 300.0
    hub_timeout_s: float = 30.0
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    webhook_secret: str | None = None
    api_token: str | None = None
    """Bearer token for /api/v1 (subscriptions); None: the API answers 401 to everyone."""
    instance: str | None = None
    """This instance's name in lease owners; unique per database (default host:port)."""
    public_url: str | None = None
    """Where users reach the app (links in feeds and advisories); default http://host:port."""
    subscriptions: tuple[SubscriptionSpec, ...] = ()
    alerts: AlertsConfig = AlertsConfig()
    """The file's ``[[subscriptions]]``, validated; stored when the daemon starts."""


def parse_duration(value: object, where: str) -> float:
    """Seconds from a number or a string like ``"30m"``; ConfigFileError names ``where``."""
    if isinstance(value, bool):
        raise ConfigFileError(f'{where}: expected a duration such as 3600 or "1h", got {value!r}')
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _DURATION.match(value)):
        seconds = float(match["n"]) * _UNITS[match["unit"] or "s"]
    else:
        raise ConfigFileError(f'{where}: expected a duration such as 3600 or "1h", got {value!r}')
    if seconds <= 0:
        raise ConfigFileError(f"{where}: a duration must be positive, got {value!r}")
    return seconds


def read_document(path: Path) -> dict[str, Any]:
    """The parsed TOML of ``path``; ConfigFileError when it is missing or not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigFileError(f"{path}: configuration file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"{path}: not valid TOML: {exc}") from None


def check_known_keys(document: Mapping[str, Any], source: str) -> None:
    """Refuse a table or key the file does not define (one line: file, table, key)."""
    for table, value in document.items():
        if table == SUBSCRIPTIONS:
            continue
        known = FILE_KEYS.get(table)
        if known is None:
            raise ConfigFileError(
                f"{source}: [{table}] is not a table of the configuration file"
                f"{_suggestion(table, [*FILE_KEYS, SUBSCRIPTIONS])}"
            )
        entries = value if isinstance(value, list) else [value]
        for index, entry in enumerate(entries):
            if not isinstance(entry, Mapping):
                continue  # the table's own reader says what shape it needs
            unknown = sorted(set(entry) - set(known))
            if unknown:
                where = f"{table}[{index}]" if isinstance(value, list) else f"[{table}]"
                raise ConfigFileError(
                    f"{source}: {where} has no setting {unknown[0]!r}"
                    f"{_suggestion(unknown[0], known)}"
                )


def _suggestion(word: str, choices: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(choices)})"


def load_daemon_config(path: Path | None) -> DaemonConfig:
    """Read ``path`` (None: an empty configuration with the defaults)."""
    if path is None:
        return DaemonConfig()
    return parse_daemon_config(read_document(path), str(path))


def parse_daemon_config(document: Mapping[str, Any], source: str = "config") -> DaemonConfig:
    """Build a DaemonConfig from parsed TOML, checking every table, key and value."""
    check_known_keys(document, source)
    daemon = _table(document, "daemon", source)
    server = _table(document, "server", source)
    interval = parse_duration(
        daemon.get("interval", DEFAULT_INTERVAL_S), f"{source}: daemon.interval"
    )
    repos = tuple(
        _repo(entry, index, source) for index, entry in enumerate(_repo_list(document, source))
    )
    seen: set[str] = set()
    for repo in repos:
        if repo.repo_id in seen:
            raise ConfigFileError(f"{source}: repo {repo.repo_id!r} is listed twice")
        seen.add(repo.repo_id)
    secret = server.get("webhook_secret")
    if secret is not None and (not isinstance(secret, str) or not secret or not secret.isascii()):
        raise ConfigFileError(f"{source}: server.webhook_secret must be a non-empty ASCII string")
    return DaemonConfig(
        repos=repos,
        interval_s=interval,
        max_backoff_s=parse_duration(
            daemon.get("max_backoff", 6 * 3600), f"{source}: daemon.max_backoff"
        ),
        workers=_positive_int(daemon.get("workers", 4), f"{source}: daemon.workers"),
        tick_s=parse_duration(daemon.get("tick", 5), f"{source}: daemon.tick"),
        discovery_s=parse_duration(daemon.get("discovery", 300), f"{source}: daemon.discovery"),
        requests_per_second=_positive_float(
            daemon.get("requests_per_second", 5.0), f"{source}: daemon.requests_per_second"
        ),
        hub_budget=None
        if daemon.get("hub_budget") is None
        else HubBudget.parse(daemon["hub_budget"], f"{source}: daemon.hub_budget"),
        lease_s=parse_duration(daemon.get("lease", 300), f"{source}: daemon.lease"),
        hub_timeout_s=parse_duration(
            daemon.get("hub_timeout", 30), f"{source}: daemon.hub_timeout"
        ),
        host=str(server.get("host", DEFAULT_HOST)),
        port=_port(server.get("port", DEFAULT_PORT), f"{source}: server.port"),
        webhook_secret=secret,
        api_token=_api_token(server.get("api_token"), f"{source}: server.api_token"),
        instance=_instance(daemon.get("instance"), f"{source}: daemon.instance"),
        public_url=None if server.get("public_url") is None else str(server["public_url"]),
        subscriptions=parse_subscriptions(document, source),
        alerts=parse_alerts(_table(document, "alerts", source), source),
    )


def parse_alerts(table: Mapping[str, Any], source: str) -> AlertsConfig:
    """The ``[alerts]`` table, every duration checked."""
    default = AlertsConfig()
    check_known_keys({"alerts": table}, source)
    return AlertsConfig(
        tick_s=parse_duration(table.get("tick", default.tick_s), f"{source}: alerts.tick"),
        retry_base_s=parse_duration(
            table.get("retry_base", default.retry_base_s), f"{source}: alerts.retry_base"
        ),
        retry_max_delay_s=parse_duration(
            table.get("retry_max_delay", default.retry_max_delay_s),
            f"{source}: alerts.retry_max_delay",
        ),
        give_up_after_s=parse_duration(
            table.get("give_up_after", default.give_up_after_s), f"{source}: alerts.give_up_after"
        ),
        allow=_allow(table.get("allow", []), f"{source}: alerts.allow"),
    )


def parse_subscriptions(document: Mapping[str, Any], source: str) -> tuple[SubscriptionSpec, ...]:
    """The ``[[subscriptions]]`` tables; errors name ``subscriptions[i]`` and the field."""
    value = document.get("subscriptions", [])
    if not isinstance(value, list):
        raise ConfigFileError(
            f"{source}: subscriptions must be an array of tables ([[subscriptions]])"
        )
    if not value:
        return ()
    # Only now: the spec loads the estimator and storage, which `plan` and --help never need.
    from tracker.alerts.spec import SubscriptionError, parse_subscription

    specs: list[SubscriptionSpec] = []
    seen: dict[str, int] = {}
    for index, entry in enumerate(value):
        where = f"{source}: subscriptions[{index}]"
        try:
            spec = parse_subscription(entry, source=where)
        except SubscriptionError as exc:
            raise ConfigFileError(str(exc)) from None
        if spec.name in seen:
            raise ConfigFileError(
                f"{where}: name {spec.name!r} is already used by subscriptions[{seen[spec.name]}]"
            )
        seen[spec.name] = index
        specs.append(spec)
    return tuple(specs)


def _table(document: Mapping[str, Any], name: str, source: str) -> Mapping[str, Any]:
    value = document.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigFileError(f"{source}: [{name}] must be a table")
    return value


def _repo_list(document: Mapping[str, Any], source: str) -> list[Any]:
    value = document.get("repos", [])
    if not isinstance(value, list):
        raise ConfigFileError(f"{source}: repos must be an array of tables ([[repos]])")
    return value


def _repo(entry: Any, index: int, source: str) -> RepoConfig:
    # Here, not at the top: the repo id rules live in storage, which `plan` never loads.
    from tracker.hub.repo_id import validate_repo_id

    where = f"{source}: repos[{index}]"
    if isinstance(entry, str):
        entry = {"id": entry}
    if not isinstance(entry, Mapping) or "id" not in entry:
        raise ConfigFileError(f'{where} needs an id = "ORG/NAME"')
    try:
        repo_id = validate_repo_id(str(entry["id"]))
    except RepoIdError as exc:
        raise ConfigFileError(f"{where}: {exc}") from None
    interval = entry.get("interval")
    return RepoConfig(
        repo_id=repo_id,
        interval_s=None if interval is None else parse_duration(interval, f"{where}.interval"),
    )


def _api_token(value: Any, where: str) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value) < 16):
        raise ConfigFileError(f"{where} must be a string of 16+ characters")
    return value


def _allow(value: Any, where: str) -> AllowList:
    if not isinstance(value, list) or not all(isinstance(entry, str) for entry in value):
        raise ConfigFileError(f'{where} must be a list of strings ["10.0.0.0/8"]')
    try:
        return AllowList.parse(value, where)
    except AllowListError as exc:
        raise ConfigFileError(str(exc)) from None


def _instance(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or "/" in value:
        raise ConfigFileError(f"{where}: expected a non-empty name without '/', got {value!r}")
    return value


def _positive_int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigFileError(f"{where}: expected a positive integer, got {value!r}")
    return value


def _positive_float(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigFileError(f"{where}: expected a positive number, got {value!r}")
    return float(value)


def _port(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise ConfigFileError(f"{where}: expected a port number 0-65535, got {value!r}")
    return value


__all__ = [
    "FILE_KEYS",
    "AlertsConfig",
    "ConfigFileError",
    "DaemonConfig",
    "RepoConfig",
    "check_known_keys",
    "load_daemon_config",
    "parse_alerts",
    "parse_daemon_config",
    "parse_duration",
    "parse_subscriptions",
    "read_document",
]
