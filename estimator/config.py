"""Typed, validated reads of config.json fields.

Every family module reads its config through ``Config`` so that a missing,
wrong-typed or absurd field becomes one ``ConfigError`` naming that field,
raised before any work proportional to the value is done (a config that
declares 10^9 layers is refused here, not after building 10^9 blocks).
Absent keys take the default the family passes, which mirrors the default
of the transformers configuration class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from estimator.errors import ConfigError

# Upper bounds well beyond any published model, low enough that a typo is caught.
MAX_LAYERS: Final = 10_000
MAX_WIDTH: Final = 1 << 20  # hidden, intermediate, head_dim, lora ranks
MAX_HEADS: Final = 1 << 16
MAX_VOCAB: Final = 1 << 24
MAX_POSITIONS: Final = 1 << 31
MAX_EXPERTS: Final = 1 << 16
MAX_LABELS: Final = 1 << 20
MAX_SMALL: Final = 1 << 16  # buckets, type vocab, group counts

_MISSING: Final = object()


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, Sequence):
        return "a list"
    return type(value).__name__


class Config:
    """A config.json object with typed getters; every failure names its field."""

    def __init__(self, raw: object, source: str = "config.json") -> None:
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{source}: expected a JSON object, got {_type_name(raw)}")
        self.raw: Mapping[str, object] = raw
        self.source = source

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {key} {problem}", field=key)

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def first_key(self, *keys: str) -> str | None:
        """The first of ``keys`` (aliases such as n_embd / hidden_size) present and not null."""
        for key in keys:
            if self.raw.get(key) is not None:
                return key
        return None

    def _as_int(self, key: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"must be an integer, got {_type_name(value)}")
        if isinstance(value, float):
            if not value.is_integer():
                raise self.error(key, f"must be an integer, got {value!r}")
            return int(value)
        return value

    def size(
        self,
        key: str,
        default: int | object = _MISSING,
        *,
        limit: int,
        minimum: int = 1,
        aliases: tuple[str, ...] = (),
    ) -> int:
        """A positive count or width, between ``minimum`` and ``limit``."""
        found = self.first_key(key, *aliases)
        if found is None:
            if default is _MISSING:
                raise self.error(key, "is missing")
            assert isinstance(default, int)
            return default
        value = self._as_int(found, self.raw[found])
        if value < minimum:
            raise self.error(found, f"({value}) must be at least {minimum}")
        if value > limit:
            raise self.error(found, f"({value}) is implausibly large (limit {limit})")
        return value

    def optional_size(
        self, key: str, *, limit: int, minimum: int = 1, aliases: tuple[str, ...] = ()
    ) -> int | None:
        if self.first_key(key, *aliases) is None:
            return None
        return self.size(key, limit=limit, minimum=minimum, aliases=aliases)

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {_type_name(value)}")
        return value

    def number(self, key: str, default: float | None) -> float | None:
        value = self.raw.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"must be a number, got {_type_name(value)}")
        return float(value)

    def text(self, key: str, default: str) -> str:
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {_type_name(value)}")
        return value

    def optional_text(self, key: str) -> str | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {_type_name(value)}")
        return value

    def texts(self, key: str, *, length: int | None = None) -> tuple[str, ...] | None:
        """A list of strings (layer_types, architectures); ``length`` is checked when given."""
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(key, f"must be a list of strings, got {_type_name(value)}")
        if length is not None and len(value) != length:
            raise self.error(key, f"has {len(value)} entries, expected {length}")
        if len(value) > MAX_LAYERS:
            raise self.error(key, f"has {len(value)} entries (limit {MAX_LAYERS})")
        for item in value:
            if not isinstance(item, str):
                raise self.error(key, f"must be a list of strings, found {_type_name(item)}")
        return tuple(value)

    def ints(self, key: str, *, limit: int, minimum: int = 0) -> tuple[int, ...] | None:
        """A list of integers such as mlp_only_layers."""
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(key, f"must be a list of integers, got {_type_name(value)}")
        if len(value) > MAX_LAYERS:
            raise self.error(key, f"has {len(value)} entries (limit {MAX_LAYERS})")
        out = tuple(self._as_int(key, item) for item in value)
        for item in out:
            if not minimum <= item <= limit:
                raise self.error(key, f"entry {item} is outside {minimum}..{limit}")
        return out

    def mapping(self, key: str) -> Mapping[str, object] | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise self.error(key, f"must be an object, got {_type_name(value)}")
        return value

    def divides(self, divisor_key: str, divisor: int, dividend_key: str, dividend: int) -> None:
        """Raise when ``divisor`` does not divide ``dividend`` (heads into hidden size)."""
        if dividend % divisor:
            raise ConfigError(
                f"{self.source}: {divisor_key} ({divisor}) must divide {dividend_key} ({dividend})",
                field=divisor_key,
            )
