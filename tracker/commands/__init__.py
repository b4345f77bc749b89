"""Subcommands of the CLI, one module each, listed in ``COMMANDS``.

A command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and
``run(args, settings) -> int``. Errors a user can fix are raised as
``UsageError`` (or a room's own error type translated to it) and printed by
the CLI as one line with exit code 2.

At its top a command module imports only what building the parser needs;
``run`` (and the helpers it calls) import the command's room, so ``--help`` and
``plan`` start without loading storage, huggingface_hub or FastAPI. A test in
tests/tracker/test_cli_imports.py keeps it so.
"""

from __future__ import annotations

from types import ModuleType

from tracker.errors import TrackerError


class UsageError(TrackerError):
    """Bad arguments or input: the CLI prints the message and exits 2."""


# Imported after UsageError: command modules import it from here.
from tracker.commands import (  # noqa: E402
    audit,
    demo,
    diff,
    history,
    hubsim,
    migrate,
    plan,
    serve,
    subscribe,
    subscriptions,
    track,
    unsubscribe,
    untrack,
)

COMMANDS: tuple[ModuleType, ...] = (
    track,
    history,
    diff,
    untrack,
    plan,
    audit,
    hubsim,
    serve,
    demo,
    migrate,
    subscribe,
    subscriptions,
    unsubscribe,
)
