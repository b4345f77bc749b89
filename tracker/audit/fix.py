"""``audit --fix``: move each lock-file pin forward on main as far as the user's policy allows.

The policy is what the audit already enforces: no advisory at or above
``--min-severity`` (ignored ones aside) may be crossed, and a pin that fits a
card of its lock entry must still fit it where it lands. For a pin at P the
target is the newest revision on main before the first such advisory's commit;
when the entry has a workload and cards, the target steps back until every
card that fits at P fits there too. A pin that cannot move says why (the
advisory that blocks it, the card that stops fitting, a branch pin, a pin not
on main). Lock files are rewritten in place by round-trip libraries (tomlkit
for TOML, ruamel.yaml for Hermeto's YAML), so comments and layout stay.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import tomlkit

from storage.records import Severity
from tracker.audit.check import Auditor, Finding, PinReport
from tracker.audit.hermeto import (
    is_hermeto_lock,
    load_hermeto_lock,
    model_entries,
    round_trip_yaml,
)
from tracker.audit.history import MainHistory
from tracker.audit.pins import Pin
from tracker.audit.text import words_within

FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
REASON_CHARS = 160


@dataclass(frozen=True)
class PinMove:
    """Where ``--fix`` takes one lock-file pin: ``new`` None when it stays, and why."""

    pin: Pin
    old: str | None
    new: str | None
    why: str

    def line(self) -> str:
        """What the user reads about this pin."""
        where = f"{self.pin.origin}"
        if self.new is None:
            return f"kept  {self.pin.label} ({where}): {self.why}"
        return f"moved {self.pin.repo_id} {self.old} -> {self.new} ({where}): {self.why}"


def choose_moves(
    reports: Sequence[PinReport], history: MainHistory, auditor: Auditor, minimum: Severity
) -> list[PinMove]:
    """The move (or the reason for none) of every pin that came from a lock file."""
    return [
        _choose(report, history, auditor, minimum)
        for report in reports
        if report.pin.origin.where == "lock file" and report.pin.origin.path is not None
    ]


def rewrite_locks(moves: Iterable[PinMove]) -> list[Path]:
    """Write each move into its lock file; the files changed."""
    by_file: dict[Path, dict[str, str]] = {}
    for move in moves:
        if move.new is not None and move.pin.origin.path is not None:
            assert move.pin.revision is not None
            # a commit sha names one repo's commit, so it alone finds the entry
            by_file.setdefault(move.pin.origin.path, {})[move.pin.revision.lower()] = move.new
    for path, changes in by_file.items():
        if is_hermeto_lock(path):
            _rewrite_hermeto(path, changes)
        else:
            _rewrite_toml(path, changes)
    return sorted(by_file)


def _choose(
    report: PinReport, history: MainHistory, auditor: Auditor, minimum: Severity
) -> PinMove:
    pin = report.pin
    if pin.revision is None or not FULL_SHA.match(pin.revision.lower()):
        return PinMove(
            pin, report.sha, None, "pinned to a branch or tag; pin a commit sha to move it"
        )
    if report.sha is None or report.behind is None:
        return PinMove(pin, report.sha, None, "the pinned revision is not on main")
    if report.behind == 0:
        return PinMove(pin, report.sha, None, "already the newest revision on main")
    shas = history.shas(pin.repo_id) or []
    at = shas.index(report.sha)
    wall, blocking = _blocking(report.findings, shas, minimum)
    target = wall - 1
    if target <= at:
        assert blocking is not None  # with no wall the target is main's head, past the pin
        return PinMove(pin, report.sha, None, f"the next commit brings {_said(blocking)}")
    landed, unfit = _fitting(pin, report.sha, shas, at, target, auditor)
    if landed is None:
        return PinMove(pin, report.sha, None, f"no later revision within policy still fits {unfit}")
    return PinMove(pin, report.sha, shas[landed], _why(shas, at, landed, target, blocking, unfit))


def _blocking(
    findings: Sequence[Finding], shas: Sequence[str], minimum: Severity
) -> tuple[int, Finding | None]:
    """The policy's wall: the position on main of the earliest advisory's commit at or above
    ``minimum``, and that finding; ``len(shas)`` and None when nothing blocks."""
    walls = [
        (shas.index(f.advisory.new_sha), f)
        for f in findings
        if f.advisory is not None and f.severity >= minimum and f.advisory.new_sha in shas
    ]
    return min(walls, key=lambda wall: wall[0], default=(len(shas), None))


def _fitting(
    pin: Pin, sha: str, shas: Sequence[str], at: int, target: int, auditor: Auditor
) -> tuple[int | None, str]:
    """The newest revision from ``target`` back that fits every card the pin fits now."""
    if pin.workload is None or not pin.cards:
        return target, ""
    fitting_now = {v.card for v in auditor.card_verdicts(pin, sha, sha) if v.fits_pinned}
    unfit = ""
    for position in range(target, at, -1):
        verdicts = auditor.card_verdicts(pin, sha, shas[position])
        lost = [v.card for v in verdicts if v.card in fitting_now and v.fits_newest is not True]
        if not lost:
            return position, unfit
        unfit = unfit or ", ".join(lost)
    return None, unfit


def _why(
    shas: Sequence[str], at: int, landed: int, target: int, blocking: Finding | None, unfit: str
) -> str:
    said = [f"{landed - at} commits forward"]
    if landed == len(shas) - 1:
        said.append("to the newest revision")
    if blocking is not None:
        said.append(f"stops before {_said(blocking)}")
    if landed < target:
        said.append(f"later revisions no longer fit {unfit}")
    return "; ".join(said)


def _said(finding: Finding) -> str:
    assert finding.advisory is not None
    text = f"[{finding.severity.label}] {finding.message}"
    return f"{words_within(text, REASON_CHARS)} ({finding.advisory.id})"


def _rewrite_toml(path: Path, changes: dict[str, str]) -> None:
    document = tomlkit.parse(path.read_text("utf-8"))
    for entry in document.get("model", []):
        old = str(entry.get("revision", "")).lower()
        if old in changes:
            entry["revision"] = changes[old]
    path.write_text(tomlkit.dumps(document), "utf-8")


def _rewrite_hermeto(path: Path, changes: dict[str, str]) -> None:
    document = load_hermeto_lock(path)
    for _, entry in model_entries(path, document):
        old = str(entry["revision"]).lower()
        if old in changes:
            entry["revision"] = type(entry["revision"])(changes[old])
    with path.open("w", encoding="utf-8") as out:
        round_trip_yaml().dump(document, out)


__all__ = ["PinMove", "choose_moves", "rewrite_locks"]
