"""The offline demo: histories that ship inside the package, replayed through the Hub emulator."""

from __future__ import annotations

from pathlib import Path

HISTORIES = Path(__file__).resolve().parent / "histories"
"""A corpus directory (MANIFEST.json, EVENTS.json, ORG/NAME/REVISION/PATH) of our own demo repos."""

__all__ = ["HISTORIES"]
