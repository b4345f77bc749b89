"""Rendering untrusted chat templates: jinja2's sandbox plus limits on time and size.

The environment matches the one transformers renders with (trim_blocks,
lstrip_blocks, loopcontrols, ``raise_exception``, ``strftime_now``, a
``tojson`` with ``indent``/``ensure_ascii``), so a rendered prompt here is the
prompt a user got. jinja2's ImmutableSandboxedEnvironment stops attribute
escapes and mutation; it does not stop a template that loops for hours or
multiplies a string to gigabytes, so rendering also runs under a deadline
(checked by a trace hook on the template's own frames), capped ``*``/``**``
operands, and a cap on output length.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from datetime import datetime
from types import FrameType
from typing import Any

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

RENDER_SECONDS = 2.0
MAX_OUTPUT_CHARS = 1_000_000
MAX_REPEAT = 100_000
MAX_EXPONENT = 64
TEMPLATE_FILENAME = "<template>"


class RenderError(Exception):
    """A template failed to render; the message says how (raised, timed out, too large)."""


class RenderTimeout(RenderError):
    """The template ran past its time budget and was stopped."""


class _Deadline(Exception):
    pass


class _LimitedEnvironment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > MAX_EXPONENT:
            raise RenderError(f"exponent {right} exceeds {MAX_EXPONENT}")
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                sized = isinstance(seq, str | list | tuple) and isinstance(count, int)
                if sized and len(seq) * count > MAX_REPEAT:
                    raise RenderError(f"repeating a sequence to {len(seq) * count} items")
        return super().call_binop(context, operator, left, right)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def make_environment(now: datetime) -> jinja2.Environment:
    """A sandbox with transformers' globals; ``strftime_now`` reads the given fixed clock."""
    env = _LimitedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = now.strftime
    return env


def render(
    env: jinja2.Environment,
    source: str,
    variables: Mapping[str, Any],
    seconds: float = RENDER_SECONDS,
) -> str:
    """Render ``source`` or raise RenderError; never runs past ``seconds``."""
    deadline = time.monotonic() + seconds

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if time.monotonic() > deadline:
            raise _Deadline
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename == TEMPLATE_FILENAME:
            return local(frame, event, arg)
        return None

    previous = sys.gettrace()
    sys.settrace(global_)
    try:
        template = env.from_string(source)
        size = 0
        parts = []
        for part in template.generate(**variables):
            size += len(part)
            if size > MAX_OUTPUT_CHARS:
                raise RenderError(f"rendered prompt exceeds {MAX_OUTPUT_CHARS} characters")
            parts.append(part)
        return "".join(parts)
    except _Deadline:
        raise RenderTimeout(f"rendering took longer than {seconds:g}s (stopped)") from None
    except RenderError:
        raise
    except RecursionError:
        raise RenderError("template recursed too deeply") from None
    except Exception as exc:  # any failure of untrusted template code is a finding
        raise RenderError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        sys.settrace(previous)


__all__ = ["RenderError", "RenderTimeout", "make_environment", "render"]
