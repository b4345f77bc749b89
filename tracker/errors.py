"""Errors the tracker raises, each with a message a user can act on.

    TrackerError
    ├── RepoIdError            a repo id breaks the Hub's naming rules (names the rule)
    ├── SettingsError          the configuration file or an environment variable is unusable
    │   └── ConfigFileError    a value in the TOML file (names the table and key)
    ├── HubError               the Hub could not give us what we asked for
    │   ├── RepoGone           the repo does not exist (deleted, renamed, or never was)
    │   ├── RevisionGone       the repo exists but the revision does not (force-push)
    │   ├── FileGone           the revision exists but the file does not
    │   ├── Gated              the repo needs accepted terms or a token with access
    │   ├── RateLimited        HTTP 429 after the client's own retries; ``retry_after``
    │   └── HubUnavailable     5xx, connection errors, timeouts, truncated bodies
    ├── ArtifactError          an upstream file is unusable as data (recorded as a change)
    │   ├── OversizedFile      a text file is larger than its limit, so it was not loaded
    │   ├── HeaderTooLarge     a safetensors header declares more bytes than we accept
    │   ├── HeaderInvalid      a safetensors header is not the JSON the format defines
    │   └── UnsafePath         a file name that could escape a directory (``..``, ``/x``)
    └── NotTracked             the command names a repo or revision we have not recorded

Hub errors are translated from huggingface_hub's own exceptions in
``tracker.hub`` with ``raise ... from``, so the cause stays visible.
"""

from __future__ import annotations


class TrackerError(Exception):
    """Base of every error the tracker raises."""


class RepoIdError(TrackerError, ValueError):
    """A repo id the Hub would reject."""


class SettingsError(TrackerError):
    """The configuration file or an environment variable is unusable (names which)."""


class ConfigFileError(SettingsError):
    """The configuration file is missing, not TOML, or holds a bad value (named)."""


class HubError(TrackerError):
    """The Hub could not answer the request."""


class RepoGone(HubError):
    """The repo is not on the Hub (deleted, renamed, private, or mistyped)."""


class RevisionGone(HubError):
    """The revision is not in the repo (history rewritten, or mistyped)."""


class FileGone(HubError):
    """The file is not at that revision."""


class Gated(HubError):
    """The repo is gated: accept its terms on the Hub and set HF_TOKEN."""


class RateLimited(HubError):
    """The Hub keeps answering 429; ``retry_after`` is its hint in seconds, if it gave one."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class HubUnavailable(HubError):
    """The Hub failed (5xx, reset, timeout, truncated body); retrying later may work."""


class ArtifactError(TrackerError):
    """An upstream file cannot be used as data; the tracker records it as a change."""


class OversizedFile(ArtifactError):
    """A text file is over its size limit and was not loaded."""


class HeaderTooLarge(ArtifactError):
    """A safetensors header declares more bytes than the tracker reads."""


class HeaderInvalid(ArtifactError):
    """A safetensors header that does not follow the format."""


class UnsafePath(ArtifactError):
    """A file name that could name something outside the repo if used as a path."""


class NotTracked(TrackerError):
    """Nothing is recorded for the repo or revision the command names."""


__all__ = [
    "ArtifactError",
    "ConfigFileError",
    "FileGone",
    "Gated",
    "HeaderInvalid",
    "HeaderTooLarge",
    "HubError",
    "HubUnavailable",
    "NotTracked",
    "OversizedFile",
    "RateLimited",
    "RepoGone",
    "RepoIdError",
    "RevisionGone",
    "SettingsError",
    "TrackerError",
    "UnsafePath",
]
