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
    stack = "torch==2.4 transformers==4.44 peft==0.12"   # optional: pins, no file
    alert_on = ["fit", "chat_template", "tokenizer"]
    min_severity = "moderate"
    channels = [{type = "webhook", url = "https://...", secret = "whsec_..."},
                {type = "apprise", url = "discord://..."}]

The workload and card names are checked by the estimator itself
(``estimator.Workload`` and ``estimator.card``), so a subscription the
estimator would refuse is refused here, naming the field, before anything is
stored. Every subscription also has its own Atom feed, so ``channels`` may
be empty.

The fields, their defaults and help are the table in ``tracker.alerts.fields``
(read by the CLI, this parser and the HTTP API's schema); this module adds the
checks that need the estimator and storage's severities. The job is the
estimator's own ``Workload`` (on the first card; ``workload_on`` moves it to
each card), so there is one workload type: what a subscription adds beside it
is the list of cards and ``follow_context`` (``seq_len = "max"``).

``stack`` is the job's libraries as pins only (``estimator.stacks.parse_stack``):
a subscription is evaluated by the daemon, which has neither the subscriber's
requirements file nor environment. It is applied as ``plan --stack`` applies it
(``estimator.stacks.apply_stack``): the recipe the stack implies, then its
versions' mechanisms, then the subscription's own fields, which win; a
mechanism held to some model types is applied per revision, once its config
names the type (``workload_on``).
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import estimator
from estimator.deltas import method_label
from estimator.engines.request import EngineName
from estimator.errors import WorkloadError
from storage import RepoId, SubscriptionColumns, subscription_document
from storage.records import JsonValue, Severity, Subscription
from storage.repo_patterns import names_repo
from storage.subscription_rows import MASK
from tracker.alerts.fields import ALERT_ON, BY_NAME, CONTEXT, NAMES, STORED_SPEC
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

FIT: Final = "fit"
ChannelKind = Literal["webhook", "apprise"]
CHANNEL_KINDS: Final = ("webhook", "apprise")
SECRET_PREFIX: Final = "whsec_"
SECRET_BYTES: Final = (24, 64)
"""A webhook key's length in bytes, as the Standard Webhooks spec asks (spec.md, "Signature scheme")."""
MAX_NAME_LENGTH: Final = 200
MAX_PATTERNS: Final = 100
MAX_CARDS: Final = 16
MAX_CHANNELS: Final = 16
MAX_STACK_TEXT: Final = 4096
"""The longest ``stack`` text a subscription may give (its pins are parsed from it)."""
STAND_IN_CONTEXT: Final = 512
"""The sequence length a "max" workload is checked at before any config states one."""


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


def describe_job(workload: estimator.Workload, seq_len: int) -> str:
    """``LoRA r=16, batch 8 at 512 tokens``: how an alert names the job."""
    head = method_label(workload.method, capital=True)
    if workload.method in ("lora", "qlora"):
        head += f" r={workload.lora_rank}"
    return f"{head}, batch {workload.batch} at {seq_len:,} tokens"


