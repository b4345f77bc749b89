"""The audit of each pin: advisories published after it, where main is now, and whether it fits.

For a pin at revision P of repo R, on R's main history oldest first:

- every advisory whose transition starts at or after P (its old sha is P or
  a later commit) affects the pin: upstream changed what matters since P;
- the newest revision is main's head, and ``behind`` counts the commits since P;
- with a workload and cards, the plan at P and the plan at the head say, per
  card, whether the workload fits now and at the newest revision. A card the
  pin fits now but the newest revision does not is a finding of its own.

Main is read from the Hub. When the audit cannot judge a pin, the report says
why (``cannot_judge``) instead of passing it clean: the advisory source does not
cover the revisions after it (a repo not tracked here, revisions not processed
yet), or the Hub did not answer. Exit codes: 0 clean, 1 a finding reaches the
threshold, 3 some pin could not be judged (it wins over 1: the audit is
incomplete); 2 is bad input, raised before any report.

Each plan is computed once per (repo, sha); a repo's history and advisories
are read once per audit whatever the number of pins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date

from estimator import Plan, Workload, plan
from estimator.errors import EstimateError
from storage.records import Severity
from tracker.audit.advisories import AdvisorySource, Published
from tracker.audit.history import MainHistory, locate
from tracker.audit.pins import Pin
from tracker.errors import RevisionGone, TrackerError
from tracker.hub.plan_source import HubRef, PlanInputs

Resolve = Callable[[str, str], str]
"""(repo id, branch or tag) -> the sha it points at now."""
FetchInputs = Callable[[HubRef], PlanInputs]


@dataclass(frozen=True)
class Finding:
    """One thing the audit found about a pin, with a severity ``--min-severity`` compares."""

    kind: str  # advisory, no-longer-fits, not-on-main, vanished, remote-code, unpinned
    severity: Severity
    message: str
    advisory: Published | None = None


@dataclass(frozen=True)
class IgnoredFinding:
    """A finding an ignore rule accepted (tracker.audit.ignore): why, until when, which rule."""

    finding: Finding
    reason: str
    where: str
    until: date | None = None


@dataclass(frozen=True)
class CardVerdict:
    """Whether the pin's workload fits ``card`` at the pinned and at the newest revision."""

    card: str
    fits_pinned: bool | None
    fits_newest: bool | None


@dataclass(frozen=True)
class PinReport:
    """What the audit says of one pin."""

    pin: Pin
    sha: str | None
    newest: str | None
    behind: int | None
    findings: tuple[Finding, ...] = ()
    cards: tuple[CardVerdict, ...] = field(default=())
    ignored: tuple[IgnoredFinding, ...] = ()
    """Findings an ignore rule accepted (tracker.audit.ignore): reported, never counted."""
    cannot_judge: str | None = None
    """Why the audit could not judge this pin (its findings may then be incomplete)."""

    def at_least(self, severity: Severity) -> tuple[Finding, ...]:
        """The findings at or above ``severity``, the ones that make ``audit`` exit 1."""
        return tuple(f for f in self.findings if f.severity >= severity)


