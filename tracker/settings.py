"""One settings object, built once from defaults, the TOML file and the environment.

Precedence, lowest first: built-in defaults, the TOML file named by
``--config`` or ``NEURARCH_CONFIG``, then environment variables
(``NEURARCH_*`` and the Hub's own ``HF_ENDPOINT`` / ``HF_TOKEN``). The file is
read once, here; its sections become the sections of ``Settings``:

    Settings
    ├── storage   StorageSettings   [storage], NEURARCH_DATABASE_URL, NEURARCH_DATA_DIR
    ├── hub       HubSettings       [hub], HF_ENDPOINT, HF_TOKEN
    └── daemon    DaemonConfig      [daemon], [server], [alerts], [[repos]], [[subscriptions]],
                                    NEURARCH_API_TOKEN, NEURARCH_ALERTS_ALLOW

Only the top (tracker.cli) calls ``Settings.load``; everything below it
receives a ``Settings`` (or one of its sections) and never reads the
environment or the file itself. feeds, which never imports tracker, takes
its own ``feeds.settings.PublishSettings``, built by tracker.daemon from these.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

from tracker.alerts.egress import AllowList, AllowListError
from tracker.config_file import FILE_KEYS, DaemonConfig, parse_daemon_config, read_document
from tracker.errors import SettingsError

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

FILE_SETTINGS = tuple(f"{table}.{key}" for table, keys in FILE_KEYS.items() for key in keys)
"""Every key of the TOML file (``[[subscriptions]]`` tables have tracker.alerts.spec's fields);
deploy/neurarch-trace.example.toml shows each, and the docs test checks README names each."""


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
        env = os.environ if environ is None else environ
        data_dir = Path(
            env.get("NEURARCH_DATA_DIR") or platformdirs.user_data_dir("neurarch-trace")
        )
        settings = cls.in_dir(data_dir)
        path = config_file or (Path(env["NEURARCH_CONFIG"]) if env.get("NEURARCH_CONFIG") else None)
        if path is not None:
            settings = settings.with_document(read_document(path), str(path), path)
        return settings.with_environment(env)

    def with_document(
        self, document: Mapping[str, object], source: str, path: Path | None = None
    ) -> Settings:
        """These settings under a parsed TOML document (errors name ``source``)."""
        daemon = parse_daemon_config(document, source)  # checks every table and key first
        storage = _table(document, "storage", source)
        hub = _table(document, "hub", source)
        return replace(
            self,
            storage=replace(
                self.storage,
                database_url=str(storage.get("database_url", self.storage.database_url)),
            ),
            hub=replace(self.hub, endpoint=str(hub.get("endpoint", self.hub.endpoint))),
            daemon=daemon,
            config_file=path,
        )

    def with_environment(self, env: Mapping[str, str]) -> Settings:
        """These settings with the environment's variables over them."""
        allow = _allow_from_env(env.get("NEURARCH_ALERTS_ALLOW"))
        daemon = self.daemon
        return replace(
            self,
            storage=replace(
                self.storage,
                database_url=env.get("NEURARCH_DATABASE_URL") or self.storage.database_url,
            ),
            hub=HubSettings(
                endpoint=(env.get("HF_ENDPOINT") or self.hub.endpoint).rstrip("/"),
                token=env.get("HF_TOKEN") or self.hub.token,
            ),
            daemon=replace(
                daemon,
                api_token=env.get("NEURARCH_API_TOKEN") or daemon.api_token,
                alerts=daemon.alerts if allow is None else replace(daemon.alerts, allow=allow),
            ),
        )


def _table(document: Mapping[str, object], name: str, source: str) -> Mapping[str, object]:
    value = document.get(name, {})
    if not isinstance(value, Mapping):
        raise SettingsError(f"{source}: [{name}] must be a table")
    return value


def _allow_from_env(value: str | None) -> AllowList | None:
    """NEURARCH_ALERTS_ALLOW: entries separated by commas or spaces; unset or blank: None."""
    entries = (value or "").replace(",", " ").split()
    if not entries:
        return None
    try:
        return AllowList.parse(entries, "NEURARCH_ALERTS_ALLOW")
    except AllowListError as exc:
        raise SettingsError(str(exc)) from None


__all__ = [
    "DEFAULT_HF_ENDPOINT",
    "ENVIRONMENT",
    "FILE_SETTINGS",
    "HubSettings",
    "Settings",
    "SettingsError",
    "StorageSettings",
]
