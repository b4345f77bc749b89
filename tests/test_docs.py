"""The docs name everything a user can type or meet: commands, flags, settings, errors.

Each check reads the real thing (the CLI's parser, ``tracker.settings``, every
module of every room) and looks for it in README.md or the room's README, so
a new flag, setting or error class without a line of docs fails here.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tracker.cli import build_parser
from tracker.config_file import FILE_SETTINGS
from tracker.settings import ENVIRONMENT

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
ROOMS = {
    "estimator": "estimator.errors.EstimateError",
    "storage": "storage.errors.StorageError",
    "tracker": "tracker.errors.TrackerError",
    "feeds": "feeds.errors.FeedsError",
}
CONTROL_FLOW = {"tracker.schedule.worker.Stopping"}
"""Exceptions that never leave their module: raised and caught to unwind a loop."""
NOT_IMPORTED = ("storage.migrations",)
"""Alembic scripts: loaded by Alembic, not imported as modules."""


def room_readme(room: str) -> str:
    path = ROOT / room / "README.md"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def test_every_command_is_in_the_readme() -> None:
    missing = [name for name, _ in commands() if f"neurarch-trace {name}" not in README]
    assert missing == []


def test_every_flag_of_every_command_is_documented() -> None:
    docs = README + room_readme("tracker")
    missing = [
        f"{name} {flag}"
        for name, parser in commands()
        for action in parser._actions
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help" and f"`{flag}`" not in docs
    ]
    assert missing == []


def test_every_environment_variable_is_documented() -> None:
    assert [name for name in ENVIRONMENT if f"`{name}`" not in README] == []


def test_every_file_setting_is_documented() -> None:
    def named(setting: str) -> bool:
        table, key = setting.split(".")
        return f"`[{table}] {key}`" in README or f"`[[{table}]] {key}`" in README

    assert [setting for setting in FILE_SETTINGS if not named(setting)] == []


def test_the_example_file_shows_every_setting_and_no_other() -> None:
    text = (ROOT / "deploy" / "neurarch-trace.example.toml").read_text(encoding="utf-8")
    shown: set[str] = set()
    table = ""
    for line in text.splitlines():
        if header := re.match(r"^\[\[?(\w+)\]\]?\s*$", line):
            table = header[1]
        elif (key := re.match(r"^#?\s?(\w+) = ", line)) and table != "subscriptions":
            shown.add(f"{table}.{key[1]}")
    assert shown == set(FILE_SETTINGS)


def room_modules(room: str) -> Iterator[ModuleType]:
    package = importlib.import_module(room)
    yield package
    for info in pkgutil.walk_packages(package.__path__, prefix=f"{room}."):
        if not info.name.startswith(NOT_IMPORTED):
            yield importlib.import_module(info.name)


def room_errors(room: str) -> list[type[BaseException]]:
    """Every public exception class defined in a module of ``room``."""
    found: dict[str, type[BaseException]] = {}
    for module in room_modules(room):
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
                and f"{value.__module__}.{name}" not in CONTROL_FLOW
            ):
                found[f"{value.__module__}.{name}"] = value
    return list(found.values())


@pytest.mark.parametrize("room", sorted(ROOMS))
def test_every_error_is_in_its_rooms_tree_drawn_there_and_documented(room: str) -> None:
    module_name, _, base_name = ROOMS[room].rpartition(".")
    errors_module = importlib.import_module(module_name)
    base = getattr(errors_module, base_name)
    tree = errors_module.__doc__ or ""
    docs = README + room_readme(room)
    errors = room_errors(room)
    assert base in errors
    outside = [e.__qualname__ for e in errors if not issubclass(e, base)]
    undrawn = [e.__qualname__ for e in errors if not re.search(rf"\b{e.__qualname__}\b", tree)]
    undocumented = [e.__qualname__ for e in errors if not re.search(rf"\b{e.__qualname__}\b", docs)]
    assert (outside, undrawn, undocumented) == ([], [], [])


def test_hub_error_is_defined_once() -> None:
    owners = [e.__module__ for e in room_errors("tracker") if e.__name__ == "HubError"]
    assert owners == ["tracker.errors"]
