"""Shared fixtures: each lives in tests/fixtures/ and is registered here."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins: list[str] = [
    "tests.fixtures.database",
    "tests.fixtures.hub",
    "tests.fixtures.meta_builds",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
CORPUS = REPO_ROOT.parent / "shared" / "hub-corpus"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The recorded upstream files of real repos, read in place, never copied."""
    if not (CORPUS / "MANIFEST.json").is_file():
        pytest.fail(f"hub corpus not found at {CORPUS}")
    return CORPUS
