"""Checks a value must pass before it is written, so both backends store it the same way.

PostgreSQL refuses NUL characters in text and JSONB while SQLite keeps them,
and SQLite drops time zones: rather than let one backend fail late with a
driver message and the other succeed, both refuse early with a message that
names the field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from storage.errors import InvalidRecord


def require_aware(value: datetime | None, where: str) -> None:
    """Refuse a naive datetime: storage keeps UTC and will not guess a time zone."""
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise InvalidRecord(f"{where}: datetime {value.isoformat()} has no time zone; pass UTC")


NUL_STAND_IN = "\ufffd"


def storable_text(value: Any) -> Any:
    """``value`` (a string or JSON structure, keys included) with each NUL shown as U+FFFD.

    For text that quotes upstream files (change messages and values, advisory
    summaries, alert payloads): a hostile file is recorded as what it says,
    with the one character PostgreSQL cannot hold replaced, on both backends.
    """
    if isinstance(value, str):
        return value.replace("\x00", NUL_STAND_IN)
    if isinstance(value, Mapping):
        return {storable_text(k): storable_text(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [storable_text(v) for v in value]
    return value


def require_text(value: Any, where: str) -> None:
    """Refuse NUL characters anywhere inside ``value`` (a string or JSON structure)."""
    if not _may_hold_nul(value):
        return
    found = _nul_at(value)
    if found is not None:
        raise InvalidRecord(
            f"{where}{found}: text contains a NUL character, which cannot be stored"
        )


def _may_hold_nul(value: Any) -> bool:
    """False when no string below ``value`` can hold a NUL; True when one may.

    Strings directly inside ``value`` (a file's text, a key) are searched as
    they are: a megabyte tokenizer_config.json costs a scan, not an escaped
    copy. What lies deeper (a plan, a weight manifest: thousands of short
    strings) goes through one pass of json's C encoder, which writes every NUL,
    in a key or a value, as the six characters ``\\u0000``; an encoding without
    them holds none. Text that spells those six characters itself only sends
    the value on to the walk, which decides; so does a value json cannot encode.
    """
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, Mapping):
        items = [*value.keys(), *value.values()]
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        return False
    if any("\x00" in item for item in items if isinstance(item, str)):
        return True
    deeper = [item for item in items if isinstance(item, Mapping | list | tuple)]
    try:
        return "\\u0000" in json.dumps(deeper, ensure_ascii=False, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return True


def _nul_at(value: Any) -> str | None:
    """Where a NUL sits below ``value`` ("" for itself, ".key", "[3]"), or None.

    The path is built only on the way back from a NUL: a weight manifest or a plan
    holds thousands of strings, and formatting a path for each cost more than the walk.
    """
    if isinstance(value, str):
        return "" if "\x00" in value else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            if _nul_at(key) is not None:
                return ""
            below = _nul_at(item)
            if below is not None:
                return f".{key}{below}"
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            below = _nul_at(item)
            if below is not None:
                return f"[{index}]{below}"
    return None
