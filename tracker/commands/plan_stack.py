"""``plan --stack``: the libraries and versions that run the job, read where the user keeps them.

``--stack 'torch==2.4 transformers==4.44'`` names them; ``--stack FILE`` reads
a requirements file (``pip freeze`` output) or a TOML lock file (``uv.lock``,
``poetry.lock``, ``pylock.toml``); ``--stack env`` reads the versions installed
in the Python running this command (``importlib.metadata``). Reading happens
here: the estimator receives the parsed ``Stack`` and does no I/O.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Final

from tracker.errors import UsageError

if TYPE_CHECKING:
    from estimator.stacks import Stack

MAX_STACK_FILE_BYTES: Final = 4 * 2**20
ENVIRONMENT: Final = "env"


def add_stack_argument(parser: argparse.ArgumentParser) -> None:
    """``--stack``; the pins, file or environment it names are read in ``stack_from``."""
    parser.add_argument(
        "--stack",
        metavar="PINS|FILE|env",
        help="libraries and versions that run the job: 'torch==2.4 transformers==4.44 "
        "vllm==0.6.4', a requirements or lock file, or 'env' (the installed versions); "
        "their versions set the behaviour listed in estimator/README.md (Stacks), and a "
        "training library in it picks its recipe",
    )


def stack_from(args: argparse.Namespace) -> Stack | None:
    """The parsed stack of ``--stack``; None without the flag."""
    spec: str | None = getattr(args, "stack", None)
    if spec is None:
        return None
    from estimator.stacks import StackError, parse_lock, parse_requirements, parse_stack, stack_of

    try:
        if spec == ENVIRONMENT:
            from importlib import metadata  # 20-50 ms of imports, for this flag alone

            return stack_of(
                (d.metadata["Name"], d.version)
                for d in metadata.distributions()
                if d.metadata["Name"] and d.version and d.version[:1].isdigit()
            )
        path = Path(spec)
        if "==" not in spec and path.is_file():
            text = _read(path)
            if path.suffix in (".lock", ".toml"):
                return parse_lock(text)
            return parse_requirements(text)
        if "==" not in spec:
            raise UsageError(
                f"--stack {spec[:64]!r}: no such file, and not NAME==VERSION pins (torch==2.4)"
            )
        return parse_stack(spec)
    except StackError as exc:
        raise UsageError(f"--stack: {exc}") from exc


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_STACK_FILE_BYTES:
            raise UsageError(f"{path}: larger than {MAX_STACK_FILE_BYTES} bytes, not a stack file")
        return path.read_text("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 text") from exc
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror})") from exc
