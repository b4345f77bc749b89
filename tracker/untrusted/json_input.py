"""Reading JSON that anyone could have published, with every failure one typed error.

``json.loads`` fails in three ways that are not ``JSONDecodeError``: nesting
deeper than the interpreter's stack (RecursionError; 100,000 ``[`` are 100 kB),
an integer longer than CPython's int-to-str limit (a plain ValueError: the
limit guards against quadratic conversion, CVE-2020-10735), and a document that
parses but nests deeper than the differs can walk (deepdiff needs seconds at
depth 400 and overflows the stack before 900). ``read_json`` turns all of them
into ``JsonInputError`` with a message that says where, so a hostile file is a
finding about its revision and never an exception in the middle of a check.

Python's json extensions NaN, Infinity and -Infinity are accepted, as
transformers accepts them (it reads configs with ``json.loads``); storage writes
them as strings, and the estimator refuses them where it needs a number.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, Final

from tracker.errors import JsonInputError, JsonSyntaxError

MAX_DEPTH: Final = 128
"""Nesting refused past this; serde_json's default recursion limit (serde_json 1.0,
src/de.rs ``remaining_depth: 128``), which is also what tokenizers and safetensors
apply. The deepest file of the recorded hub corpus nests 10 levels."""

MAX_INT_DIGITS: Final = sys.int_info.default_max_str_digits
"""4300 on CPython 3.11 (sys.int_info.default_max_str_digits): longer integers are refused."""


class _LongInteger:
    """Stands in for an integer too long to convert, so the error can name its key."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def read_json(data: bytes | str) -> Any:
    """One strict JSON document (UTF-8, a BOM allowed) of at most MAX_DEPTH levels."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise JsonSyntaxError(f"not UTF-8 at byte {exc.start}") from exc
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise JsonSyntaxError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    except RecursionError:
        raise JsonInputError(f"nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:  # an integer past the int-to-str limit
        raise JsonInputError(_long_integer_message(text)) from None
    # Too few brackets to nest that deep (configs, weight indexes): skip the walk.
    too_deep = (
        None
        if text.count("[") + text.count("{") <= MAX_DEPTH
        else _deeper_than(document, MAX_DEPTH)
    )
    if too_deep is not None:
        where = f"{too_deep} is " if too_deep else ""
        raise JsonInputError(f"{where}nested more than {MAX_DEPTH} levels deep")
    return document


def _parse_int(literal: str) -> int | _LongInteger:
    digits = len(literal.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _LongInteger(digits)
    try:
        return int(literal)
    except ValueError:  # the process runs with a lower sys.set_int_max_str_digits
        return _LongInteger(digits)


def _long_integer_message(text: str) -> str:
    """Parse again keeping long integers as markers, and name the first one's key."""
    try:
        document = json.loads(text, parse_int=_parse_int)
    except (RecursionError, ValueError):  # deep nesting after the long integer
        return "an integer is too long to read"
    for path, value in _walk(document):
        if isinstance(value, _LongInteger):
            where = path or "the document"
            return f"{where} (a {value.digits:,}-digit integer) is not a plausible number"
    return "an integer is too long to read"


def _walk(document: Any) -> Iterator[tuple[str, Any]]:
    """(dotted path, value) for every value, depth first, without recursion."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        yield path, value
        if isinstance(value, dict):
            items = [(f"{path}.{k}" if path else str(k), v) for k, v in value.items()]
            stack.extend(reversed(items))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{i}]", v) for i, v in enumerate(value)]))


def _deeper_than(document: Any, limit: int) -> str | None:
    """The top-level key ("" for the document itself) under which nesting passes ``limit``."""
    if isinstance(document, dict):
        for key, child in document.items():
            if _nests_past(child, 2, limit):
                return str(key)
        return None
    return "" if _nests_past(document, 1, limit) else None


def _nests_past(value: Any, depth: int, limit: int) -> bool:
    # json.loads builds exact dicts and lists, so ``type(...) is`` is safe and the fastest test.
    stack = [(value, depth)]
    while stack:
        value, depth = stack.pop()
        if type(value) is not dict and type(value) is not list:
            continue
        if depth > limit:
            return True
        children = value.values() if type(value) is dict else value
        stack.extend([(c, depth + 1) for c in children if type(c) is dict or type(c) is list])
    return False


__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "JsonInputError", "JsonSyntaxError", "read_json"]
