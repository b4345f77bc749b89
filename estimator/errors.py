"""Errors the estimator raises, each with a message a user can act on.

EstimateError
├── ConfigError        config.json is unusable: not an object, a field missing,
│                      of the wrong type, or outside sane bounds (names the field)
├── ManifestError      a weight manifest (safetensors header or index) is malformed
├── PlanJsonError      a stored document is not Plan JSON (Plan.from_json refuses it)
└── WorkloadError      the requested workload is impossible (batch 0, unknown card, ...)
    └── StackError     a stack entry names no library and version (torch>=2, torch==latest)
"""

from __future__ import annotations


class EstimateError(Exception):
    """Base of every error the estimator raises."""


class ConfigError(EstimateError):
    """config.json cannot be estimated; the message names the field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ManifestError(EstimateError):
    """A weight manifest is malformed."""


class PlanJsonError(EstimateError):
    """A document handed to ``Plan.from_json`` is not what ``Plan.to_json`` writes."""


class WorkloadError(EstimateError):
    """The workload asks for something that cannot be estimated."""


class StackError(WorkloadError):
    """A stack entry that names no library and version (``torch>=2``, ``torch==latest``)."""
