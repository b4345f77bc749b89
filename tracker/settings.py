"""One settings object, built once from defaults, the TOML file and the environment.

Precedence, lowest first: built-in defaults (the dataclasses below), the TOML
file named by ``--config`` or ``NEURARCH_CONFIG``, then environment variables
(``NEURARCH_*`` and the Hub's own ``HF_ENDPOINT`` / ``HF_TOKEN``). The file and
the environment are read once, by tracker.config_file; its sections become the
sections of ``Settings``:

    Settings
    ├── storage   StorageSettings   [storage], NEURARCH_DATABASE_URL, NEURARCH_DATA_DIR
    ├── hub       HubSettings       [hub], HF_ENDPOINT, HF_TOKEN
    └── daemon    DaemonConfig      [daemon], [server], [alerts], [[repos]], [[subscriptions]],
                                    NEURARCH_API_TOKEN, NEURARCH_ALERTS_ALLOW

Only the top (tracker.cli) calls ``Settings.load``; everything below it
receives a ``Settings`` (or one of its sections) and never reads the
environment or the file itself. feeds, which never imports tracker, takes
its own ``feeds.settings.PublishSettings``, built by tracker.daemon from these.
The values here are plain frozen dataclasses, so a command that never reads
the file (``history`` answered by a daemon) does not import pydantic.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tracker.alerts.egress import AllowList
from tracker.errors import ConfigFileError, SettingsError
from tracker.hub.budget import HubBudget

if TYPE_CHECKING:
    from storage import RepoId
    from tracker.alerts.spec import SubscriptionSpec

DEFAULT_HF_ENDPOINT = "https://huggingface.co"
DATABASE_FILE = "neurarch-trace.db"
ENVIRONMENT = (
    "NEURARCH_CONFIG",
    "NEURARCH_DATA_DIR",
    "NEURARCH_DATABASE_URL",
    "NEURARCH_API_TOKEN",
    "NEURARCH_ALERTS_ALLOW",
    "HF_ENDPOINT",
    "HF_TOKEN",
)
"""Every environment variable ``Settings.load`` reads (the docs test checks each is documented)."""


@dataclass(frozen=True)
class StorageSettings:
    """Where the data lives: the database and the directory of the default SQLite file."""

    database_url: str
    data_dir: Path

    @classmethod
    def in_dir(cls, data_dir: Path) -> StorageSettings:
        """The default: a SQLite file in ``data_dir``."""
        return cls(database_url=f"sqlite:///{data_dir / DATABASE_FILE}", data_dir=data_dir)


@dataclass(frozen=True)
class HubSettings:
    """How the Hub is reached (huggingface_hub's own variables win over the file)."""

    endpoint: str = DEFAULT_HF_ENDPOINT
    token: str | None = None


@dataclass(frozen=True)
class RepoConfig:
    """One followed repo; ``interval_s`` None means the daemon-wide default."""

    repo_id: RepoId
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
    interval_s: float = 3600.0
    max_backoff_s: float = 6 * 3600.0
    workers: int = 4
    tick_s: float = 5.0
    discovery_s: float = 300.0
    requests_per_second: float = 5.0
    hub_budget: HubBudget | None = None
    """The account's Hub requests per window, shared by every instance (tracker.hub.budget)."""
    lease_s: float = 300.0
    hub_timeout_s: float = 30.0
    host: str = "127.0.0.1"
    port: int = 8080
    webhook_secret: str | None = None
    api_token: str | None = None
    """Bearer token for /api/v1 (subscriptions); None: the API answers 401 to everyone."""
    instance: str | None = None
    """This instance's name in lease owners; unique per database (default host:port)."""
    public_url: str | None = None
    """Where users reach the app (links in feeds and advisories); default http://host:port."""
    subscriptions: tuple[SubscriptionSpec, ...] = ()
    """The file's ``[[subscriptions]]``, validated; stored when the daemon starts."""
    alerts: AlertsConfig = AlertsConfig()


@dataclass(frozen=True)
class Settings:
    """Everything configurable, by section; see the module docstring for the sources."""

    storage: StorageSettings
    hub: HubSettings = HubSettings()
    daemon: DaemonConfig = field(default_factory=DaemonConfig)
    config_file: Path | None = None
    """The TOML file these were read from, if any."""

    @classmethod
    def in_dir(cls, data_dir: Path) -> Settings:
        """The built-in defaults with the data (and SQLite file) in ``data_dir``."""
        return cls(storage=StorageSettings.in_dir(data_dir))

    @classmethod
    def load(
        cls, config_file: Path | None = None, environ: Mapping[str, str] | None = None
    ) -> Settings:
        """Defaults, then ``config_file`` (else ``NEURARCH_CONFIG``), then the environment."""
        import platformdirs

        from tracker.config_file import read_settings

        env = os.environ if environ is None else environ
        data_dir = Path(
            env.get("NEURARCH_DATA_DIR") or platformdirs.user_data_dir("neurarch-trace")
        )
        path = config_file or (Path(env["NEURARCH_CONFIG"]) if env.get("NEURARCH_CONFIG") else None)
        return read_settings(cls.in_dir(data_dir), path, env)

    def with_document(self, document: Mapping[str, object], source: str) -> Settings:
        """These settings under a parsed TOML document (errors name ``source``)."""
        from tracker.config_file import parse_document

        return parse_document(document, source).over(self, source, {})


__all__ = [
    "DEFAULT_HF_ENDPOINT",
    "ENVIRONMENT",
    "AlertsConfig",
    "ConfigFileError",
    "DaemonConfig",
    "HubSettings",
    "RepoConfig",
    "Settings",
    "SettingsError",
    "StorageSettings",
]
