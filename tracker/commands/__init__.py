"""Subcommands of the CLI, one module each, listed by name in ``NAMES``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args, settings) -> int``. Errors a user can fix are raised as
``tracker.errors.UsageError`` (or a room's own error type translated to it) and printed by
the CLI as one line with exit code 2.

At its top a command module imports only what building the parser needs;
``run`` (and the helpers it calls) import the command's room, so ``--help`` and
``plan`` start without loading storage, huggingface_hub or FastAPI. A test in
tests/tracker/test_cli_imports.py keeps it so. A command line that names its
command imports only that command's module (``command``); the full table is
imported for the top-level ``--help`` and for a name no command has.
"""

from __future__ import annotations

import importlib
from types import ModuleType

NAMES: tuple[str, ...] = (
    "track",
    "history",
    "diff",
    "untrack",
    "plan",
    "audit",
    "hubsim",
    "serve",
    "demo",
    "migrate",
    "subscribe",
    "subscriptions",
    "unsubscribe",
)
"""Every command, in the order ``--help`` lists them; each is the module ``tracker.commands.NAME``."""


def command(name: str) -> ModuleType:
    """The module of command ``name`` (one of ``NAMES``), imported now."""
    if name not in NAMES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")


def all_commands() -> tuple[ModuleType, ...]:
    """Every command's module, in ``NAMES`` order (what the full parser and the docs read)."""
    return tuple(command(name) for name in NAMES)
