"""How JSON columns are written, so SQLite and PostgreSQL hand back the same value.

Three things differ between the backends when the defaults are left alone:

- SQLite gives a column declared ``JSON`` NUMERIC affinity (sqlite.org/datatype3.html,
  3.1 rule 5), so a document that is a bare number is converted on the way in: a text
  ``2567...`` past 2**63 - 1 becomes the REAL 2.567016670937576e+71, and ``1.0`` becomes
  the INTEGER 1. PostgreSQL's ``json`` keeps the text. Such documents are bound as a
  BLOB, which SQLite stores byte for byte under any affinity (datatype3.html, 3:
  "A column with NUMERIC affinity ... BLOB ... stored as is"); ``json.loads`` reads the
  bytes back. Objects, lists and strings start with ``{`` ``[`` ``"`` and stay TEXT.
- Python writes NaN and the infinities as the bare tokens ``NaN`` / ``Infinity``, which
  PostgreSQL refuses ("Token "NaN" is invalid") and SQLite keeps: the same revision
  would be stored on one backend and fail on the other. Both store them as the strings
  ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``, the spelling of the file they came from.
- An integer longer than CPython's int-to-str limit (4,300 digits) cannot be written by
  ``json.dumps`` at all; it is stored as the string of its digits (``decimal`` converts
  without that limit), so the row is written and reads back the same everywhere.

A writer that has encoded a value already (to learn whether it needed repair) binds
the text to the column as ``Encoded``: both engines' serializers are ``dumps``
(directly, or through ``dumps_for_sqlite``), which hands it back as it is, so the
value is not encoded a second time.

Nothing queries inside JSON columns, so a BLOB row is invisible to every reader but
``json.loads``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from storage.values import holds_unstorable, holds_unstorable_escape, storable_text

NON_FINITE: Final = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


@dataclass(frozen=True, slots=True)
class Encoded:
    """A JSON column's value already written by ``dumps``: bound as ``text``, not encoded again."""

    text: str


def dumps(value: Any) -> str:
    """``value`` as standard JSON (RFC 8259), as both backends store it.

    NUL and lone surrogates (which PostgreSQL refuses in ``json`` and no
    reader can print) are written as U+FFFD (``storage.values``). An ``Encoded``
    value is its text.
    """
    if type(value) is Encoded:
        return value.text
    return dumps_repaired(value)[0]


def dumps_repaired(value: Any) -> tuple[str, bool]:
    """``dumps``, and whether a NUL or lone surrogate had to be replaced to write it.

    The common case costs one encode: the escapes json writes for those characters
    are looked for in its output, and only a value whose output holds one is walked.
    """
    text, repaired, _ = _encoded(value)
    return text, repaired


def encoded_repaired(value: Any) -> tuple[Encoded, bool]:
    """``value`` encoded once for a JSON column (``Encoded``), and whether
    ``storage.values.holds_unstorable`` finds a character in it to replace.

    That check is what a snapshot's columns were checked with before they were
    encoded once, and it also answers yes for a value json cannot write as it is (an
    integer past the int-to-str limit); where the value needed ``standard`` it decides,
    so such a revision still carries the finding it always did.
    """
    text, repaired, standardized = _encoded(value)
    return Encoded(text), holds_unstorable(value) if standardized else repaired


def _encoded(value: Any) -> tuple[str, bool, bool]:
    """``dumps_repaired``, and whether ``value`` needed ``standard`` to be written."""
    standardized = False
    try:
        text = json.dumps(value, allow_nan=False)
    except ValueError:
        standardized = True
        text = json.dumps(standard(value), allow_nan=False)
    if not holds_unstorable_escape(text):
        return text, False, standardized
    repaired = storable_text(value)
    if repaired is value:  # an escaped valid surrogate pair: nothing to replace
        return text, False, standardized
    return json.dumps(standard(repaired), allow_nan=False), True, standardized


def dumps_for_sqlite(value: Any) -> str | bytes:
    """``dumps``, as bytes when the document is a bare number (see the module docstring)."""
    text = dumps(value)
    return text.encode() if text[:1] in _NUMBER_START else text


_NUMBER_START: Final = frozenset("-0123456789")


def standard(value: Any) -> Any:
    """``value`` with every number JSON cannot carry portably replaced by its text."""
    if isinstance(value, float) and not math.isfinite(value):
        return NON_FINITE[repr(value)]
    if isinstance(value, int) and not isinstance(value, bool):
        return value if _writable(value) else format(Decimal(value), "f")
    if isinstance(value, dict):
        return {key: standard(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [standard(item) for item in value]
    return value


def _writable(value: int) -> bool:
    try:
        repr(value)
    except ValueError:  # past sys.get_int_max_str_digits()
        return False
    return True


__all__ = [
    "NON_FINITE",
    "Encoded",
    "dumps",
    "dumps_for_sqlite",
    "dumps_repaired",
    "encoded_repaired",
    "standard",
]
