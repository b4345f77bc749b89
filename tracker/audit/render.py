"""An audit's reports as a terminal table, JSON or Markdown (SARIF and VEX have their own modules).

The table and Markdown say per pin where it was found, the revision, how far
main has moved, and each finding with its severity, most severe first. JSON
is the same facts as data, for scripts; its field names are stable.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tracker.audit.check import Finding, IgnoredFinding, PinReport
from tracker.audit.ignore import rule_id

SHORT = 12


def to_json(reports: Sequence[PinReport]) -> str:
    """The reports as JSON for scripts (``{"pins": [...]}``); its field names are stable."""
    return json.dumps({"pins": [_report_json(r) for r in reports]}, indent=2) + "\n"


def to_table(reports: Sequence[PinReport]) -> str:
    """The reports for a terminal: a block per pin, most severe finding first, then a total."""
    lines = []
    for report in reports:
        lines.append(f"{report.pin.label}  ({report.pin.origin})")
        lines.append(f"  {_position(report)}")
        if report.cannot_judge:
            lines.append(f"  cannot judge: {report.cannot_judge}")
        for finding in _ordered(report.findings):
            lines.append(f"  [{finding.severity.label}] {_finding_line(finding)}")
        for accepted in report.ignored:
            lines.append(f"  [ignored] {_finding_line(accepted.finding)} — {_accepted(accepted)}")
        for verdict in report.cards:
            lines.append(
                f"  {verdict.card}: {_fit(verdict.fits_pinned)} pinned, "
                f"{_fit(verdict.fits_newest)} newest"
            )
    found = sum(len(r.findings) for r in reports)
    ignored = sum(len(r.ignored) for r in reports)
    unjudged = sum(1 for r in reports if r.cannot_judge)
    tail = f", {ignored} ignored" if ignored else ""
    tail += f", {unjudged} could not be judged" if unjudged else ""
    lines.append(f"{len(reports)} pins audited, {found} findings{tail}")
    return "\n".join(lines) + "\n"


def to_markdown(reports: Sequence[PinReport]) -> str:
    """The reports as one Markdown table, a row per finding (one saying so for a clean pin)."""
    rows = [
        "| Model | Pinned | Newest | Behind | Severity | Finding |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for report in reports:
        findings = _ordered(report.findings) or ()
        if report.cannot_judge:
            rows.append(_row(report, "", f"cannot judge: {report.cannot_judge}"))
        elif not findings:
            rows.append(_row(report, "", "no findings"))
        for finding in findings:
            rows.append(_row(report, finding.severity.label, _finding_line(finding)))
        for accepted in report.ignored:
            text = f"{_finding_line(accepted.finding)} — {_accepted(accepted)}"
            rows.append(_row(report, "ignored", text))
    return "\n".join(rows) + "\n"


def _row(report: PinReport, severity: str, text: str) -> str:
    cells = [
        report.pin.repo_id,
        (report.sha or report.pin.revision or "main")[:SHORT],
        (report.newest or "?")[:SHORT],
        "?" if report.behind is None else str(report.behind),
        severity,
        text,
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _cell(text: str) -> str:
    """Markdown table cell text: pipes, HTML, entities and line breaks neutralised.

    ``<`` and ``&`` are escaped so no tag or entity survives; ``>`` alone opens
    nothing inside a cell, so ``->`` stays readable.
    """
    escaped = text.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;")
    return " ".join(escaped.replace("|", "\\|").replace("`", "\\`").split())


def _ordered(findings: Sequence[Finding]) -> tuple[Finding, ...]:
    return tuple(sorted(findings, key=lambda f: -int(f.severity)))


def _finding_line(finding: Finding) -> str:
    if finding.advisory is None:
        return finding.message
    a = finding.advisory
    return f"{a.id} ({(a.old_sha or '')[:SHORT]} -> {a.new_sha[:SHORT]}): {finding.message}"


def _accepted(accepted: IgnoredFinding) -> str:
    until = f" until {accepted.until}" if accepted.until else ""
    return f"accepted{until}: {accepted.reason} ({accepted.where})"


def _position(report: PinReport) -> str:
    if report.sha is None:
        return "revision unknown"
    if report.behind is None:
        return f"at {report.sha[:SHORT]}, not on main (main at {(report.newest or '?')[:SHORT]})"
    if report.behind == 0:
        return f"at {report.sha[:SHORT]}, the newest revision"
    return f"at {report.sha[:SHORT]}, {report.behind} commits behind main ({(report.newest or '?')[:SHORT]})"


def _fit(value: bool | None) -> str:
    return {True: "fits", False: "does not fit", None: "no estimate"}[value]


def _report_json(report: PinReport) -> dict[str, Any]:
    pin = report.pin
    return {
        "repo_id": pin.repo_id,
        "requested": pin.revision,
        "revision": report.sha,
        "newest": report.newest,
        "behind": report.behind,
        "cannot_judge": report.cannot_judge,
        "origin": {
            "where": pin.origin.where,
            "path": str(pin.origin.path) if pin.origin.path else None,
            "line": pin.origin.line,
        },
        "findings": [
            {
                "kind": f.kind,
                "severity": f.severity.label,
                "message": f.message,
                "advisory": None
                if f.advisory is None
                else {
                    "id": f.advisory.id,
                    "old_sha": f.advisory.old_sha,
                    "new_sha": f.advisory.new_sha,
                },
            }
            for f in _ordered(report.findings)
        ],
        "cards": [
            {"card": c.card, "fits_pinned": c.fits_pinned, "fits_newest": c.fits_newest}
            for c in report.cards
        ],
        "ignored": [
            {
                "kind": i.finding.kind,
                "severity": i.finding.severity.label,
                "message": i.finding.message,
                "id": rule_id(i.finding),
                "reason": i.reason,
                "until": i.until.isoformat() if i.until else None,
                "rule": i.where,
            }
            for i in report.ignored
        ],
    }


__all__ = ["to_json", "to_markdown", "to_table"]
