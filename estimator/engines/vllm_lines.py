"""vLLM's engine lines by release: which start-up arithmetic a version runs.

``data/engines.json`` lists each line (``v0`` before 0.8, ``v1`` from 0.8, when
``VLLM_USE_V1`` became the default) with its version range, its defaults and
the source lines they are read from. No version means the current release.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from estimator.engines.common import engine_data
from estimator.stacks.pins import Version, at_least, release


@dataclass(frozen=True)
class Line:
    """One vLLM line of ``data/engines.json``: its releases ``[low, below)`` and defaults."""

    name: str
    low: Version | None
    below: Version | None
    version_modelled: str
    values: Mapping[str, Any]
    sources: tuple[str, ...]

    def holds(self, version: Version) -> bool:
        """True when ``version`` is in ``[low, below)``; a None bound is open."""
        if self.low is not None and not at_least(version, self.low):
            return False
        return self.below is None or not at_least(version, self.below)

    def stated(self, version: str | None, current: str) -> str:
        """What the verdict says it modelled: the release asked for, or the current one."""
        if version is None:
            return f"current release: {current}"
        return f"vllm {version}: {self.version_modelled}"


@cache
def lines() -> tuple[Line, ...]:
    """Every line in file order, oldest first: ``line_for`` falls back to the last.

    Read once per process: every start-up asks for its line, on each card of the table.
    """
    raw = engine_data("vllm").values["lines"]
    return tuple(
        Line(
            name=entry["line"],
            low=None if entry["from"] is None else release(entry["from"]),
            below=None if entry["below"] is None else release(entry["below"]),
            version_modelled=entry["version_modelled"],
            values=entry,
            sources=tuple(entry["sources"]),
        )
        for entry in raw
    )


def line_for(version: str | None) -> Line:
    """The line ``version`` falls in; the newest line when no version is given."""
    table = lines()
    if version is None:
        return table[-1]
    parsed = release(version)
    return next((line for line in table if line.holds(parsed)), table[-1])
