"""Pins that run code from another repo at that repo's main: a finding of their own.

A model whose ``auto_map`` names ``other/repo--module.Class`` makes
transformers load ``module.py`` from *other/repo*; without ``code_revision``
it loads it at main, so a pin on the model pins nothing of that code
(tracker.revision.remote_code). The audit reads what the local database recorded for
the pinned revision (the referenced repos and their main's commit when it was
taken) and says so per referenced repo. A source that passes
``code_revision=`` in the same call (transformers then loads the other repo at
that revision too) has pinned it, and gets no such finding.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from storage import Database, RepoId
from storage.publishing import card_at
from storage.records import Severity
from tracker.audit.check import Finding, PinReport
from tracker.revision.remote_code import CARD_KEY

KIND = "remote-code"


def add_remote_code_findings(reports: Sequence[PinReport], database: Database) -> list[PinReport]:
    """The reports, each pin that loads another repo's code unpinned given a finding per repo."""
    pinned_code = {
        (r.pin.origin.path, r.pin.origin.line)
        for r in reports
        if r.pin.origin.where.endswith(" code_revision")
    }
    out = []
    with database.read_session() as session:
        for report in reports:
            origin = (report.pin.origin.path, report.pin.origin.line)
            if report.sha is None or (origin in pinned_code and report.pin.origin.path):
                out.append(report)
                continue
            # the card alone: a whole snapshot would read the file list and the manifest too
            card = (
                card_at(session, RepoId(report.pin.repo_id), report.sha) or {}
            )  # a lookup key only
            referenced = card.get(CARD_KEY)
            found = _findings(report, referenced) if isinstance(referenced, dict) else []
            out.append(
                replace(report, findings=report.findings + tuple(found)) if found else report
            )
    return out


def _findings(report: PinReport, referenced: dict[str, object]) -> list[Finding]:
    findings = []
    for repo_id, seen in sorted(referenced.items()):
        at = seen.get("sha") if isinstance(seen, dict) else None
        when = f" (its main was {str(at)[:12]} when this revision was recorded)" if at else ""
        findings.append(
            Finding(
                KIND,
                Severity.MODERATE,
                f"{report.pin.label} loads code from {repo_id} at that repo's main{when}, not "
                "at the pinned revision: pass code_revision= or vendor the code",
            )
        )
    return findings


__all__ = ["KIND", "add_remote_code_findings"]
