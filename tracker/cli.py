"""The ``neurarch-trace`` command line: parses, calls one function, renders.

Each subcommand lives in ``tracker.commands.<name>`` and registers here in
``COMMANDS``, an explicit table. Exit codes: 0 success, 1 the check found
something, 2 bad usage or input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from tracker.commands import COMMANDS, UsageError
from tracker.settings import Settings, SettingsError


def build_parser(commands: Sequence[ModuleType] = COMMANDS) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="neurarch-trace",
        description=(
            "Follow Hugging Face model repos: record what changed in each revision, "
            "re-estimate GPU memory and cost from config.json, publish advisories and feeds."
        ),
    )
    parser.add_argument(
        "--config", type=Path, help="TOML configuration file (default: $NEURARCH_CONFIG)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        child = sub.add_parser(command.NAME, help=command.HELP, description=command.__doc__)
        command.add_arguments(child)
        child.set_defaults(handler=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
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
