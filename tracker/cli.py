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
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from tracker.commands import NAMES, all_commands, command
from tracker.errors import SettingsError, UsageError

if TYPE_CHECKING:
    from tracker.settings import Settings

CONFIG_OPTION = "--config"


class OneLineParser(argparse.ArgumentParser):
    """argparse with a usage error as one line on stderr (exit 2) that names where help is."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with the one line; argparse calls it for every usage error."""
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


def installed_version() -> str:
    """The distribution's version, as ``pip`` installed it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("neurarch-trace")
    except PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


class VersionAction(argparse.Action):
    """``--version``: the installed version, looked up only when asked.

    ``importlib.metadata`` costs 20-50 ms of imports, which every command paid
    for argparse's ``version=`` string before a single one asked for it.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        """Print ``neurarch-trace VERSION`` and exit 0, before any settings are read."""
        print(f"{parser.prog} {installed_version()}")
        parser.exit(0)


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
    parser.add_argument("--version", action=VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in all_commands() if commands is None else commands:
        child = sub.add_parser(module.NAME, help=module.HELP, description=module.__doc__)
        module.add_arguments(child)
        child.set_defaults(
            handler=module.run, reads_settings=getattr(module, "reads_settings", None)
        )
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
    """Run the command ``argv`` names (default: ``sys.argv``) and return its exit code.

    Usage and settings errors print one line and return 2; Ctrl-C returns 130.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    name = named_command(argv)
    parser = build_parser(None if name is None else [command(name)])
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args, _settings(args))
    except (UsageError, SettingsError) as exc:
        print(f"neurarch-trace: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("neurarch-trace: interrupted", file=sys.stderr)
        return 130
    return code


def _settings(args: argparse.Namespace) -> Settings | None:
    """The configuration, read unless the command says this call reads none.

    A command that only computes from its arguments (``plan`` of a local file)
    defines ``reads_settings(args) -> bool``: then neither the file nor the
    settings modules (platformdirs, tomllib, the alert egress rules: about a
    fifth of such a call) are loaded, and the command gets None.
    """
    if args.reads_settings is not None and not args.reads_settings(args):
        return None
    from tracker.settings import Settings

    return Settings.load(args.config)


if __name__ == "__main__":
    sys.exit(main())
