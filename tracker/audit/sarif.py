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

The log is built from sarif-pydantic's models of SARIF 2.1.0 (maintained,
pydantic v2, serialises by the spec's camelCase names); sarif-om, the other
object model, has had no release since 2019 and cannot write JSON itself.
Two members the models lack (``result.suppressions``, where they have a
singular ``suppression``, and ``invocation.toolExecutionNotifications``) go
in through the models' open extra fields, under the spec's own names.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from sarif_pydantic.sarif import (
    ArtifactLocation,
    Invocation,
    Level,
    Location,
    LogicalLocation,
    Message,
    Notification,
    PhysicalLocation,
    Region,
    ReportingConfiguration,
    ReportingDescriptor,
    Result,
    Run,
    Sarif,
    Suppression,
    Tool,
    ToolDriver,
)

from storage.records import Severity
from tracker.audit.check import Finding, PinReport
from tracker.audit.text import words_within

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SHORT_DESCRIPTION_CHARS = 1000
"""GitHub shows at most 1,024 characters of a rule's short description."""
INFORMATION_URI = "https://huggingface.co/docs/hub/models"
LEVEL = {
    Severity.CRITICAL: Level.ERROR,
    Severity.HIGH: Level.ERROR,
    Severity.MODERATE: Level.WARNING,
    Severity.LOW: Level.NOTE,
    Severity.INFO: Level.NOTE,
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
    rules: dict[str, ReportingDescriptor] = {}
    results = []
    for report in reports:
        accepted = [(i.finding, i.reason) for i in report.ignored]
        for finding, reason in [(f, None) for f in report.findings] + accepted:
            rule_id = _rule_id(finding)
            if rule_id not in rules:
                rules[rule_id] = _rule(rule_id, finding)
            index = list(rules).index(rule_id)
            results.append(_result(report, finding, rule_id, index, root, reason))
    driver = ToolDriver(
        name="neurarch-trace",
        version=_own_version(),
        information_uri=INFORMATION_URI,
        rules=list(rules.values()),
    )
    run = Run(tool=Tool(driver=driver), results=results, invocations=[_invocation(reports)])
    log = Sarif(schema_uri=SCHEMA_URI, version="2.1.0", runs=[run])
    return str(log.model_dump_json(indent=2, by_alias=True, exclude_none=True)) + "\n"


def _invocation(reports: Sequence[PinReport]) -> Invocation:
    """SARIF's place for a run that did not finish: each pin it could not judge, as an error."""
    notes = [
        Notification(
            level=Level.ERROR,
            message=Message(text=f"{r.pin.label}: cannot judge: {r.cannot_judge}"),
        )
        for r in reports
        if r.cannot_judge
    ]
    return Invocation(execution_successful=not notes, toolExecutionNotifications=notes)


def _rule_id(finding: Finding) -> str:
    return finding.advisory.id if finding.advisory else f"neurarch-trace/{finding.kind}"


def _rule(rule_id: str, finding: Finding) -> ReportingDescriptor:
    text = finding.message if finding.advisory else KIND_TEXT.get(finding.kind, finding.kind)
    tags = ["model", "supply-chain"]
    properties: dict[str, object] = {"tags": tags}
    if finding.advisory is not None and finding.advisory.security_relevant:
        tags.append("security")
        properties["security-severity"] = SECURITY_SEVERITY[finding.severity]
    return ReportingDescriptor(
        id=rule_id,
        short_description=Message(text=words_within(text, SHORT_DESCRIPTION_CHARS)),
        default_configuration=ReportingConfiguration(level=LEVEL[finding.severity].value),
        properties=properties,
    )


def _result(
    report: PinReport,
    finding: Finding,
    rule_id: str,
    index: int,
    root: Path,
    ignored_because: str | None,
) -> Result:
    label = f"{report.pin.repo_id}@{report.sha or report.pin.revision or 'main'}"
    suppressions = (
        None
        if ignored_because is None
        else [Suppression(kind="external", justification=ignored_because)]
    )
    return Result(
        rule_id=rule_id,
        rule_index=index,
        level=LEVEL[finding.severity],
        message=Message(text=f"{label}: {finding.message}"),
        partial_fingerprints={"pin/v1": f"{label}|{rule_id}"},
        locations=[_location(report, label, root)],
        suppressions=suppressions,
    )


def _location(report: PinReport, label: str, root: Path) -> Location:
    """The pin's line in its file, relative to ``root``; else the repo and revision by name."""
    origin = report.pin.origin
    if origin.path is not None and origin.path.is_file():
        region = Region(start_line=origin.line) if origin.line else None
        artifact = _artifact(origin.path, root)
        return Location(
            physical_location=PhysicalLocation(artifact_location=artifact, region=region)
        )
    logical = LogicalLocation(name=label, kind="module", fully_qualified_name=label)
    return Location(logical_locations=[logical])


def _artifact(path: Path, root: Path) -> ArtifactLocation:
    resolved, base = path.resolve(), root.resolve()
    if resolved.is_relative_to(base):
        return ArtifactLocation(uri=resolved.relative_to(base).as_posix(), uri_base_id="%SRCROOT%")
    return ArtifactLocation(uri=resolved.as_uri())


def _own_version() -> str:
    try:
        return version("neurarch-trace")
    except PackageNotFoundError:
        return "0"


__all__ = ["to_sarif"]
