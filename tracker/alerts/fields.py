"""The subscription field table: every field a subscription document has, defined once.

One row per field (name, JSON type, default, help, the CLI flag that sets it,
the choices a value may take), in document order. The CLI builds its
``subscribe`` flags and help from it, ``tracker.alerts.spec`` reads and
validates a document field by field against it, and the HTTP API documents
its request body with ``document_schema()``; the page shows the stored
record, which holds exactly these fields in this order.

Where it lives, and why here: the table is pure data importing nothing of
ours, so building the CLI parser (which must not load storage, the estimator
or SQLAlchemy, so that ``--help`` answers at once; tests/tracker/test_cli_imports.py) can
read it. Storage cannot hold it for the same reason (importing any
``storage`` module opens its SQLAlchemy package), and feeds, which never
imports the tracker, receives what it needs the way it receives the
document parser: the daemon passes ``document_schema()`` and
``spec.parse_subscription`` to ``feeds.subscriptions_api``. Validation that
needs the estimator (method, precision, bounds, card names) or storage
(severity names) is in ``tracker.alerts.spec``, one reader per row of this
table; a test holds the two, and the choices here, equal to the estimator's
and the watchable artifacts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

FieldType = Literal["string", "integer", "integer_or_max", "strings", "channels"]
Group = Literal["subscription", "workload", "alerts", "channels"]
Default = str | int | tuple[str, ...] | None
CONTEXT: Final = "max"
"""The ``seq_len`` that means "the model's own context length, read per revision"."""


@dataclass(frozen=True)
class Field:
    """One field of a subscription document.

    A field with no ``default`` is required, unless it is ``optional``: then
    its absence (JSON null) is a value of its own (``engine``: no engine
    modelled). ``flag`` is the CLI option that sets it (None: the positional NAME, or,
    for ``channels``, the channel options); ``choices`` are the values it (or
    each of its items) may take, empty when any value of its type may do.
    """

    name: str
    type: FieldType
    default: Default
    help: str
    group: Group
    flag: str | None
    metavar: str = ""
    choices: tuple[str, ...] = ()
    optional: bool = False

    @property
    def required(self) -> bool:
        """True when a document must give this field: it has no default and is not optional."""
        return self.default is None and not self.optional

    @property
    def repeated(self) -> bool:
        """A list field: its CLI flag may be given more than once."""
        return self.type == "strings"

    def default_text(self) -> str:
        """The default as the help text shows it: ``lora``, ``A10G``, ``fit``."""
        if isinstance(self.default, tuple):
            return ", ".join(self.default) or "none"
        return "none" if self.default is None else str(self.default)

    def help_text(self) -> str:
        """The help with its default appended (a required field has none to show)."""
        if self.required or self.type == "channels":
            return self.help
        return f"{self.help} (default {self.default_text()})"

    def json_schema(self) -> dict[str, object]:
        """The field's JSON Schema, for the HTTP API's OpenAPI document."""
        schema: dict[str, object]
        if self.type == "integer":
            schema = {"type": "integer", "minimum": 1}
        elif self.type == "integer_or_max":
            schema = {"oneOf": [{"type": "integer", "minimum": 1}, {"const": CONTEXT}]}
        elif self.type == "strings":
            item: dict[str, object] = {"type": "string"}
            if self.choices:
                item["enum"] = list(self.choices)
            schema = {"oneOf": [{"type": "array", "items": item}, item]}
        elif self.type == "channels":
            schema = {"type": "array", "items": {"type": "object"}}
        else:
            schema = {"type": "string"}
            if self.choices:
                schema["enum"] = list(self.choices)
        if self.optional:
            schema = {"oneOf": [schema, {"type": "null"}]}
        schema["description"] = self.help_text()
        if not self.required:
            default = self.default
            schema["default"] = list(default) if isinstance(default, tuple) else default
        return schema


ALERT_ON: Final = (
    "fit",
    "config",
    "generation_config",
    "tokenizer",
    "chat_template",
    "weights",
    "code",
    "card",
    "estimate",
    "repo",
)
"""What ``alert_on`` may name: "fit" and the keys of ``tracker.alerts.spec.WATCHABLE``."""

FIELDS: Final[tuple[Field, ...]] = (
    Field(
        "name",
        "string",
        None,
        "subscription name: letters, digits, '-', '_', '.' (it appears in URLs)",
        "subscription",
        None,
        "NAME",
    ),
    Field(
        "repos",
        "strings",
        None,
        "repo id ORG/NAME or a shell glob such as 'meta-llama/*' (repeatable, at least one)",
        "subscription",
        "--repo",
        "PATTERN",
    ),
    Field(
        "method",
        "string",
        "lora",
        "full fine-tune, LoRA, QLoRA (4-bit base) or inference serving",
        "workload",
        "--method",
        "full|lora|qlora|serve",
        ("full", "lora", "qlora", "serve"),
    ),
    Field("batch", "integer", 1, "batch size, per GPU", "workload", "--batch", "N"),
    Field(
        "seq_len",
        "integer_or_max",
        512,
        "tokens per sequence; 'max' means the model's own context length as each "
        "revision's config states it, so a revision that raises max_position_embeddings "
        "is re-estimated at the new length",
        "workload",
        "--seq-len",
        "N|max",
    ),
    Field(
        "precision",
        "string",
        "bf16",
        "weights/compute precision",
        "workload",
        "--precision",
        "bf16|fp16|fp32",
        ("bf16", "fp16", "fp32"),
    ),
    Field(
        "lora_rank",
        "integer",
        16,
        "LoRA/QLoRA adapter rank; full and serve ignore it",
        "workload",
        "--lora-rank",
        "R",
    ),
    Field(
        "cards",
        "strings",
        ("A10G",),
        "GPU card to check the fit on, e.g. T4, L4, 'A100 80GB'; repeatable",
        "workload",
        "--card",
        "NAME",
    ),
    Field("gpus", "integer", 1, "the job is split over N of each card", "workload", "--gpus", "N"),
    Field(
        "engine",
        "string",
        None,
        "serving engine whose start-up decides the fit of a serve workload (vLLM, SGLang, "
        "TGI or transformers; none: the estimator's peak memory against the card). "
        "Stored and shown now; fit alerts read it in a later release",
        "workload",
        "--engine",
        "vllm|sglang|tgi|transformers",
        ("transformers", "vllm", "sglang", "tgi"),
        optional=True,
    ),
    Field(
        "stack",
        "string",
        "",
        "libraries and versions that run the job, as pins: 'torch==2.4 transformers==4.44 "
        "peft==0.12' or 'vllm==0.6.4' (no file: the daemon evaluates it). Their versions set "
        "what estimator/README.md lists under Stacks, a training library picks its recipe "
        "beneath the fields given here, and an engine's version picks its start-up; empty: "
        "the estimator's defaults",
        "workload",
        "--stack",
        "PINS",
    ),
    Field(
        "alert_on",
        "strings",
        ("fit",),
        f"comma-separated, repeatable: {', '.join(ALERT_ON)}. 'fit' alerts when the "
        "workload stops (or starts) fitting a card; the others on changes to those files",
        "alerts",
        "--alert-on",
        "LIST",
        ALERT_ON,
    ),
    Field(
        "min_severity",
        "string",
        "info",
        "ignore file changes below this severity; info keeps every change",
        "alerts",
        "--min-severity",
        "info|low|moderate|high|critical",
        ("info", "low", "moderate", "high", "critical"),
    ),
    Field(
        "channels",
        "channels",
        (),
        "where alerts are pushed: a signed webhook {type, url, secret} or apprise URLs "
        "{type, url}; optional, every subscription also has an Atom feed",
        "channels",
        None,
    ),
)
"""The fields of a subscription document, in document order."""

BY_NAME: Final[Mapping[str, Field]] = {field.name: field for field in FIELDS}
NAMES: Final = tuple(BY_NAME)
STORED_SPEC: Final = (*(f.name for f in FIELDS if f.group == "workload"), "alert_on")
"""The fields storage keeps in a subscription's ``spec`` column, in this order."""


def document_schema() -> dict[str, object]:
    """The JSON Schema of a subscription document (the HTTP API's request body)."""
    return {
        "type": "object",
        "required": [field.name for field in FIELDS if field.required],
        "properties": {field.name: field.json_schema() for field in FIELDS},
        "additionalProperties": False,
    }


__all__ = [
    "ALERT_ON",
    "BY_NAME",
    "CONTEXT",
    "FIELDS",
    "NAMES",
    "STORED_SPEC",
    "Field",
    "FieldType",
    "Group",
    "document_schema",
]
