"""One settings object, built from defaults, the TOML file and the environment.

Precedence, lowest first: built-in defaults, the TOML file named by
``--config`` or ``NEURARCH_CONFIG``, then environment variables
(``NEURARCH_*`` and the Hub's own ``HF_ENDPOINT`` / ``HF_TOKEN``). Everything
below the CLI receives a ``Settings`` and never reads the environment itself.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

from tracker.alerts.egress import AllowList, AllowListError

DEFAULT_HF_ENDPOINT = "https://huggingface.co"


class SettingsError(Exception):
    """The configuration file or an environment variable is unusable."""


@dataclass(frozen=True)
class Settings:
    """Where the data lives and how the Hub is reached."""

    database_url: str
    data_dir: Path
    hf_endpoint: str = DEFAULT_HF_ENDPOINT
    hf_token: str | None = None
    api_token: str | None = None
    """Bearer token for /api/v1 (subscriptions); None: the API answers 401 to everyone."""
    alerts_allow: AllowList = field(default_factory=AllowList)
    """Internal receivers alerts may reach beside public addresses ([alerts] allow)."""

    @classmethod
    def load(
        cls, config_file: Path | None = None, environ: Mapping[str, str] | None = None
    ) -> Settings:
        env = os.environ if environ is None else environ
        data_dir = Path(
            env.get("NEURARCH_DATA_DIR") or platformdirs.user_data_dir("neurarch-trace")
        )
        settings = cls(
            database_url=f"sqlite:///{data_dir / 'neurarch-trace.db'}", data_dir=data_dir
        )
        path = config_file or (Path(env["NEURARCH_CONFIG"]) if env.get("NEURARCH_CONFIG") else None)
        if path is not None:
            settings = settings._with_file(path)
        return replace(
            settings,
            database_url=env.get("NEURARCH_DATABASE_URL") or settings.database_url,
            hf_endpoint=(env.get("HF_ENDPOINT") or settings.hf_endpoint).rstrip("/"),
            hf_token=env.get("HF_TOKEN") or settings.hf_token,
            api_token=env.get("NEURARCH_API_TOKEN") or settings.api_token,
            alerts_allow=_allow_from_env(env.get("NEURARCH_ALERTS_ALLOW")) or settings.alerts_allow,
        )

    def _with_file(self, path: Path) -> Settings:
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SettingsError(f"{path}: configuration file not found") from None
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"{path}: not valid TOML: {exc}") from None
        section = document.get("storage", {})
        hub = document.get("hub", {})
        server = document.get("server", {})
        token = server.get("api_token")
        if token is not None and (not isinstance(token, str) or len(token) < 16):
            raise SettingsError(f"{path}: server.api_token must be a string of 16+ characters")
        alerts = document.get("alerts", {})
        allow = alerts.get("allow", []) if isinstance(alerts, dict) else []
        if not isinstance(allow, list) or not all(isinstance(entry, str) for entry in allow):
            raise SettingsError(f'{path}: alerts.allow must be a list of strings ["10.0.0.0/8"]')
        try:
            alerts_allow = AllowList.parse(allow, f"{path}: alerts.allow")
        except AllowListError as exc:
            raise SettingsError(str(exc)) from None
        return replace(
            self,
            database_url=str(section.get("database_url", self.database_url)),
            hf_endpoint=str(hub.get("endpoint", self.hf_endpoint)),
            api_token=token,
            alerts_allow=alerts_allow,
        )


def _allow_from_env(value: str | None) -> AllowList | None:
    """NEURARCH_ALERTS_ALLOW: entries separated by commas or spaces; unset or blank: None."""
    entries = (value or "").replace(",", " ").split()
    if not entries:
        return None
    try:
        return AllowList.parse(entries, "NEURARCH_ALERTS_ALLOW")
    except AllowListError as exc:
        raise SettingsError(str(exc)) from None
