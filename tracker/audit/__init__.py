"""``neurarch-trace audit``: which pinned model revisions upstream changes affect.

pins (command line, lock file) and local_sources (HF cache, Python sources)
say what is in use; advisories (local database or an OSV-compatible server)
and history (main, from the database or the Hub) say what changed after it;
check joins them into one ``PinReport`` per pin; render, sarif and vex write it.
"""

from tracker.audit.advisories import (
    AdvisoryServerError,
    AdvisorySource,
    DatabaseAdvisories,
    OsvServerAdvisories,
    Published,
)
from tracker.audit.check import Auditor, CardVerdict, Finding, PinReport, exit_code
from tracker.audit.pins import AuditInputError, Origin, Pin

__all__ = [
    "AdvisoryServerError",
    "AdvisorySource",
    "AuditInputError",
    "Auditor",
    "CardVerdict",
    "DatabaseAdvisories",
    "Finding",
    "Origin",
    "OsvServerAdvisories",
    "Pin",
    "PinReport",
    "Published",
    "exit_code",
]
