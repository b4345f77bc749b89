"""What every route of the app shares: the database and the settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from feeds.cache import LogVersion, RenderCache
from feeds.settings import PublishSettings
from storage import Database
from storage.publishing import log_version


@dataclass(frozen=True)
class AppState:
    database: Database
    settings: PublishSettings
    cache: RenderCache[Any] = field(default_factory=RenderCache)
    log: LogVersion[tuple[datetime | None, datetime | None]] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "log", LogVersion(self._read_version, self.settings.log_poll_seconds)
        )

    def _read_version(self) -> tuple[datetime | None, datetime | None]:
        with self.database.read_session() as session:
            return log_version(session)


__all__ = ["AppState"]
