"""Checks and repairs a value gets before it is written, so both backends store it the same way.

PostgreSQL refuses NUL characters in text and JSON while SQLite keeps them;
neither driver can encode a lone surrogate (``"\\ud800"`` in a JSON or YAML
file is valid and parses to one); SQLite drops time zones. What names our own
records (ids, keys, times) is refused early with a message naming the field.
What quotes upstream (commit titles, paths, cards, configs, manifests, change
values) is made storable instead, each such character shown as U+FFFD: one
hostile character must never keep a revision, and so every later one, from
being recorded. The same repair runs on every JSON value read back, so rows
stored before it existed read without failing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from storage.errors import InvalidRecord


def require_aware(value: datetime | None, where: str) -> None:
    """Refuse a naive datetime: storage keeps UTC and will not guess a time zone."""
    if value is not None and (value.tzinfo is None or value.utcoffset() is None):
        raise InvalidRecord(f"{where}: datetime {value.isoformat()} has no time zone; pass UTC")


NUL_STAND_IN = "\ufffd"
"""What stands in for a character no backend can store: NUL, or half of a surrogate pair."""

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
"""NUL (PostgreSQL refuses it) and surrogates: a Python str holds one only where JSON or YAML
spelled a lone ``\\ud800``, and neither UTF-8 driver can encode it."""

_ESCAPED_UNSTORABLE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
"""How json writes those characters with ``ensure_ascii``: ``\\u0000``, ``\\ud800``.
A valid pair (``\\ud83d\\ude00``) matches too, which only costs the walk that finds nothing."""


def storable_text(value: Any) -> Any:
    """``value`` (a string or JSON structure, keys included) with NUL and lone surrogates as U+FFFD.

    Everything upstream can commit must be recordable: a hostile file is
    recorded as what it says, with the characters no backend can hold
    replaced, on both backends. The common case costs one C-speed check and
    returns ``value`` itself.
    """
    if isinstance(value, str):
        return _UNSTORABLE.sub(NUL_STAND_IN, value) if _UNSTORABLE.search(value) else value
    if not isinstance(value, Mapping | list | tuple):
        return value
    return _walk(value) if holds_unstorable(value) else value


def holds_unstorable(value: Any) -> bool:
    """Whether ``value`` holds, anywhere below it, a character ``storable_text`` would replace."""
    if isinstance(value, str):
        return _UNSTORABLE.search(value) is not None
    if not isinstance(value, Mapping | list | tuple):
        return False
    try:
        encoded = json.dumps(value, check_circular=False)
    except (TypeError, ValueError, RecursionError):
        return True  # the walk decides
    return _ESCAPED_UNSTORABLE.search(encoded) is not None and _found(value)


def any_unstorable(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` holds a character ``storable_text`` would replace: one search
    over them joined (a file list's paths), no JSON written."""
    return _UNSTORABLE.search("\n".join(texts)) is not None


def holds_unstorable_escape(encoded: str) -> bool:
    """Whether JSON text written with ``ensure_ascii`` may spell NUL or a lone surrogate."""
    return _ESCAPED_UNSTORABLE.search(encoded) is not None


def loads_storable(text: str | bytes) -> Any:
    """``json.loads`` for rows already stored: a lone surrogate written before storage replaced
    them (SQLite keeps the escape) comes back as U+FFFD, so no reader fails on it."""
    value = json.loads(text)
    raw = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return _walk(value) if _ESCAPED_UNSTORABLE.search(raw) else value


def _found(value: Any) -> bool:
    if isinstance(value, str):
        return _UNSTORABLE.search(value) is not None
    if isinstance(value, Mapping):
        return any(_found(k) or _found(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_found(v) for v in value)
    return False


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return _UNSTORABLE.sub(NUL_STAND_IN, value)
    if isinstance(value, Mapping):
        return {_walk(k) if isinstance(k, str) else k: _walk(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_walk(v) for v in value]
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
    if not deeper:
        return False
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
