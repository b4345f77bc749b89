"""The ``neurarch-trace`` command line: parses, calls one function, renders.

Each subcommand lives in ``tracker.commands.<name>`` and is listed by name in
``tracker.commands.NAMES``, an explicit table. A command line that names its
command builds the parser of that command alone, so only its module is
imported (``history`` and ``diff`` answered by a daemon start in a fraction of
the time the whole table takes); the top-level ``--help`` and a mistyped
command get the parser of every command. Exit codes: 0 success, 1 the check
found something, 2 bad usage or input (one line on stderr, never a traceback).
A usage error is that one line too (``OneLineParser``): argparse's own error
prints the whole usage block first, which for this many commands is dozens of
lines before the one that says what was wrong.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from tracker.commands import NAMES, UsageError, all_commands, command
from tracker.settings import Settings, SettingsError

CONFIG_OPTION = "--config"


class OneLineParser(argparse.ArgumentParser):
    """argparse with a usage error as one line on stderr (exit 2) that names where help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def installed_version() -> str:
    """The distribution's version, as ``pip`` installed it."""
    try:
        return version("neurarch-trace")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


def build_parser(commands: Sequence[ModuleType] | None = None) -> argparse.ArgumentParser:
    """The parser of ``commands`` (default: every command)."""
    parser = OneLineParser(
        prog="neurarch-trace",
        description=(
            "Follow Hugging Face model repos: record what changed in each revision, "
            "re-estimate GPU memory and cost from config.json, publish advisories and feeds."
        ),
    )
    parser.add_argument(
        CONFIG_OPTION, type=Path, help="TOML configuration file (default: $NEURARCH_CONFIG)"
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in all_commands() if commands is None else commands:
        child = sub.add_parser(module.NAME, help=module.HELP, description=module.__doc__)
        module.add_arguments(child)
        child.set_defaults(handler=module.run)
    return parser


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names before any other option than --config, if it names one."""
    words = iter(argv)
    for word in words:
        if word == CONFIG_OPTION:
            next(words, None)
        elif not word.startswith(f"{CONFIG_OPTION}="):
            return word if word in NAMES else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    name = named_command(argv)
    parser = build_parser(None if name is None else [command(name)])
    args = parser.parse_args(argv)
    try:
        settings = Settings.load(args.config)
        code: int = args.handler(args, settings)
    except (UsageError, SettingsError) as exc:
        print(f"neurarch-trace: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("neurarch-trace: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
