"""Which lock format a file is: the audit's own TOML, or Hermeto's ``huggingface.lock.yaml``."""

from __future__ import annotations

from pathlib import Path

from tracker.audit.hermeto import is_hermeto_lock, pins_from_hermeto_lock
from tracker.audit.pins import Pin, pins_from_lock_file


def pins_from_lock(path: Path) -> list[Pin]:
    """Every model of a lock file, in file order; YAML is Hermeto's (tracker.audit.hermeto)."""
    return pins_from_hermeto_lock(path) if is_hermeto_lock(path) else pins_from_lock_file(path)


__all__ = ["pins_from_lock"]
