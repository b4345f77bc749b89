"""What every route of the app shares: the database and the settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from feeds.cache import RenderCache
from feeds.settings import PublishSettings
from storage import Database


@dataclass(frozen=True)
class AppState:
    database: Database
    settings: PublishSettings
    cache: RenderCache[Any] = field(default_factory=RenderCache)


__all__ = ["AppState"]
