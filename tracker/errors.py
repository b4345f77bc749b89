"""Errors the tracker raises, each with a message a user can act on.

    TrackerError
    ├── RepoIdError            a repo id breaks the Hub's naming rules (names the rule); ValueError
    ├── SettingsError          the configuration file or an environment variable is unusable
    │   └── ConfigFileError    a value in the TOML file (names the table and key)
    ├── UsageError             bad arguments or input: the CLI prints it and exits 2
    ├── JsonInputError         a document is not JSON that can be read (says where); ValueError
    │   └── JsonSyntaxError    the bytes are not JSON at all (bad UTF-8, a syntax error)
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
    │   ├── UnsafePath         a file name that could escape a directory (``..``, ``/x``)
    │   └── ArtifactParseError an artifact's bytes do not parse (a parse_error change); ValueError
    │       ├── TokenizerParseError  the tokenizers library rejected tokenizer.json
    │       └── FrontMatterError     README.md front matter is not YAML a card can be read from
    ├── NotTracked             the command names a repo or revision we have not recorded
    ├── RenderError            a chat template failed to render in the sandbox
    │   ├── RenderLimit        it asked for more than a limit allows (refused, stopped, OOM)
    │   │   └── RenderTimeout  it ran past its time budget and was stopped (tracker.diff.sandbox)
    │   └── TemplateRefusal    the template's own raise_exception(): a conversation it refuses
    │                          (tracker.diff.sandbox); also jinja2's TemplateError
    ├── IsolationError         an isolated call returned no value (tracker.untrusted.isolation)
    │   ├── LimitExceeded      it hit a limit and its worker is gone
    │   │   ├── DeadlineExceeded   past its wall-clock deadline; the worker was killed
    │   │   └── WorkerDied         CPU or memory limit, or a crash in native code
    │   ├── RemoteError        the isolated function raised; ``kind`` names its type
    │   ├── WorkerUnavailable  no worker process could be started
    │   └── PoolClosed         the pool no longer takes calls
    ├── LeaseLost              another instance holds the repo's lease now (tracker.schedule.leases)
    ├── ServeFailed            a serving process could not start or died (tracker.roles)
    │   └── CannotListen       the HTTP listener could not be bound
    ├── SubscriptionError      a malformed subscription document (tracker.alerts.spec); ValueError
    ├── AllowListError         an unusable [alerts] allow entry (tracker.alerts.egress); ValueError
    ├── EgressRefused          an alert destination that is not public (tracker.alerts.addresses)
    │   ├── Unresolvable       the host has no address now; a later attempt may find one
    │   └── ConnectRefused     a socket was about to connect where alerts may not go;
    │                          PermissionError
    ├── DeliveryFailed         pushing an alert failed (tracker.alerts.channels)
    ├── RetryPolicyError       a retry policy that describes no backoff (tracker.alerts.deliver)
    ├── AuditInputError        a pin, lock file or tree the audit cannot read (tracker.audit.pins)
    ├── AdvisoryServerError    the advisory server is unreachable or not OSV (tracker.audit)
    └── HubSimError            the Hub emulator's own errors (tracker.hubsim.errors)
        ├── CorpusError        the corpus directory cannot be replayed
        ├── ScriptError        a scripting call names something the emulator does not hold
        └── ErrorAnswer        an error answer inside an emulator route, carrying its Response
                               (tracker.hubsim.routes)

Classes without a module named are defined here; the others live beside the
code that raises them and subclass these. ``ValueError`` / ``PermissionError``
are second bases kept so that callers catching the builtin keep working.
Hub errors are translated from huggingface_hub's own exceptions in
``tracker.hub.client`` with ``raise ... from``, so the cause stays visible.
tests/test_docs.py checks that every error class is drawn here and in the README.
"""

from __future__ import annotations


class TrackerError(Exception):
    """Base of every error the tracker raises."""


class UsageError(TrackerError):
    """Bad arguments or input: the CLI prints the message and exits 2."""


class RepoIdError(TrackerError, ValueError):
    """A repo id the Hub would reject."""


class SettingsError(TrackerError):
    """The configuration file or an environment variable is unusable (names which)."""


class ConfigFileError(SettingsError):
    """The configuration file is missing, not TOML, or holds a bad value (named)."""


class JsonInputError(TrackerError, ValueError):
    """A document is not JSON that can be read; the message says where and why."""


class JsonSyntaxError(JsonInputError):
    """The bytes are not JSON at all (bad UTF-8, a syntax error)."""


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


class ArtifactParseError(ArtifactError, ValueError):
    """An artifact's bytes do not parse; the message says where and why."""


class TokenizerParseError(ArtifactParseError):
    """The tokenizers library rejected the file."""


class FrontMatterError(ArtifactParseError):
    """README.md front matter is not YAML the card can be read from."""


class RenderError(TrackerError):
    """A template failed to render; the message says how."""


class RenderLimit(RenderError):
    """The template asked for more than a limit allows (refused, stopped or out of memory)."""


class NotTracked(TrackerError):
    """Nothing is recorded for the repo or revision the command names."""


__all__ = [
    "ArtifactError",
    "ArtifactParseError",
    "ConfigFileError",
    "FileGone",
    "FrontMatterError",
    "Gated",
    "HeaderInvalid",
    "HeaderTooLarge",
    "HubError",
    "HubUnavailable",
    "JsonInputError",
    "JsonSyntaxError",
    "NotTracked",
    "OversizedFile",
    "RateLimited",
    "RenderError",
    "RenderLimit",
    "RepoGone",
    "RepoIdError",
    "RevisionGone",
    "SettingsError",
    "TokenizerParseError",
    "TrackerError",
    "UnsafePath",
    "UsageError",
]
