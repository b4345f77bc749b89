"""The project's own promises: two README commands, CI runs the README's tests, arrows point one way."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("estimator", "storage", "tracker", "feeds")


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```sh\n(.*?)```", text, re.S)
    assert block, "README.md must start with a sh block holding the two commands"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_readme_starts_with_exactly_two_commands() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = text.index("```sh")
    assert text[:first_block].count("\n") <= 2, "the commands come first"
    commands = readme_commands()
    assert len(commands) == 2
    assert "neurarch-trace" in commands[0]
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert readme_commands()[1] in ci.splitlines()


def test_dependency_arrows_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "broken" not in result.stdout.lower().replace("0 broken", "")


ESTIMATOR_MAY_IMPORT = {"cattrs"}
"""Pure libraries the estimator may use: cattrs writes and reads the Plan JSON."""


def test_estimator_imports_only_the_standard_library_and_cattrs() -> None:
    foreign: list[str] = []
    for path in (ROOT / "estimator").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                allowed = {"estimator", *ESTIMATOR_MAY_IMPORT, *sys.stdlib_module_names}
                if top not in allowed:
                    foreign.append(f"{path.relative_to(ROOT)}: {name}")
    assert foreign == []


def test_every_package_declares_its_public_surface() -> None:
    import importlib

    for name in PACKAGES:
        module = importlib.import_module(name)
        exported = getattr(module, "__all__", None)
        assert isinstance(exported, list | tuple), f"{name}.__all__ is missing"
        for symbol in exported:
            assert hasattr(module, symbol), f"{name}.__all__ names {symbol}, which it lacks"


ENVIRONMENT_READERS = {
    "tracker/settings.py",  # the one loader: NEURARCH_*, HF_ENDPOINT, HF_TOKEN
    "tracker/untrusted/isolation.py",  # writes, not reads: the sandbox worker's own environment
    "tracker/alerts/spec.py",  # a channel's secret_env: the secret itself, named by the file
}


def test_only_the_settings_loader_reads_the_environment() -> None:
    readers: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Attribute)
                    and node.attr in {"environ", "getenv"}
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "os"
                ):
                    readers.add(str(path.relative_to(ROOT)))
    assert readers <= ENVIRONMENT_READERS, sorted(readers - ENVIRONMENT_READERS)
