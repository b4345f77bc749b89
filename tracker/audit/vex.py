"""An audit as a CycloneDX 1.6 VEX document, built and serialised by cyclonedx-python-lib.

Each pin is a ``machine-learning-model`` component with the purl
``pkg:huggingface/ORG/NAME@SHA``; each advisory that affects a pin is a
vulnerability whose ``affects`` lists those components, analysed as
``in_triage``: the advisory says upstream changed what matters after the
pinned revision, and only its users can say whether that is exploitable for
them. Findings that are not advisories (fit, pinning) are not
vulnerabilities and are left to the other formats.
"""

from __future__ import annotations

from collections.abc import Sequence

from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.impact_analysis import ImpactAnalysisState
from cyclonedx.model.vulnerability import (
    BomTarget,
    Vulnerability,
    VulnerabilityAnalysis,
    VulnerabilityRating,
    VulnerabilitySeverity,
    VulnerabilitySource,
)
from cyclonedx.output.json import JsonV1Dot6
from packageurl import PackageURL

from storage.records import Severity
from tracker.audit.check import PinReport

SOURCE_NAME = "neurarch-trace"
RATING = {
    Severity.CRITICAL: VulnerabilitySeverity.CRITICAL,
    Severity.HIGH: VulnerabilitySeverity.HIGH,
    Severity.MODERATE: VulnerabilitySeverity.MEDIUM,
    Severity.LOW: VulnerabilitySeverity.LOW,
    Severity.INFO: VulnerabilitySeverity.INFO,
}


def to_vex(reports: Sequence[PinReport]) -> str:
    """The reports as CycloneDX 1.6 VEX JSON; findings that are not advisories are left out."""
    bom = Bom()
    vulnerabilities: dict[str, Vulnerability] = {}
    for number, report in enumerate(reports, start=1):
        ref = f"pin-{number}"
        org, name = report.pin.repo_id.split("/")
        bom.components.add(
            Component(
                type=ComponentType.MACHINE_LEARNING_MODEL,
                name=report.pin.repo_id,
                version=report.sha or report.pin.revision or "main",
                purl=PackageURL("huggingface", org, name, report.sha or None),
                bom_ref=ref,
            )
        )
        for finding in report.findings:
            advisory = finding.advisory
            if advisory is None:
                continue
            if advisory.id not in vulnerabilities:
                vulnerabilities[advisory.id] = Vulnerability(
                    bom_ref=advisory.id,
                    id=advisory.id,
                    source=VulnerabilitySource(name=SOURCE_NAME),
                    description=advisory.summary,
                    ratings=[VulnerabilityRating(severity=RATING[advisory.severity])],
                    analysis=VulnerabilityAnalysis(
                        state=ImpactAnalysisState.IN_TRIAGE,
                        detail=(
                            f"upstream changed {advisory.repo_id} at "
                            f"{(advisory.old_sha or '')[:12]} -> {advisory.new_sha[:12]}, "
                            "after the pinned revision"
                        ),
                    ),
                )
            vulnerabilities[advisory.id].affects.add(BomTarget(ref=ref))
    for vulnerability in vulnerabilities.values():
        bom.vulnerabilities.add(vulnerability)
    return JsonV1Dot6(bom).output_as_string(indent=2) + "\n"


__all__ = ["to_vex"]
