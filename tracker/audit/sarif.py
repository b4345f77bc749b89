"""An audit as SARIF 2.1.0, the format GitHub code scanning reads.

One rule per advisory id (and one per kind of finding that is not an
advisory: a workload that no longer fits, a pin not on main, an unpinned
model, a repo that cannot be read), one result per finding. A pin found in a
file (the lock file, a Python source) points at its line, relative to
``root`` so code scanning shows it in place; a pin from the command line or
the HF cache has a logical location (the repo and revision) instead.
``security-severity`` follows GitHub's bands (critical >= 9.0, high >= 7.0,
medium >= 4.0, low > 0), as code scanning ranks alerts by it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from storage.records import Severity
from tracker.audit.check import Finding, PinReport

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
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
    "unpinned": "The model is not pinned to a revision",
}


def to_sarif(reports: Sequence[PinReport], root: Path) -> str:
    rules: dict[str, dict[str, Any]] = {}
    results = []
    for report in reports:
        for finding in report.findings:
            rule_id = _rule_id(finding)
            if rule_id not in rules:
                rules[rule_id] = _rule(rule_id, finding)
            results.append(_result(report, finding, rule_id, list(rules).index(rule_id), root))
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
    return {
        "id": rule_id,
        "shortDescription": {"text": text[:1000]},
        "defaultConfiguration": {"level": LEVEL[finding.severity]},
        "properties": {
            "tags": ["model", "supply-chain"],
            "security-severity": SECURITY_SEVERITY[finding.severity],
        },
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
