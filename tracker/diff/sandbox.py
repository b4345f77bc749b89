"""Rendering untrusted chat templates: jinja2's sandbox, our limits, in an isolated worker.

The environment matches the one transformers renders with (trim_blocks,
lstrip_blocks, loopcontrols, the ``{% generation %}`` tag, ``raise_exception``,
``strftime_now``, a ``tojson`` with ``indent``/``ensure_ascii``), so a rendered
prompt here is the prompt a user got. jinja2's ImmutableSandboxedEnvironment
stops attribute escapes and mutation. On top of it:

* ``tracker.diff.sandbox_limits`` (with the checked filters of
  ``tracker.diff.sandbox_filters``) refuses, before computing, what would be
  costly in C: big integer powers and products, sequence repeats, padding
  and format widths (filters, ``str`` methods, ``str.format`` through the
  sandbox's formatter, ``%``), strings and printed containers past a size;
* a deadline, checked by a trace hook on the template's own frames, stops
  templates that loop in Python, with a readable message;
* ``render_prompts`` is the entry the isolated worker runs
  (``tracker.untrusted.isolation``): its address-space and CPU limits and the caller's
  kill on a wall-clock deadline stop whatever the checks above miss.
"""

from __future__ import annotations

import functools
import re
import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from types import BuiltinMethodType, FrameType, MethodType
from typing import Any

import jinja2
import jinja2.ext
import jinja2.filters
import jinja2.nodes
import jinja2.parser
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context, Macro
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedFormatter
from markupsafe import EscapeFormatter, Markup

from tracker.diff import sandbox_limits as limits
from tracker.diff.sandbox_filters import limited_filters, lipsum
from tracker.diff.sandbox_limits import RenderError, RenderLimit

RENDER_SECONDS = 1.5
"""Python time all probes of one template may take in the worker (the trace-hook deadline)."""
TEMPLATE_FILENAME = "<template>"


class RenderTimeout(RenderLimit):
    """The template ran past its time budget and was stopped."""


@dataclass(frozen=True)
class ProbeOutcome:
    """One probe's rendered prompt, or its error; ``limited`` if a limit stopped it."""

    text: str | None
    error: str | None = None
    limited: bool = False
    refused: bool = False
    """The template called ``raise_exception``: it refuses this conversation by design."""


class _Deadline(Exception):
    pass


class _CappedFormatter(SandboxedFormatter):
    """The sandbox's ``str.format`` formatter, refusing widths and precisions above the cap."""

    def format_field(self, value: Any, format_spec: str) -> Any:
        limits.check_format_spec(format_spec)
        return super().format_field(value, format_spec)


class _CappedEscapeFormatter(_CappedFormatter, EscapeFormatter):
    pass


# str methods whose result size the template controls through an argument.
def _check_str_method(
    text: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> None:
    if name in {"center", "ljust", "rjust", "zfill"} and args:
        limits.check_width(f"str.{name} width", args[0])
    elif name == "expandtabs":
        tabsize = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tabsize, int):
            limits.check_size("str.expandtabs", len(text) + text.count("\t") * tabsize)
    elif name == "replace" and len(args) >= 2:
        limits.check_size("str.replace", limits.replaced_size(text, *args[:3]))
    elif name == "join" and args:
        limits.check_size("str.join", limits.joined_size(text, limits.materialized(args[0])))