@dataclass(frozen=True)
class SubscriptionSpec:
    """A validated subscription, ready to store (``spec_json``, ``Channel.to_json``) or evaluate."""

    name: str
    repos: tuple[str, ...]
    workload: estimator.Workload
    cards: tuple[str, ...]
    follow_context: bool = False
    engine: EngineName | None = None
    fit: bool = True
    artifacts: tuple[str, ...] = ()
    min_severity: Severity = Severity.INFO
    channels: tuple[Channel, ...] = ()
    stack: str = ""

    @property
    def gpus(self) -> int:
        """The job is split over this many of each card."""
        return self.workload.gpus

    def workload_on(
        self, card: str, context: int | None = None, model_type: str | None = None
    ) -> estimator.Workload:
        """The job on ``card``; ``context`` is the sequence length a "max" job runs at;
        ``model_type`` (the revision's config) adds the stack's mechanisms held to it."""
        workload = replace(self.workload, card=card)
        if self.follow_context:
            if context is None:
                raise SubscriptionError("seq_len 'max': the config states no context length")
            workload = replace(workload, seq_len=context)
        if self.stack and model_type:
            fields = _typed_stack_fields(self.stack, model_type)
            workload = replace(workload, **fields)  # type: ignore[arg-type]  # table-checked values
        return workload

    def engine_on(self, card: str, context: int | None = None) -> estimator.EngineRequest | None:
        """The serving engine's start-up on ``card`` at ``context`` tokens, if one is named.

        The job's GPUs are the engine's tensor-parallel degree and its seq_len
        the engine's max_model_len; a "max" job runs at ``context`` (the model's
        own), or at the engine's default when that is None. Fit alerts are to
        judge an engine subscription by this request.
        """
        if self.engine is None:
            return None
        length = context if self.follow_context else self.workload.seq_len
        return estimator.EngineRequest(
            engine=self.engine, card=card, max_model_len=length, tensor_parallel=self.gpus
        )

    def matches(self, repo_id: RepoId) -> bool:
        """True if ``repo_id`` is named by one of the patterns (shell-style, case-sensitive)."""
        return names_repo(self.repos, repo_id)

    def watches(self, artifact: str) -> bool:
        """True if a change to ``artifact`` (a Change.artifact) is something to alert on."""
        return any(artifact in WATCHABLE[name] for name in self.artifacts)

    def spec_json(self) -> dict[str, JsonValue]:
        """The stored ``spec`` column: workload, cards and what to alert on."""
        workload = self.workload
        values: dict[str, JsonValue] = {
            "method": workload.method,
            "batch": workload.batch,
            "seq_len": CONTEXT if self.follow_context else workload.seq_len,
            "precision": workload.precision,
            "lora_rank": workload.lora_rank,
            "cards": list(self.cards),
            "gpus": workload.gpus,
            "engine": self.engine,
            "stack": self.stack,
            "alert_on": ([FIT] if self.fit else []) + list(self.artifacts),
        }
        return {name: values[name] for name in STORED_SPEC}

    def columns(self) -> SubscriptionColumns:
        """What storage keeps of this subscription beside its name (real secrets included)."""
        return SubscriptionColumns(
            repo_patterns=self.repos,
            spec=self.spec_json(),
            channels=tuple(channel.to_json() for channel in self.channels),
            min_severity=self.min_severity,
        )

    def to_document(self, *, redact: bool = False) -> dict[str, JsonValue]:
        """The document shape this module parses, fields in table order; secrets masked
        when ``redact``."""
        values: dict[str, JsonValue] = {
            "name": self.name,
            "repos": list(self.repos),
            **self.spec_json(),
            "min_severity": self.min_severity.label,
            "channels": [c.to_json(redact=redact) for c in self.channels],
        }
        return {name: values[name] for name in NAMES}

    @classmethod
    def from_record(cls, record: Subscription) -> SubscriptionSpec:
        """Rebuild the spec of a stored subscription (it was validated when stored)."""
        return parse_subscription(
            subscription_document(record),
            source=f"subscription {record.name!r}",
        )


def parse_subscription(
    document: Mapping[str, Any], source: str = "subscription"
) -> SubscriptionSpec:
    """Validate a subscription document; SubscriptionError names the bad field."""
    if not isinstance(document, Mapping):
        raise SubscriptionError(f"{source}: expected a table/object, got {type(document).__name__}")
    unknown = sorted(set(document) - set(NAMES))
    if unknown:
        raise SubscriptionError(
            f"{source}: unknown field {unknown[0]!r} (known: {', '.join(sorted(NAMES))})"
        )
    name = _name(document.get("name"), source)
    where = f"{source} {name!r}" if source == "subscription" else source
    seq_len = _seq_len(_get(document, "seq_len"), where)
    cards = _cards(_get(document, "cards"), where)
    stack = _stack(_get(document, "stack"), where)
    explicit: dict[str, Any] = {
        "method": _get(document, "method"),
        "batch": _get(document, "batch"),
        "seq_len": STAND_IN_CONTEXT if seq_len is None else seq_len,
        "precision": _get(document, "precision"),
        "lora_rank": _get(document, "lora_rank"),
        "card": cards[0],
        "gpus": _get(document, "gpus"),
    }
    try:  # the estimator's own checks, on the first card, a "max" at a stand-in length
        if stack:
            from estimator.stacks import apply_stack, parse_stack

            workload = apply_stack(parse_stack(stack), None, None, **explicit)
        else:
            workload = estimator.Workload(**explicit)
    except WorkloadError as exc:
        raise SubscriptionError(f"{where}: {exc}".replace("workload: ", "")) from None
    engine = _engine(_get(document, "engine"), workload, where)
    fit, artifacts = _alert_on(_get(document, "alert_on"), where)
    return SubscriptionSpec(
        name=name,
        repos=_patterns(document.get("repos"), where),
        workload=workload,
        cards=cards,
        follow_context=seq_len is None,
        engine=engine,
        fit=fit,
        artifacts=artifacts,
        min_severity=_severity(_get(document, "min_severity"), where),
        channels=tuple(
            _channel(c, f"{where}: channels[{i}]")
            for i, c in enumerate(_list(_get(document, "channels"), "channels", where))
        ),
        stack=stack,
    )


