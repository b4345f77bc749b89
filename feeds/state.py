"""What every route of the app shares: the database and the settings."""

from __future__ import annotations

from dataclasses import dataclass

from feeds.settings import PublishSettings
from storage import Database


@dataclass(frozen=True)
class AppState:
    database: Database
    settings: PublishSettings


__all__ = ["AppState"]
