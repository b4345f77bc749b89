"""What a chat template may ask for: checks that refuse a costly operation before it runs.

jinja2's sandbox keeps a template away from Python's internals; it does not
bound what the allowed operations cost. Several run in C, where neither a
trace hook nor a signal handler can stop them until they finish:
``((9**64)**64)**64`` is a multi-megabit power, ``'x'|center(900000000)`` and
``'{:>900000000}'.format(1)`` allocate a gigabyte. Each check here estimates
the size of the result from the operands (cheaply) and raises RenderLimit
when it would pass its cap. The isolated worker's address-space and time
limits stay as the backstop for whatever no check foresees.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from tracker.errors import RenderError, RenderLimit

MAX_OUTPUT_CHARS = 1_000_000
"""A rendered prompt, or any string a template builds, longer than this is refused."""
MAX_REPEAT = 100_000
"""Items a sequence may be repeated to with ``*``."""
MAX_WIDTH = 10_000
"""Padding, format width and precision, indent, wrap width, batch and slice counts."""
# Python 3.11 refuses to print an int of more than sys.int_info.default_max_str_digits
# (4300) decimal digits, so a larger one can never reach a prompt: 4300 * log2(10) bits.
MAX_INT_BITS = int(sys.int_info.default_max_str_digits * math.log2(10))
# printf-style conversion specs (Python's "printf-style String Formatting"): the
# optional mapping key, flags, width and precision, then the conversion type.
_PRINTF_SPEC = re.compile(
    r"%(?:\([^)]*\))?[#0\- +]*(?P<width>\*|\d+)?(?:\.(?P<precision>\*|\d*))?[hlL]?[a-zA-Z%]"
)
_DIGITS = re.compile(r"\d+")


def check_power(left: Any, right: Any) -> None:
    """Refuse an integer power whose result would pass MAX_INT_BITS (estimated, not computed)."""
    if not (isinstance(left, int) and isinstance(right, int)) or right <= 0 or abs(left) <= 1:
        return
    bits = right * math.log2(abs(left))
    if bits > MAX_INT_BITS:
        raise RenderLimit(
            f"integer power {_short(left)}**{_short(right)} would have ~{bits:,.0f} bits "
            f"(limit {MAX_INT_BITS:,})"
        )


def check_product(left: Any, right: Any) -> None:
    """Refuse ``*`` that repeats a sequence past MAX_REPEAT or multiplies past MAX_INT_BITS."""
    if isinstance(left, int) and isinstance(right, int):
        bits = left.bit_length() + right.bit_length()
        if bits > MAX_INT_BITS:
            raise RenderLimit(f"integer product of ~{bits:,} bits (limit {MAX_INT_BITS:,})")
        return
    for seq, count in ((left, right), (right, left)):
        sized = isinstance(seq, str | list | tuple) and isinstance(count, int)
        if sized and len(seq) * count > MAX_REPEAT:
            raise RenderLimit(
                f"repeating a sequence to {len(seq) * count:,} items (limit {MAX_REPEAT:,})"
            )


def check_sum(left: Any, right: Any) -> None:
    """Refuse ``+`` that concatenates strings or sequences past MAX_OUTPUT_CHARS."""
    sized = (str, list, tuple)
    if isinstance(left, sized) and isinstance(right, sized):
        check_size("concatenation", len(left) + len(right))


def check_printf(template: Any, values: Any) -> None:
    """Refuse ``'%900000000d' % 1`` (and ``*`` widths fed a huge number) before formatting."""
    if not isinstance(template, str):
        return
    starred = False
    for spec in _PRINTF_SPEC.finditer(template):
        for part in ("width", "precision"):
            given = spec.group(part)
            if given == "*":
                starred = True
            elif given:
                check_width(f"%-format {part}", int(given))
    if starred:
        given_values = values if isinstance(values, tuple) else (values,)
        for value in given_values:
            if isinstance(value, int):
                check_width("%-format * width", abs(value))


def check_format_spec(spec: str) -> None:
    """Refuse a ``str.format`` spec with a width or precision above MAX_WIDTH.

    Every digit run counts (a fill character may be a digit): that can only
    over-estimate, and no real template pads past a few hundred columns.
    """
    for digits in _DIGITS.findall(spec):
        check_width("format width/precision", _bounded_int(digits))


def check_width(what: str, width: Any) -> None:
    """Refuse a padding/format width (an int) above MAX_WIDTH; other types are not ours."""
    if isinstance(width, int) and width > MAX_WIDTH:
        raise RenderLimit(f"{what} {_short(width)} exceeds {MAX_WIDTH:,}")


def check_size(what: str, size: int) -> None:
    """Refuse a string or sequence that would grow past MAX_OUTPUT_CHARS."""
    if size > MAX_OUTPUT_CHARS:
        raise RenderLimit(f"{what} would pass the {MAX_OUTPUT_CHARS:,}-character limit")


def replaced_size(text: str, old: Any, new: Any, count: Any = -1) -> int:
    """Length of ``text.replace(old, new, count)`` without building it."""
    if not (isinstance(old, str) and isinstance(new, str)):
        return len(text)
    hits = len(text) + 1 if old == "" else text.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(text) + hits * (len(new) - len(old))


def joined_size(separator: str, items: list[Any]) -> int:
    """Length of ``separator.join(items)`` (non-strings as their printed size)."""
    budget = MAX_OUTPUT_CHARS + 1
    total = len(separator) * max(0, len(items) - 1)
    for item in items:
        if total > budget:
            break
        total += len(item) if isinstance(item, str) else printed_size(item, budget - total)
    return total


def printed_size(value: Any, budget: int = MAX_OUTPUT_CHARS + 1) -> int:
    """About how many characters ``str(value)`` or JSON of it would be (at most ``budget + 1``).

    A template can build a list that holds one list twice, 64 levels deep: a
    few hundred bytes of memory that print as 2**64 items. Each distinct
    container is sized once (its size remembered by identity), so this costs
    the number of objects, not the length of their text; a container met again
    on its own path (a cycle) counts as its placeholder.
    """
    if not _is_container(value):
        return _leaf_size(value)
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack = [value]
    while stack:
        item = stack[-1]
        key = id(item)
        if key in sizes:
            stack.pop()
            continue
        children = _children(item)
        if key not in open_:
            open_.add(key)
            stack.extend(
                c
                for c in children
                if _is_container(c) and id(c) not in sizes and id(c) not in open_
            )
            continue
        total = 2 + 2 * len(children)
        for child in children:
            total += sizes.get(id(child), 5) if _is_container(child) else _leaf_size(child)
        sizes[key] = min(total, budget + 1)
        open_.discard(key)
        stack.pop()
    return sizes[id(value)]


def _is_container(value: Any) -> bool:
    return isinstance(value, list | tuple | dict | set | frozenset | Mapping)


def _children(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [*value.keys(), *value.values()]
    return list(value)


def _leaf_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):
        return value.bit_length() * 3 // 10 + 2
    return 24


def check_printable(what: str, value: Any) -> None:
    """Refuse printing or serialising a container whose text would pass MAX_OUTPUT_CHARS."""
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        check_size(what, printed_size(value))


def materialized(items: Iterable[Any]) -> list[Any]:
    """An iterable as a list (jinja's ranges are capped, so this is bounded)."""
    return items if isinstance(items, list) else list(items)


def _bounded_int(digits: str) -> int:
    # Longer digit strings than Python will parse are certainly above every cap.
    return int(digits) if len(digits) < 20 else MAX_WIDTH + 1


def _short(number: int) -> str:
    text = str(number) if number.bit_length() < 64 else f"<{number.bit_length()}-bit int>"
    return text


__all__ = [
    "MAX_INT_BITS",
    "MAX_OUTPUT_CHARS",
    "MAX_REPEAT",
    "MAX_WIDTH",
    "RenderError",
    "RenderLimit",
    "check_format_spec",
    "check_power",
    "check_printable",
    "check_printf",
    "check_product",
    "check_size",
    "check_sum",
    "check_width",
    "joined_size",
    "materialized",
    "printed_size",
    "replaced_size",
]
