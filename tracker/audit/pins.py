"""What an audit checks: pinned model revisions, from the command line or a lock file.

A ``Pin`` is one use of a model at one revision, with where it was found (so a
report can point at the line) and, optionally, the workload and cards its user
runs it on. The lock file, ``models.lock``, is TOML, one table per model:

    [[model]]
    repo = "meta-llama/Llama-2-7b-hf"
    revision = "01c7f73d771dfac7d292323805ebc428287df4f9"   # branch, tag or sha
    workload = { method = "lora", batch = 8, seq_len = 2048 }  # optional
    cards = ["L4", "A10G"]                                   # optional

``workload`` takes the fields of ``estimator.Workload`` (method, batch,
seq_len, precision, optimizer, grad_checkpointing, lora_rank, gpus ...).
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from estimator import Workload, card
from estimator.errors import EstimateError
from tracker.errors import RepoIdError, TrackerError
from tracker.hub.repo_id import parse_repo_ref

MAX_LOCK_BYTES = 4 * 2**20
LOCK_KEYS = frozenset({"repo", "revision", "workload", "cards"})
WORKLOAD_FIELDS = frozenset(f.name for f in fields(Workload)) - {"card"}


class AuditInputError(TrackerError, ValueError):
    """A pin, lock file, cache or source tree the audit cannot read; names where and why."""


@dataclass(frozen=True)
class Origin:
    """Where a pin was found: a file and line, or a place without one (the command line)."""

    where: str
    path: Path | None = None
    line: int | None = None

    def __str__(self) -> str:
        if self.path is None:
            return self.where
        return f"{self.path}:{self.line}" if self.line else str(self.path)


@dataclass(frozen=True)
class Pin:
    """One model revision in use; ``revision`` None means unpinned (it follows main)."""

    repo_id: str
    revision: str | None
    origin: Origin
    workload: Workload | None = None
    cards: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        """``ORG/NAME@REV``, or the bare repo id when unpinned, as reports name the pin."""
        return f"{self.repo_id}@{self.revision}" if self.revision else self.repo_id


def pin_from_argument(text: str, endpoint: str | None = None) -> Pin:
    """``ORG/NAME[@REV]``, a legacy ``NAME[@REV]``, ``hf://...`` or a model page URL, as typed."""
    try:
        ref = parse_repo_ref(text, endpoint)
    except RepoIdError as exc:
        raise AuditInputError(f"{text}: {exc}") from exc
    return Pin(ref.repo_id, ref.revision, Origin("command line"))


def canonical_pins(pins: Sequence[Pin], resolve: Callable[[str], str | None]) -> list[Pin]:
    """``pins`` with legacy ids (``gpt2``) under the ORG/NAME ``resolve`` gets from the Hub.

    ``resolve`` answers None for an id the Hub does not know: a name found in
    source may be a local directory (``from_pretrained("checkpoints")``), so
    that pin is left out; typed or locked, it is an error naming it.
    """
    resolved: dict[str, str | None] = {}
    kept: list[Pin] = []
    for pin in pins:
        if "/" in pin.repo_id:
            kept.append(pin)
            continue
        if pin.repo_id not in resolved:
            resolved[pin.repo_id] = resolve(pin.repo_id)
        repo_id = resolved[pin.repo_id]
        if repo_id is not None:
            kept.append(replace(pin, repo_id=repo_id))
        elif pin.origin.where in ("command line", "lock file"):
            raise AuditInputError(f"{pin.origin}: the Hub knows no repo {pin.repo_id!r}")
    return kept


def pins_from_lock_file(path: Path) -> list[Pin]:
    """Every ``[[model]]`` of the audit's own TOML lock file, in file order."""
    document = read_toml(path, MAX_LOCK_BYTES, "a lock file")
    models = document.get("model", [])
    if not isinstance(models, list):
        raise AuditInputError(f"{path}: 'model' must be an array of tables ([[model]])")
    unknown = set(document) - {"model"}
    if unknown:
        raise AuditInputError(
            f"{path}: unknown top-level keys {sorted(unknown)}; expected [[model]]"
        )
    lines = _model_lines(path)
    return [
        _lock_entry(entry, Origin("lock file", path, lines[i] if i < len(lines) else None))
        for i, entry in enumerate(models)
    ]


