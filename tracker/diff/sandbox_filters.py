"""The jinja filters and globals whose cost a template controls, with their sizes checked.

Each wrapper reads the argument that sets the size of its result (a width,
a count, a separator), refuses it through ``tracker.diff.sandbox_limits``
when it would pass a cap, and otherwise calls jinja2's own filter, so a
template within the caps renders exactly as it does in transformers.
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
import jinja2.filters
from jinja2.filters import FILTERS
from jinja2.utils import generate_lorem_ipsum

from tracker.diff import sandbox_limits as limits
from tracker.diff.sandbox_limits import RenderLimit

MAX_LIPSUM_PARAGRAPHS = 100
MAX_LIPSUM_WORDS = 1_000


def tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """transformers' tojson (no HTML escaping, indent and separators), size-checked first."""
    limits.check_printable("tojson", value)
    limits.check_width("tojson indent", indent)
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """jinja's lipsum global with its paragraph and word counts capped."""
    if n > MAX_LIPSUM_PARAGRAPHS or max > MAX_LIPSUM_WORDS:
        raise RenderLimit(
            f"lipsum({n}, max={max}) exceeds {MAX_LIPSUM_PARAGRAPHS} paragraphs "
            f"of {MAX_LIPSUM_WORDS} words"
        )
    return str(generate_lorem_ipsum(n, html, min, max))


# Filters whose size argument the template controls: name -> (argument, what it bounds).
_SIZE_ARGUMENTS: dict[str, tuple[str, Callable[[str, Any], None]]] = {
    "center": ("width", limits.check_width),
    "indent": ("width", limits.check_width),
    "wordwrap": ("width", limits.check_width),
    "batch": ("linecount", limits.check_width),
    "slice": ("slices", limits.check_width),
    "truncate": ("length", lambda what, n: limits.check_size(what, n if isinstance(n, int) else 0)),
}


def _sized_filter(name: str) -> Callable[..., Any]:
    # The synchronous variant where jinja has two: its signature is the one called.
    original = getattr(jinja2.filters, f"sync_do_{name}", FILTERS[name])
    signature = inspect.signature(original)
    argument, check = _SIZE_ARGUMENTS[name]

    @functools.wraps(original)
    def checked(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        check(f"|{name} {argument}", bound.arguments[argument])
        _check_growth(name, bound.arguments)
        return original(*args, **kwargs)

    return checked


def _check_growth(name: str, arguments: Mapping[str, Any]) -> None:
    """Size checks for the filters that add text per line."""
    text = str(arguments.get("s", ""))
    lines = text.count("\n") + 1
    if name == "indent":
        width = arguments["width"]
        prefix = width if isinstance(width, int) else len(str(width))
        limits.check_size("|indent", len(text) + prefix * lines)
    elif name == "wordwrap":
        width = arguments["width"]
        wrap = arguments.get("wrapstring") or "\n"
        breaks = lines + (len(text) // width if isinstance(width, int) and width > 0 else len(text))
        limits.check_size("|wordwrap", len(text) + breaks * len(str(wrap)))


def _format_filter(value: Any, *args: Any, **kwargs: Any) -> str:
    limits.check_printf(str(value), tuple(kwargs.values()) or args)
    return str(FILTERS["format"](value, *args, **kwargs))


def _replace_filter(eval_ctx: Any, s: Any, old: Any, new: Any, count: Any = None) -> str:
    limits.check_size(
        "|replace", limits.replaced_size(str(s), old, new, -1 if count is None else count)
    )
    return str(FILTERS["replace"](eval_ctx, s, old, new, count))


def _join_filter(eval_ctx: Any, value: Any, d: str = "", attribute: Any = None) -> str:
    items = limits.materialized(value)
    if attribute is None:
        limits.check_size("|join", limits.joined_size(str(d), items))
    return str(jinja2.filters.sync_do_join(eval_ctx, items, d, attribute))


def _printed_filter(name: str) -> Callable[..., Any]:
    original = FILTERS[name]

    @functools.wraps(original)
    def checked(value: Any, *args: Any, **kwargs: Any) -> Any:
        limits.check_printable(f"|{name}", value)
        return original(value, *args, **kwargs)

    return checked


def limited_filters() -> dict[str, Callable[..., Any]]:
    """Filter name -> checked filter, to lay over an environment's defaults."""
    table: dict[str, Callable[..., Any]] = {name: _sized_filter(name) for name in _SIZE_ARGUMENTS}
    table.update({name: _printed_filter(name) for name in ("string", "pprint")})
    table["format"] = _format_filter
    table["replace"] = jinja2.pass_eval_context(_replace_filter)
    table["join"] = jinja2.pass_eval_context(_join_filter)
    table["tojson"] = tojson
    return table


__all__ = ["limited_filters", "lipsum", "tojson"]