class Auditor:
    """Audits pins against one advisory source, one main history and the Hub for plans."""

    def __init__(
        self,
        advisories: AdvisorySource,
        history: MainHistory,
        resolve: Resolve,
        fetch_inputs: FetchInputs,
    ) -> None:
        self._advisories = advisories
        self._history = history
        self._resolve = resolve
        self._fetch = fetch_inputs
        self._plans: dict[tuple[str, str, Workload], Plan | str] = {}

    def audit(self, pins: Sequence[Pin]) -> list[PinReport]:
        """One report per pin, in order; reads each repo's advisories once, then main and plans.

        A pin the Hub cannot answer for is reported with ``cannot_judge``, not raised.
        """
        published = self._advisories.for_repos(p.repo_id for p in pins)
        return [self._one(pin, published.get(pin.repo_id, [])) for pin in pins]

    def _one(self, pin: Pin, published: Sequence[Published]) -> PinReport:
        try:
            history = self._history.shas(pin.repo_id) or []
        except TrackerError as exc:
            return PinReport(pin, None, None, None, cannot_judge=_could_not(pin, exc))
        newest = history[-1] if history else None
        if pin.revision is None:
            note = Finding(
                "unpinned",
                Severity.INFO,
                f"{pin.repo_id} is not pinned: every upstream change reaches it unreviewed",
            )
            return PinReport(
                pin, newest, newest, 0, (note,), self.card_verdicts(pin, newest, newest)
            )
        try:
            sha, position = self._place(pin, history)
        except RevisionGone:
            return PinReport(pin, None, newest, None, (_vanished(pin, newest),))
        except TrackerError as exc:
            return PinReport(pin, None, newest, None, cannot_judge=_could_not(pin, exc))
        if position is None:
            gone = Finding(
                "not-on-main",
                Severity.MODERATE,
                f"{pin.label} is not on main (a PR ref, or removed by a force-push); "
                f"main is at {newest[:12] if newest else 'nothing'}",
            )
            return PinReport(pin, sha, newest, None, (gone,), self.card_verdicts(pin, sha, newest))
        after = {s: i for i, s in enumerate(history) if i >= position}
        affecting = sorted(
            (a for a in published if a.old_sha in after), key=lambda a: after[a.old_sha or ""]
        )
        findings = [Finding("advisory", a.severity, a.summary, a) for a in affecting]
        cards = self.card_verdicts(pin, sha, newest)
        findings.extend(
            Finding(
                "no-longer-fits",
                Severity.HIGH,
                f"fits {c.card} at {sha[:12]} but not at the newest revision {newest[:12]}",
            )
            for c in cards
            if newest and c.fits_pinned and c.fits_newest is False
        )
        behind = len(history) - 1 - position
        later = history[position + 1 :]
        gap = self._advisories.gap(pin.repo_id, later) if later else None
        return PinReport(pin, sha, newest, behind, tuple(findings), cards, cannot_judge=gap)

    def _place(self, pin: Pin, history: Sequence[str]) -> tuple[str, int | None]:
        assert pin.revision is not None
        position = locate(history, pin.revision)
        if position is not None:
            return history[position], position
        sha = self._resolve(pin.repo_id, pin.revision)
        return sha, locate(history, sha)

    def card_verdicts(
        self, pin: Pin, sha: str | None, newest: str | None
    ) -> tuple[CardVerdict, ...]:
        """Per card of the pin, whether its workload fits at ``sha`` and at ``newest``."""
        if pin.workload is None or not pin.cards or sha is None:
            return ()
        at_pin = self._plan(pin.repo_id, sha, pin.workload)
        at_head = self._plan(pin.repo_id, newest, pin.workload) if newest else None
        return tuple(
            CardVerdict(card, _fits(at_pin, card, pin.workload), _fits(at_head, card, pin.workload))
            for card in pin.cards
        )

    def _plan(self, repo_id: str, sha: str, workload: Workload) -> Plan | str:
        key = (repo_id, sha, workload)
        if key not in self._plans:
            try:
                inputs = self._fetch(HubRef(repo_id, sha))
                self._plans[key] = plan(inputs.config, workload, inputs.manifest)
            except (TrackerError, EstimateError) as exc:
                self._plans[key] = str(exc)
        return self._plans[key]


def _vanished(pin: Pin, newest: str | None) -> Finding:
    """A pinned revision the Hub no longer has: history was rewritten under the pin."""
    return Finding(
        "vanished",
        Severity.HIGH,
        f"{pin.label} is not on the Hub: history was rewritten under it "
        "(super_squash_history, or a force-push the Hub has collected), or it never existed; "
        f"the pinned files cannot be downloaded again. Main is at "
        f"{newest[:12] if newest else 'nothing'}",
    )


def _fits(result: Plan | str | None, card: str, workload: Workload) -> bool | None:
    if not isinstance(result, Plan):
        return None
    for fit in result.cards:
        if fit.card.name == card:
            return fit.method(workload.method).fits
    return None


CLEAN, FOUND, USAGE, INCOMPLETE = 0, 1, 2, 3
"""The audit's exit codes, as osv-scanner separates findings from a scan that did not finish."""


def exit_code(reports: Iterable[PinReport], minimum: Severity) -> int:
    """3 when a pin could not be judged, else 1 when a finding reaches ``minimum``, else 0."""
    listed = list(reports)
    if any(r.cannot_judge for r in listed):
        return INCOMPLETE
    return FOUND if any(r.at_least(minimum) for r in listed) else CLEAN


def _could_not(pin: Pin, exc: TrackerError) -> str:
    """A Hub failure in the pin's words: the Hub's own ``repo@main:`` prefix is dropped,
    so the line names the pin the user wrote, never a branch they did not ask about."""
    text = str(exc)
    where, sep, detail = text.partition(": ")
    if sep and where.startswith(f"{pin.repo_id}@"):
        text = detail
    return f"the Hub did not answer for {pin.label}: {text}"


__all__ = [
    "CLEAN",
    "FOUND",
    "INCOMPLETE",
    "USAGE",
    "Auditor",
    "CardVerdict",
    "Finding",
    "PinReport",
    "exit_code",
]
