"""What a subscription asks for, parsed once from the CLI, the TOML file or the API.

One document shape serves all three (a TOML ``[[subscriptions]]`` table, the
API's JSON body, and what the CLI's flags build)::

    name = "lora-on-t4"
    repos = ["meta-llama/*", "mistralai/Mistral-7B-Instruct-v0.3"]
    method = "lora"          # full | lora | qlora | serve
    batch = 8
    seq_len = 512            # or "max": the model's own context length
    precision = "bf16"
    lora_rank = 16
    cards = ["T4", "A10G"]   # at least one; gpus = N splits over N of each
    gpus = 1
    alert_on = ["fit", "chat_template", "tokenizer"]
    min_severity = "moderate"
    channels = [{type = "webhook", url = "https://...", secret = "..."},
                {type = "apprise", url = "discord://..."}]

The workload and card names are checked by the estimator itself
(``estimator.Workload`` and ``estimator.card``), so a subscription the
estimator would refuse is refused here, naming the field, before anything is
stored. Every subscription also has its own Atom feed, so ``channels`` may
be empty.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import estimator
from estimator.errors import WorkloadError
from storage.records import JsonValue, Severity, Subscription
from tracker.errors import TrackerError

WATCHABLE: Final[Mapping[str, tuple[str, ...]]] = {
    "config": ("config",),
    "generation_config": ("generation_config",),
    "tokenizer": ("tokenizer", "tokenizer_config", "special_tokens_map"),
    "chat_template": ("chat_template",),
    "weights": ("weights", "weight_index"),
    "code": ("code",),
    "card": ("card",),
    "estimate": ("estimate",),
    "repo": ("repo",),
}
"""What ``alert_on`` may name beside "fit", and the change artifacts each covers."""

MASK: Final = "********"
FIT: Final = "fit"
CONTEXT: Final = "max"
ChannelKind = Literal["webhook", "apprise"]
CHANNEL_KINDS: Final = ("webhook", "apprise")
MIN_SECRET_LENGTH: Final = 16
MAX_NAME_LENGTH: Final = 200
MAX_PATTERNS: Final = 100
MAX_CARDS: Final = 16
MAX_CHANNELS: Final = 16
_KEYS: Final = frozenset(
    {
        "name",
        "repos",
        "method",
        "batch",
        "seq_len",
        "precision",
        "lora_rank",
        "cards",
        "gpus",
        "alert_on",
        "min_severity",
        "channels",
    }
)


class SubscriptionError(TrackerError, ValueError):
    """A subscription document is malformed; the message names the field."""


@dataclass(frozen=True)
class Channel:
    """Where alerts are pushed: a signed webhook, or an apprise notification URL."""

    kind: ChannelKind
    url: str
    secret: str | None = None

    def to_json(self, *, redact: bool = False) -> dict[str, JsonValue]:
        """The stored form; ``redact`` masks the secret and an apprise URL's credentials.

        Apprise URLs carry their tokens in the user, host or path part
        (``discord://ID/TOKEN``), so only the scheme is left to show.
        """
        url = self.url
        if redact and self.kind == "apprise":
            url = f"{urlsplit(url).scheme or 'apprise'}://{MASK}"
        out: dict[str, JsonValue] = {"type": self.kind, "url": url}
        if self.secret is not None:
            out["secret"] = MASK if redact else self.secret
        return out


@dataclass(frozen=True)
class AlertWorkload:
    """The job the subscriber runs; ``seq_len`` None means the model's own context length."""

    method: estimator.workload.Method = "lora"
    batch: int = 1
    seq_len: int | None = 512
    precision: estimator.workload.Precision = "bf16"
    lora_rank: int = 16

    def for_card(self, card: str, gpus: int, context: int | None) -> estimator.Workload:
        """The estimator's workload on ``card``; ``context`` fills a "max" sequence length."""
        seq_len = self.seq_len if self.seq_len is not None else context
        if seq_len is None:
            raise SubscriptionError("seq_len 'max': the config states no context length")
        return estimator.Workload(
            method=self.method,
            batch=self.batch,
            seq_len=seq_len,
            precision=self.precision,
            lora_rank=self.lora_rank,
            card=card,
            gpus=gpus,
        )

    def describe(self, seq_len: int) -> str:
        """``LoRA r=16, batch 8 at 512 tokens``: how an alert names the job."""
        names = {"full": "Full fine-tune", "lora": "LoRA", "qlora": "QLoRA", "serve": "Serving"}
        head = names[self.method]
        if self.method in ("lora", "qlora"):
            head += f" r={self.lora_rank}"
        return f"{head}, batch {self.batch} at {seq_len:,} tokens"


@dataclass(frozen=True)
class SubscriptionSpec:
    """A validated subscription, ready to store (``spec_json``, ``Channel.to_json``) or evaluate."""

    name: str
    repos: tuple[str, ...]
    workload: AlertWorkload
    cards: tuple[str, ...]
    gpus: int = 1
    fit: bool = True
    artifacts: tuple[str, ...] = ()
    min_severity: Severity = Severity.INFO
    channels: tuple[Channel, ...] = ()

    def matches(self, repo_id: str) -> bool:
        """True if ``repo_id`` is named by one of the patterns (shell-style, case-sensitive)."""
        return any(fnmatchcase(repo_id, pattern) for pattern in self.repos)

    def watches(self, artifact: str) -> bool:
        """True if a change to ``artifact`` (a Change.artifact) is something to alert on."""
        return any(artifact in WATCHABLE[name] for name in self.artifacts)

    def spec_json(self) -> dict[str, JsonValue]:
        """The stored ``spec`` column: workload, cards and what to alert on."""
        return {
            "method": self.workload.method,
            "batch": self.workload.batch,
            "seq_len": CONTEXT if self.workload.seq_len is None else self.workload.seq_len,
            "precision": self.workload.precision,
            "lora_rank": self.workload.lora_rank,
            "cards": list(self.cards),
            "gpus": self.gpus,
            "alert_on": ([FIT] if self.fit else []) + list(self.artifacts),
        }

    def to_document(self, *, redact: bool = False) -> dict[str, JsonValue]:
        """The document shape this module parses; secrets masked when ``redact``."""
        return {
            "name": self.name,
            "repos": list(self.repos),
            **self.spec_json(),
            "min_severity": self.min_severity.label,
            "channels": [c.to_json(redact=redact) for c in self.channels],
        }

    @classmethod
    def from_record(cls, record: Subscription) -> SubscriptionSpec:
        """Rebuild the spec of a stored subscription (it was validated when stored)."""
        return parse_subscription(
            {
                "name": record.name,
                "repos": list(record.repo_patterns),
                **record.spec,
                "min_severity": record.min_severity.label,
                "channels": [dict(c) for c in record.channels],
            },
            source=f"subscription {record.name!r}",
        )


def parse_subscription(
    document: Mapping[str, Any], source: str = "subscription"
) -> SubscriptionSpec:
    """Validate a subscription document; SubscriptionError names the bad field."""
    if not isinstance(document, Mapping):
        raise SubscriptionError(f"{source}: expected a table/object, got {type(document).__name__}")
    unknown = sorted(set(document) - _KEYS)
    if unknown:
        raise SubscriptionError(
            f"{source}: unknown field {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})"
        )
    name = _name(document.get("name"), source)
    where = f"{source} {name!r}" if source == "subscription" else source
    workload = AlertWorkload(
        method=document.get("method", "lora"),
        batch=document.get("batch", 1),
        seq_len=_seq_len(document.get("seq_len", 512), where),
        precision=document.get("precision", "bf16"),
        lora_rank=document.get("lora_rank", 16),
    )
    cards = _cards(document.get("cards", ["A10G"]), where)
    gpus = document.get("gpus", 1)
    try:  # the estimator's own checks, once per card, with a stand-in context length
        for card in cards:
            workload.for_card(card, gpus, 512)
    except WorkloadError as exc:
        raise SubscriptionError(f"{where}: {exc}".replace("workload: ", "")) from None
    fit, artifacts = _alert_on(document.get("alert_on", [FIT]), where)
    return SubscriptionSpec(
        name=name,
        repos=_patterns(document.get("repos"), where),
        workload=workload,
        cards=cards,
        gpus=gpus,
        fit=fit,
        artifacts=artifacts,
        min_severity=_severity(document.get("min_severity", "info"), where),
        channels=tuple(
            _channel(c, f"{where}: channels[{i}]")
            for i, c in enumerate(_list(document.get("channels", []), "channels", where))
        ),
    )


def _name(value: Any, source: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SubscriptionError(f"{source}: name must be a non-empty string")
    if len(value) > MAX_NAME_LENGTH or not all(ch.isalnum() or ch in "-_." for ch in value):
        raise SubscriptionError(
            f"{source}: name {value[:40]!r} must be at most {MAX_NAME_LENGTH} letters, "
            "digits, '-', '_' or '.' (it appears in URLs)"
        )
    return value


def _list(value: Any, field: str, where: str) -> Sequence[Any]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise SubscriptionError(f"{where}: {field} must be a list")
    return value


def _patterns(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    patterns = _list(value, "repos", where)
    if not patterns or len(patterns) > MAX_PATTERNS:
        raise SubscriptionError(f"{where}: repos must list 1 to {MAX_PATTERNS} ids or globs")
    for pattern in patterns:
        if not isinstance(pattern, str) or pattern.count("/") != 1 or len(pattern) > 200:
            raise SubscriptionError(
                f"{where}: repos entry {pattern!r} must be ORG/NAME or a glob such as 'org/*'"
            )
    return tuple(patterns)


def _seq_len(value: Any, where: str) -> int | None:
    if value == CONTEXT:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise SubscriptionError(f"{where}: seq_len must be a positive integer or 'max'")
    return value


def _cards(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    names = _list(value, "cards", where)
    if not names or len(names) > MAX_CARDS:
        raise SubscriptionError(f"{where}: cards must name 1 to {MAX_CARDS} cards")
    try:
        canonical = [estimator.card(str(name)).name for name in names]
    except WorkloadError as exc:
        raise SubscriptionError(f"{where}: cards: {exc}".replace("workload: ", "")) from None
    return tuple(dict.fromkeys(canonical))


def _alert_on(value: Any, where: str) -> tuple[bool, tuple[str, ...]]:
    if isinstance(value, str):
        value = [value]
    names = _list(value, "alert_on", where)
    allowed = (FIT, *WATCHABLE)
    for name in names:
        if name not in allowed:
            raise SubscriptionError(
                f"{where}: alert_on entry {name!r} is not one of {', '.join(allowed)}"
            )
    if not names:
        raise SubscriptionError(f"{where}: alert_on must name at least one of {', '.join(allowed)}")
    return FIT in names, tuple(dict.fromkeys(n for n in names if n != FIT))


def _severity(value: Any, where: str) -> Severity:
    try:
        return Severity.parse(str(value))
    except ValueError as exc:
        raise SubscriptionError(f"{where}: min_severity: {exc}") from None


def _channel(value: Any, where: str) -> Channel:
    if not isinstance(value, Mapping):
        raise SubscriptionError(f"{where}: expected a table with type and url")
    kind = value.get("type")
    if kind not in CHANNEL_KINDS:
        raise SubscriptionError(f"{where}: type must be one of {', '.join(CHANNEL_KINDS)}")
    url = value.get("url")
    if not isinstance(url, str) or not url or len(url) > 2000 or any(ord(c) < 32 for c in url):
        raise SubscriptionError(f"{where}: url must be a non-empty URL")
    extra = sorted(set(value) - {"type", "url", "secret", "secret_env"})
    if extra:
        raise SubscriptionError(f"{where}: unknown field {extra[0]!r}")
    if kind == "apprise":
        return Channel("apprise", url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SubscriptionError(f"{where}: a webhook url must be http:// or https:// with a host")
    return Channel("webhook", url, _secret(value, where))


def _secret(value: Mapping[str, Any], where: str) -> str:
    secret = value.get("secret")
    if secret is None and isinstance(value.get("secret_env"), str):
        secret = os.environ.get(value["secret_env"])
        if secret is None:
            raise SubscriptionError(f"{where}: environment variable {value['secret_env']} is unset")
    if not isinstance(secret, str) or len(secret) < MIN_SECRET_LENGTH or not secret.isascii():
        raise SubscriptionError(
            f"{where}: a webhook needs a secret (or secret_env) of at least "
            f"{MIN_SECRET_LENGTH} ASCII characters, to sign every delivery"
        )
    return secret


__all__ = [
    "CHANNEL_KINDS",
    "WATCHABLE",
    "AlertWorkload",
    "Channel",
    "SubscriptionError",
    "SubscriptionSpec",
    "parse_subscription",
]
