"""Findings a team accepts on purpose: an ignore file, and ``--ignore`` on the command line.

pip-audit has ``--ignore-vuln ID``, osv-scanner an ``[[IgnoredVulns]]`` table
with a reason and ``ignoreUntil``. The audit reads the same idea from TOML:

    [[ignore]]
    id = "x_NEURARCH-meta-llama-Llama-2-7b-hf-0123456789ab"  # an advisory, or a finding
    reason = "we stay on this template until our evals pass"  # required
    until = 2027-03-31                                       # optional: then it counts again

    [[ignore]]
    kind = "chat_template"        # every advisory all of whose changes are of this artifact
    repo = "meta-llama/*"         # optional: only these repos (a glob)
    reason = "templates are reviewed by hand"

``id`` names an advisory id or a finding's rule (``neurarch-trace/not-on-main``);
``kind`` an artifact (``config``, ``tokenizer``, ``chat_template``, ``code`` ...)
or a finding kind (``unpinned``, ``not-on-main``, ``vanished``,
``no-longer-fits``). An advisory is ignored by kind only when every change it
reports is of that kind, so a code change bundled with an accepted template
change still counts. An ignore past its ``until`` date suppresses nothing: the
finding is back, saying the ignore expired. Ignored findings stay in the report
(JSON ``ignored``, SARIF suppressions) and never decide the exit code.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from tracker.audit.check import Finding, IgnoredFinding, PinReport
from tracker.audit.pins import AuditInputError, read_toml

MAX_IGNORE_BYTES = 1 * 2**20
RULE_KEYS = frozenset({"id", "kind", "repo", "reason", "until"})


@dataclass(frozen=True)
class IgnoreRule:
    """One accepted finding: what it matches, why, and until when."""

    reason: str
    where: str
    id: str | None = None
    kind: str | None = None
    repo: str | None = None
    until: date | None = None

    def matches(self, repo_id: str, finding: Finding) -> bool:
        """Whether this rule names ``finding`` of ``repo_id`` (expiry aside)."""
        if self.repo is not None and not fnmatchcase(repo_id, self.repo):
            return False
        if self.id is not None and self.id != rule_id(finding):
            return False
        return self.kind is None or _of_kind(finding, self.kind)

    def expired(self, today: date) -> bool:
        """True from the day after ``until``: an expired rule no longer hides its finding."""
        return self.until is not None and today > self.until


def rule_id(finding: Finding) -> str:
    """The id a finding is known by: its advisory's, or ``neurarch-trace/<kind>``."""
    return finding.advisory.id if finding.advisory else f"neurarch-trace/{finding.kind}"


def ignore_rules(path: Path) -> list[IgnoreRule]:
    """The ``[[ignore]]`` tables of an ignore file, each checked by name."""
    document = read_toml(path, MAX_IGNORE_BYTES, "an ignore file")
    unknown = set(document) - {"ignore"}
    if unknown:
        raise AuditInputError(
            f"{path}: unknown top-level keys {sorted(unknown)}; expected [[ignore]]"
        )
    tables = document.get("ignore", [])
    if not isinstance(tables, list):
        raise AuditInputError(f"{path}: 'ignore' must be an array of tables ([[ignore]])")
    return [_rule(table, f"{path} [[ignore]] #{n}") for n, table in enumerate(tables, start=1)]


def ignore_argument(text: str) -> IgnoreRule:
    """``--ignore ID``: an advisory or finding id accepted for this run."""
    if not text.strip():
        raise AuditInputError("--ignore: give an advisory id or a finding rule id")
    return IgnoreRule(reason="--ignore on the command line", where="--ignore", id=text.strip())


def apply_ignores(
    reports: Sequence[PinReport], rules: Sequence[IgnoreRule], today: date
) -> list[PinReport]:
    """The reports with every finding an unexpired rule accepts moved to ``ignored``."""
    if not rules:
        return list(reports)
    return [_apply(report, rules, today) for report in reports]


def _apply(report: PinReport, rules: Sequence[IgnoreRule], today: date) -> PinReport:
    kept: list[Finding] = []
    ignored: list[IgnoredFinding] = list(report.ignored)
    for finding in report.findings:
        matching = [r for r in rules if r.matches(report.pin.repo_id, finding)]
        live = [r for r in matching if not r.expired(today)]
        if live:
            rule = live[0]
            ignored.append(IgnoredFinding(finding, rule.reason, rule.where, rule.until))
        elif matching:
            rule = matching[0]
            note = f" (accepted until {rule.until}, expired: {rule.reason})"
            kept.append(replace(finding, message=finding.message + note))
        else:
            kept.append(finding)
    return replace(report, findings=tuple(kept), ignored=tuple(ignored))


def _of_kind(finding: Finding, kind: str) -> bool:
    if finding.advisory is None:
        return finding.kind == kind
    artifacts = {artifact for artifact, _ in finding.advisory.changes}
    return artifacts == {kind}


def _rule(table: Any, where: str) -> IgnoreRule:
    if not isinstance(table, dict):
        raise AuditInputError(f"{where}: must be a table")
    unknown = set(table) - RULE_KEYS
    if unknown:
        raise AuditInputError(
            f"{where}: unknown keys {sorted(unknown)} (known: {sorted(RULE_KEYS)})"
        )
    reason = table.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise AuditInputError(f"{where}: 'reason' is required: say why the finding is accepted")
    if "id" not in table and "kind" not in table:
        raise AuditInputError(f"{where}: give 'id' or 'kind' (or both)")
    for key in ("id", "kind", "repo"):
        if key in table and (not isinstance(table[key], str) or not table[key]):
            raise AuditInputError(f"{where}: '{key}' must be a non-empty string")
    until = table.get("until")
    if until is not None and not (isinstance(until, date) and not hasattr(until, "hour")):
        raise AuditInputError(f"{where}: 'until' must be a TOML date such as 2027-03-31")
    return IgnoreRule(
        reason=reason.strip(),
        where=where,
        id=table.get("id"),
        kind=table.get("kind"),
        repo=table.get("repo"),
        until=until,
    )


__all__ = [
    "IgnoreRule",
    "apply_ignores",
    "ignore_argument",
    "ignore_rules",
    "rule_id",
]