def workload_of(spec: Mapping[str, Any], where: str) -> Workload:
    """An ``estimator.Workload`` from a table of its fields, refusing unknown ones by name."""
    unknown = set(spec) - WORKLOAD_FIELDS
    if unknown:
        raise AuditInputError(
            f"{where}: unknown workload fields {sorted(unknown)} "
            f"(known: {', '.join(sorted(WORKLOAD_FIELDS))})"
        )
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in spec.items()}
    try:
        return Workload(**values)
    except (EstimateError, TypeError) as exc:
        raise AuditInputError(f"{where}: {exc}") from exc


def _lock_entry(entry: Any, origin: Origin) -> Pin:
    if not isinstance(entry, dict):
        raise AuditInputError(f"{origin}: a [[model]] entry must be a table")
    unknown = set(entry) - LOCK_KEYS
    if unknown:
        raise AuditInputError(
            f"{origin}: unknown keys {sorted(unknown)} (known: {sorted(LOCK_KEYS)})"
        )
    repo = entry.get("repo")
    if not isinstance(repo, str):
        raise AuditInputError(f"{origin}: 'repo' (ORG/NAME) is required")
    revision = entry.get("revision")
    if revision is not None and (not isinstance(revision, str) or not revision):
        raise AuditInputError(f"{origin}: 'revision' must be a branch, tag or sha")
    workload = entry.get("workload")
    if workload is not None and not isinstance(workload, dict):
        raise AuditInputError(f"{origin}: 'workload' must be a table of Workload fields")
    cards = entry.get("cards", [])
    if not isinstance(cards, list) or not all(isinstance(c, str) for c in cards):
        raise AuditInputError(f"{origin}: 'cards' must be a list of card names")
    return Pin(
        repo_pin_id(repo, str(origin)),
        revision,
        origin,
        workload_of(workload, str(origin)) if workload is not None else None,
        card_names(cards, str(origin)),
    )


def card_names(names: Sequence[str], where: str) -> tuple[str, ...]:
    """The estimator's own names for ``names`` (case, spaces and dashes ignored)."""
    try:
        return tuple(card(name).name for name in names)
    except EstimateError as exc:
        raise AuditInputError(f"{where}: {exc}") from exc


def read_bounded_text(path: Path, max_bytes: int, what: str) -> str:
    """The UTF-8 text of an audit input (a lock or ignore file), refused in one line naming it
    when it is missing, unreadable, not UTF-8 or over ``max_bytes``."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise AuditInputError(f"{path}: {size:,} bytes, over the {max_bytes:,} {what} may have")
        return path.read_text("utf-8")
    except FileNotFoundError as exc:
        raise AuditInputError(f"{path}: no such file") from exc
    except UnicodeDecodeError as exc:
        raise AuditInputError(f"{path}: not UTF-8 text") from exc
    except OSError as exc:
        raise AuditInputError(f"{path}: cannot read ({exc.strerror})") from exc


def read_toml(path: Path, max_bytes: int, what: str) -> dict[str, Any]:
    """A TOML audit input, read by ``read_bounded_text``."""
    try:
        return tomllib.loads(read_bounded_text(path, max_bytes, what))
    except tomllib.TOMLDecodeError as exc:
        raise AuditInputError(f"{path}: not valid TOML ({exc})") from exc


def _model_lines(path: Path) -> Sequence[int]:
    """The line of each ``[[model]]`` header, so findings point at their entry."""
    text = path.read_text("utf-8").splitlines()
    return [n for n, line in enumerate(text, start=1) if line.strip().startswith("[[model]]")]


def repo_pin_id(repo_id: str, where: str) -> str:
    """A lock file's repo id, checked against the Hub's naming rule; names where it was."""
    try:
        ref = parse_repo_ref(repo_id)
    except RepoIdError as exc:
        raise AuditInputError(f"{where}: {exc}") from exc
    if ref.revision is not None:
        raise AuditInputError(f"{where}: give the revision as 'revision', not in 'repo'")
    return ref.repo_id


__all__ = [
    "AuditInputError",
    "Origin",
    "Pin",
    "canonical_pins",
    "card_names",
    "pin_from_argument",
    "pins_from_lock_file",
    "read_bounded_text",
    "read_toml",
    "repo_pin_id",
    "workload_of",
]
