"""Typed, validated reads of config.json fields.

Every family module reads its config through ``Config`` so that a missing,
wrong-typed or absurd field becomes one ``ConfigError`` naming that field,
raised before any work proportional to the value is done (a config that
declares 10^9 layers is refused here, not after building 10^9 blocks).
Absent keys take the default the family passes, which mirrors the default
of the transformers configuration class.

Numbers are shown safely: Python's json accepts NaN, Infinity and 1e400
(read as inf), and an integer of thousands of digits cannot even be printed
(CPython refuses str() past sys.int_info.default_max_str_digits), so every
message goes through ``shown`` rather than formatting the raw value.
"""

from __future__ import annotations

import math
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
MAX_ROPE_FACTOR: Final = 1 << 16  # published rope_scaling factors are 2 to 64
MAX_NAME: Final = 256  # model_type, activations, architectures: published names are < 64
MAX_SHOWN_DIGITS: Final = 24  # integers longer than this are described by their length

_MISSING: Final = object()


def decimal_digits(value: int) -> int:
    """How many decimal digits ``abs(value)`` has, without converting it to a string."""
    magnitude = abs(value)
    if magnitude < 10:
        return 1
    digits = int(math.log10(magnitude)) + 1  # float rounding may be off by one either way
    if 10 ** (digits - 1) > magnitude:
        digits -= 1
    elif 10**digits <= magnitude:
        digits += 1
    return digits


def shown(value: object) -> str:
    """A config value as a message shows it: JSON spelling for non-finite numbers, long
    integers by their length ("a 5,000-digit integer"), long strings by their size."""
    if isinstance(value, bool) or value is None:
        return _type_name(value)
    if isinstance(value, int):
        digits = decimal_digits(value)
        if digits <= MAX_SHOWN_DIGITS:
            return str(value)
        sign = "negative " if value < 0 else ""
        return f"a {digits:,}-digit {sign}integer"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, str):
        return repr(value) if len(value) <= MAX_NAME else f"a {len(value):,}-character string"
    return _type_name(value)


def _too_large(value: int) -> str:
    return (
        "is not a plausible size"
        if decimal_digits(value) > MAX_SHOWN_DIGITS
        else ("is implausibly large")
    )


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
        # Sizes the config did not give, with the default the estimate used instead
        # (the verifier names each one: a misspelt key silently takes a default).
        self.defaulted: dict[str, int] = {}

    def error(self, key: str, problem: str) -> ConfigError:
        """A ConfigError naming ``key`` and the file; the caller raises it."""
        return ConfigError(f"{self.source}: {key} {problem}", field=key)

    def has(self, key: str) -> bool:
        """True when ``key`` is present and not null: transformers reads null as absent."""
        return self.raw.get(key) is not None

    def first_key(self, *keys: str) -> str | None:
        """The first of ``keys`` (aliases such as n_embd / hidden_size) present and not null."""
        for key in keys:
            if self.raw.get(key) is not None:
                return key
        return None

    def _as_int(self, key: str, value: object, limit: int | None = None) -> int:
        """``value`` as an int; an integral float (4096.0) is accepted, as json writes them.

        With ``limit``, a float beyond it is refused before conversion, so 1e300
        is reported as written rather than as a 301-digit integer.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(key, f"must be an integer, got {_type_name(value)}")
        if isinstance(value, float):
            if not value.is_integer():  # False for NaN and the infinities too
                raise self.error(key, f"must be an integer, got {shown(value)}")
            if limit is not None and value > limit:
                raise self.error(key, f"({shown(value)}) is implausibly large (limit {limit})")
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
            self.defaulted.setdefault(key, default)
            return default
        value = self._as_int(found, self.raw[found], limit)
        if value < minimum:
            raise self.error(found, f"({shown(value)}) must be at least {minimum}")
        if value > limit:
            raise self.error(found, f"({shown(value)}) {_too_large(value)} (limit {limit})")
        return value

    def optional_size(
        self, key: str, *, limit: int, minimum: int = 1, aliases: tuple[str, ...] = ()
    ) -> int | None:
        """As ``size``, but None when neither ``key`` nor an alias is given; records no default."""
        if self.first_key(key, *aliases) is None:
            return None
        return self.size(key, limit=limit, minimum=minimum, aliases=aliases)

    def flag(self, key: str, default: bool) -> bool:
        """A boolean; ``default`` when absent or null, ConfigError for anything but true/false."""
        value = self.raw.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false, got {_type_name(value)}")
        return value

    def number(self, key: str, default: float | None) -> float | None:
        """A finite float (rope_theta, dropout); NaN, the infinities and ints past float range
        are refused here, so no arithmetic downstream meets them."""
        value = self.raw.get(key)
        if value is None:
            return default
        return finite_number(self, key, value)

    def text(self, key: str, default: str) -> str:
        """As ``optional_text``, with ``default`` standing in for an absent or null key."""
        value = self.optional_text(key)
        return default if value is None else value

    def optional_text(self, key: str) -> str | None:
        """A short name (model_type, an activation); a 10 MB string is refused, not echoed."""
        value = self.raw.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.error(key, f"must be a string, got {_type_name(value)}")
        if len(value) > MAX_NAME:
            raise self.error(key, f"({shown(value)}) is not a plausible name (limit {MAX_NAME})")
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
            if len(item) > MAX_NAME:
                raise self.error(key, f"entry {shown(item)} is not a plausible name")
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
        out = tuple(self._as_int(key, item, limit) for item in value)
        for item in out:
            if not minimum <= item <= limit:
                raise self.error(key, f"entry {shown(item)} is outside {minimum}..{limit}")
        return out

    def mapping(self, key: str) -> Mapping[str, object] | None:
        """A nested object (rope_scaling, text_config); None when absent, ConfigError if not one."""
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


def finite_number(cfg: Config, key: str, value: object) -> float:
    """``value`` as a finite float, or the ConfigError naming ``key`` (which may be dotted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise cfg.error(key, f"must be a number, got {_type_name(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int past 1.8e308
        raise cfg.error(key, f"({shown(value)}) is beyond the range of a number") from None
    if not math.isfinite(number):
        raise cfg.error(key, f"must be a finite number, got {shown(value)}")
    return number