def _get(document: Mapping[str, Any], name: str) -> Any:
    """The document's value of ``name``, else the field table's default (lists as lists)."""
    if name in document:
        return document[name]
    default = BY_NAME[name].default
    return list(default) if isinstance(default, tuple) else default


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


def _stack(value: Any, where: str) -> str:
    """The pins in the form ``parse_stack`` writes back; empty for no stack."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or len(value) > MAX_STACK_TEXT:
        raise SubscriptionError(
            f"{where}: stack must be NAME==VERSION pins as text (torch==2.4 peft==0.12), "
            f"at most {MAX_STACK_TEXT} characters"
        )
    from estimator.stacks import StackError, parse_stack

    try:
        return parse_stack(value).text()
    except StackError as exc:
        raise SubscriptionError(f"{where}: {exc}") from None


def _typed_stack_fields(stack: str, model_type: str) -> dict[str, object]:
    """The stack's fields for ``model_type`` that the subscription's own fields do not set."""
    from estimator.stacks import known, parse_stack, stack_fields

    fields = stack_fields(known(parse_stack(stack)), model_type)
    return {k: v for k, v in fields.items() if k not in _SUBSCRIPTION_FIELDS}


_SUBSCRIPTION_FIELDS: Final = frozenset(
    {"method", "batch", "seq_len", "precision", "lora_rank", "card", "gpus"}
)


def _engine(value: Any, workload: estimator.Workload, where: str) -> EngineName | None:
    """The serving engine (the estimator's own check of its name), only for a serve job."""
    if value is None:
        return None
    try:
        request = estimator.EngineRequest(engine=value, card=workload.card)
    except WorkloadError as exc:
        raise SubscriptionError(f"{where}: {exc}".replace("engine: ", "", 1)) from None
    if workload.method != "serve":
        raise SubscriptionError(
            f"{where}: engine {value!r} runs a serve workload; method is {workload.method!r}"
        )
    return request.engine


def _alert_on(value: Any, where: str) -> tuple[bool, tuple[str, ...]]:
    if isinstance(value, str):
        value = [value]
    names = _list(value, "alert_on", where)
    allowed = ALERT_ON
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
    if not isinstance(secret, str) or not is_standard_secret(secret):
        raise SubscriptionError(
            f"{where}: a webhook needs a secret (or secret_env) to sign every delivery: a "
            f"Standard Webhooks secret, {SECRET_PREFIX} and the base64 of {SECRET_BYTES[0]} to "
            f"{SECRET_BYTES[1]} random bytes"
        )
    return secret


def is_standard_secret(secret: str) -> bool:
    """True if ``secret`` is ``whsec_`` and the base64 of a key of ``SECRET_BYTES`` bytes."""
    if not secret.startswith(SECRET_PREFIX) or not secret.isascii():
        return False
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except binascii.Error:
        return False
    return SECRET_BYTES[0] <= len(key) <= SECRET_BYTES[1]


def signing_secret(secret: str) -> str:
    """The Standard Webhooks secret a delivery is signed with.

    A subscription stored before alerts were Standard Webhooks holds a plain
    shared secret; its deliveries are signed with ``whsec_`` + the base64 of
    that secret's UTF-8 bytes (the key is the secret itself), so its receiver
    keeps working by verifying with that, rather than the subscription going
    silent. New subscriptions must give a standard secret.
    """
    if is_standard_secret(secret):
        return secret
    return SECRET_PREFIX + base64.b64encode(secret.encode()).decode("ascii")


__all__ = [
    "CHANNEL_KINDS",
    "CONTEXT",
    "FIT",
    "MASK",
    "SECRET_BYTES",
    "SECRET_PREFIX",
    "WATCHABLE",
    "Channel",
    "SubscriptionError",
    "SubscriptionSpec",
    "describe_job",
    "is_standard_secret",
    "parse_subscription",
    "signing_secret",
]
