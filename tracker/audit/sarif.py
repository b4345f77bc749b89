"""An audit as SARIF 2.1.0, the format GitHub code scanning reads.

One rule per advisory id (and one per kind of finding that is not an
advisory: a workload that no longer fits, a pin not on main, an unpinned
model, a repo that cannot be read), one result per finding. A pin found in a
file (the lock file, a Python source) points at its line, relative to
``root`` so code scanning shows it in place; a pin from the command line or
the HF cache has a logical location (the repo and revision) instead.
Only findings about what runs on the user's machine carry
``security-severity`` (an advisory reporting code, remote code, pickles or
unsafe names: ``Published.security_relevant``), following GitHub's bands
(critical >= 9.0, high >= 7.0, medium >= 4.0, low > 0); GitHub files a rule
with that property as a security alert. Every other finding (a config,
tokenizer or template change, a fit, a pin) is a quality finding with a
``level`` alone. An ignored finding is kept as a result with an external
suppression and its reason, as code scanning expects. Texts are cut between
words.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from storage.records import Severity
from tracker.audit.check import Finding, PinReport
from tracker.audit.text import words_within

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SHORT_DESCRIPTION_CHARS = 1000
"""GitHub shows at most 1,024 characters of a rule's short description."""
INFORMATION_URI = "https://huggingface.co/docs/hub/models"
LEVEL = {
    Severity.CRITICAL: "error",
    Severity.HIGH: "error",
    Severity.MODERATE: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}
SECURITY_SEVERITY = {
    Severity.CRITICAL: "9.5",
    Severity.HIGH: "8.0",
    Severity.MODERATE: "5.5",
    Severity.LOW: "3.0",
    Severity.INFO: "0.0",
}
KIND_TEXT = {
    "no-longer-fits": "The newest revision no longer fits a card the pinned one fits",
    "not-on-main": "The pinned revision is not on main",
    "vanished": "The pinned revision no longer exists: history was rewritten under it",
    "remote-code": "The model loads code from another repo at that repo's main, not pinned",
    "unpinned": "The model is not pinned to a revision",
}


def to_sarif(reports: Sequence[PinReport], root: Path) -> str:
    """The reports as a SARIF 2.1.0 log; file locations are made relative to ``root``."""
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for report in reports:
        accepted = [(i.finding, i.reason) for i in report.ignored]
        for finding, reason in [(f, None) for f in report.findings] + accepted:
            rule_id = _rule_id(finding)
            if rule_id not in rules:
                rules[rule_id] = _rule(rule_id, finding)
            result = _result(report, finding, rule_id, list(rules).index(rule_id), root)
            if reason is not None:
                result["suppressions"] = [{"kind": "external", "justification": reason}]
            results.append(result)
    log = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "neurarch-trace",
                        "version": _own_version(),
                        "informationUri": INFORMATION_URI,
                        "rules": list(rules.values()),
                    }
                },
                "results": results,
                "invocations": [_invocation(reports)],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _invocation(reports: Sequence[PinReport]) -> dict[str, Any]:
    """SARIF's place for a run that did not finish: each pin it could not judge, as an error."""
    notes = [
        {
            "level": "error",
            "message": {"text": f"{r.pin.label}: cannot judge: {r.cannot_judge}"},
        }
        for r in reports
        if r.cannot_judge
    ]
    return {"executionSuccessful": not notes, "toolExecutionNotifications": notes}


def _rule_id(finding: Finding) -> str:
    return finding.advisory.id if finding.advisory else f"neurarch-trace/{finding.kind}"


def _rule(rule_id: str, finding: Finding) -> dict[str, Any]:
    text = finding.message if finding.advisory else KIND_TEXT.get(finding.kind, finding.kind)
    properties: dict[str, Any] = {"tags": ["model", "supply-chain"]}
    if finding.advisory is not None and finding.advisory.security_relevant:
        properties["tags"].append("security")
        properties["security-severity"] = SECURITY_SEVERITY[finding.severity]
    return {
        "id": rule_id,
        "shortDescription": {"text": words_within(text, SHORT_DESCRIPTION_CHARS)},
        "defaultConfiguration": {"level": LEVEL[finding.severity]},
        "properties": properties,
    }


def _result(
    report: PinReport, finding: Finding, rule_id: str, index: int, root: Path
) -> dict[str, Any]:
    label = f"{report.pin.repo_id}@{report.sha or report.pin.revision or 'main'}"
    result: dict[str, Any] = {
        "ruleId": rule_id,
        "ruleIndex": index,
        "level": LEVEL[finding.severity],
        "message": {"text": f"{label}: {finding.message}"},
        "partialFingerprints": {"pin/v1": f"{label}|{rule_id}"},
    }
    origin = report.pin.origin
    if origin.path is not None and origin.path.is_file():
        region = {"region": {"startLine": origin.line}} if origin.line else {}
        result["locations"] = [
            {"physicalLocation": {"artifactLocation": _artifact(origin.path, root), **region}}
        ]
    else:
        result["locations"] = [
            {"logicalLocations": [{"name": label, "kind": "module", "fullyQualifiedName": label}]}
        ]
    return result


def _artifact(path: Path, root: Path) -> dict[str, str]:
    resolved, base = path.resolve(), root.resolve()
    if resolved.is_relative_to(base):
        return {"uri": resolved.relative_to(base).as_posix(), "uriBaseId": "%SRCROOT%"}
    return {"uri": resolved.as_uri()}


def _own_version() -> str:
    try:
        return version("neurarch-trace")
    except PackageNotFoundError:
        return "0"


__all__ = ["to_sarif"]