class _CheckedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` so the parts' total size is checked before they are joined."""

    def visit_Concat(self, node: jinja2.nodes.Concat, frame: Frame) -> None:
        # As jinja2 3.1.6's CodeGenerator.visit_Concat (jinja2/compiler.py), with the
        # parts passed through environment.checked_parts on their way to the join.
        if frame.eval_ctx.volatile:
            func_name = "(markup_join if context.eval_ctx.volatile else str_join)"
        elif frame.eval_ctx.autoescape:
            func_name = "markup_join"
        else:
            func_name = "str_join"
        self.write(f"{func_name}(environment.checked_parts((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write(")))")


class _LimitedEnvironment(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "%", "+"})
    code_generator_class = _CheckedCodeGenerator

    def checked_parts(self, parts: tuple[Any, ...]) -> tuple[Any, ...]:
        """The parts of a ``~`` concatenation, once their joined size is known to fit."""
        size = sum(len(p) if isinstance(p, str) else limits.printed_size(p) for p in parts)
        limits.check_size("~ concatenation", size)
        return parts

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "**":
            limits.check_power(left, right)
        elif operator == "*":
            limits.check_product(left, right)
        elif operator == "+":
            limits.check_sum(left, right)
        elif operator == "%" and isinstance(left, str):
            limits.check_printf(left, right)
            limits.check_printable("%-formatting", right)
        return super().call_binop(context, operator, left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        bound_to = getattr(obj, "__self__", None)
        if isinstance(obj, BuiltinMethodType | MethodType) and isinstance(bound_to, str):
            if obj.__name__ == "join" and args:
                args = (limits.materialized(args[0]), *args[1:])
            _check_str_method(bound_to, obj.__name__, args, kwargs)
        elif obj is pow and len(args) >= 2 and (len(args) < 3 or args[2] is None):
            limits.check_power(args[0], args[1])
        return super().call(context, obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        # As jinja2 3.1.6's SandboxedEnvironment.wrap_str_format (jinja2/sandbox.py), with
        # formatters that check each field's spec before formatting it.
        if super().wrap_str_format(value) is None:
            return None
        f_self: str = value.__self__
        is_format_map = value.__name__ == "format_map"
        formatter: SandboxedFormatter
        if isinstance(f_self, Markup):
            formatter = _CappedEscapeFormatter(self, escape=f_self.escape)
        else:
            formatter = _CappedFormatter(self)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    raise TypeError("format_map() takes exactly one positional argument")
                kwargs, args = args[0], ()
            return type(f_self)(formatter.vformat(f_self, args, kwargs))

        return functools.update_wrapper(wrapper, value)


class GenerationTag(jinja2.ext.Extension):
    """``{% generation %}...{% endgeneration %}``: renders its body unchanged.

    transformers 5.24.0 (src/transformers/utils/chat_template_utils.py,
    ``AssistantTracker``) parses the tag into a CallBlock that returns
    ``caller()`` and, only when asked, records where the assistant's text
    lies. The prompt is the same either way, which is all we compare.
    """

    tags = {"generation"}  # noqa: RUF012 (jinja reads this class attribute)

    def parse(self, parser: jinja2.parser.Parser) -> jinja2.nodes.Node:
        """Called by jinja2 on ``{% generation %}``: a CallBlock that renders the body as is."""
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_generation_support")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _generation_support(self, caller: Macro) -> str:
        return str(caller())


class TemplateRefusal(RenderError, jinja2.exceptions.TemplateError):
    """``raise_exception(message)`` in a template: a conversation it refuses on purpose.

    A RenderError (the tracker's tree) that is also jinja2's TemplateError, as
    transformers raises it.
    """


def raise_exception(message: str) -> None:
    """The template global of that name (as transformers names it, for its repr too)."""
    raise TemplateRefusal(message)


_ADDRESS = re.compile(r"(<[^<>\n]{1,200}?) at 0x[0-9a-fA-F]{4,16}>")


def without_addresses(text: str) -> str:
    """``<function raise_exception at 0x7f...>`` as ``<function raise_exception>``.

    A template that prints an object (a global, a bound method) prints its default
    repr, which holds the worker's memory address: that would publish a detail of our
    process and make two renders of one template differ. The address is dropped
    wherever it appears in a prompt or an error (``{{ x }}``, ``~``, ``|string``, a
    container printed whole), so the same template renders the same text everywhere.
    """
    return _ADDRESS.sub(r"\1>", text)


def _finalize(value: Any) -> Any:
    """Applied to every ``{{ ... }}`` before it is printed: no container prints past the cap."""
    limits.check_printable("printing a value", value)
    return value


def make_environment(now: datetime) -> jinja2.Environment:
    """A sandbox with transformers' tags and globals; ``strftime_now`` reads a fixed clock."""
    env = _LimitedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[GenerationTag, jinja2.ext.loopcontrols],
        finalize=_finalize,
    )
    env.filters.update(limited_filters())
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = now.strftime
    env.globals["lipsum"] = lipsum
    return env


class CompiledTemplates:
    """Compiled templates a worker process keeps, by their text, within a budget of bytes.

    A walk renders the same few templates revision after revision (a revision that
    changes a special token re-renders the unchanged template), and compiling was most
    of what a render cost. The environment holds no state a render leaves behind (the
    sandbox is immutable), so a compiled template renders as a fresh one would. Least
    recently used templates go first once the kept sources pass ``budget`` bytes.
    """

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._kept: OrderedDict[tuple[str, datetime], jinja2.Template] = OrderedDict()
        self._size = 0

    def get(self, source: str, now: datetime) -> jinja2.Template:
        """``source`` compiled in an environment whose clock reads ``now``."""
        key = (source, now)
        template = self._kept.get(key)
        if template is not None:
            self._kept.move_to_end(key)
            return template
        template = make_environment(now).from_string(source)
        if len(source) <= self.budget:
            self._kept[key] = template
            self._size += len(source)
            while self._size > self.budget:
                (dropped, _), _ = self._kept.popitem(last=False)
                self._size -= len(dropped)
        return template


COMPILED_BUDGET = 4 * 1024 * 1024
"""Characters of template source a worker keeps compiled (a large chat template is ~10 KB)."""
_COMPILED = CompiledTemplates(COMPILED_BUDGET)


def render_prompts(
    source: str,
    now: datetime,
    variable_sets: Sequence[Mapping[str, Any]],
    seconds: float = RENDER_SECONDS,
) -> list[ProbeOutcome]:
    """Compile ``source`` once and render it with each variable set, sharing one deadline.

    Runs in the isolated worker; returns plain data, never raises for the
    template's sake. Once the deadline passes, the remaining probes carry the
    same timeout.
    """
    try:
        template = _COMPILED.get(source, now)
    except Exception as exc:  # a template that does not compile fails every probe the same way
        outcome = _failure(exc)
        return [outcome] * len(variable_sets)
    deadline = time.monotonic() + seconds
    outcomes: list[ProbeOutcome] = []
    timed_out: ProbeOutcome | None = None
    for variables in variable_sets:
        if timed_out is not None:
            outcomes.append(timed_out)
            continue
        try:
            text = _render(template, variables, deadline, seconds)
            outcomes.append(ProbeOutcome(without_addresses(text)))
        except RenderTimeout as exc:
            timed_out = _failure(exc)
            outcomes.append(timed_out)
        except Exception as exc:  # any failure of untrusted template code is a finding
            outcomes.append(_failure(exc))
    return outcomes


def _failure(exc: BaseException) -> ProbeOutcome:
    outcome = _described(exc)
    if outcome.error is None:
        return outcome
    return replace(outcome, error=without_addresses(outcome.error))


def _described(exc: BaseException) -> ProbeOutcome:
    if isinstance(exc, RenderLimit):
        return ProbeOutcome(None, str(exc), limited=True)
    if isinstance(exc, RecursionError):
        return ProbeOutcome(None, "template recursed too deeply", limited=True)
    if isinstance(exc, MemoryError):
        return ProbeOutcome(None, "ran out of memory", limited=True)
    if isinstance(exc, OverflowError):  # jinja's range cap, float overflow
        return ProbeOutcome(None, f"OverflowError: {exc}", limited=True)
    if isinstance(exc, TemplateRefusal):  # named as transformers names it: TemplateError
        return ProbeOutcome(None, f"TemplateError: {exc}", refused=True)
    return ProbeOutcome(None, f"{type(exc).__name__}: {exc}")


def _render(
    template: jinja2.Template, variables: Mapping[str, Any], deadline: float, seconds: float
) -> str:
    """One prompt, traced so a Python-level loop stops at ``deadline``."""

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
        size = 0
        parts = []
        for part in template.generate(**variables):
            size += len(part)
            limits.check_size("the rendered prompt", size)
            parts.append(part)
        return "".join(parts)
    except _Deadline:
        raise RenderTimeout(f"rendering took longer than {seconds:g}s (stopped)") from None
    finally:
        sys.settrace(previous)


__all__ = [
    "CompiledTemplates",
    "GenerationTag",
    "ProbeOutcome",
    "RenderError",
    "RenderLimit",
    "RenderTimeout",
    "TemplateRefusal",
    "make_environment",
    "raise_exception",
    "render_prompts",
    "without_addresses",
]
