"""Findings about a config (and its weight manifest), each from a rule in ``data/rules.json``.

Rules are data (id, severity, message, fix); each check below reads the
config, the Architecture or the manifest and returns the values that fill
the rule's message, or None. ``CHECKS`` is the explicit table tying the two.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

from estimator.architecture import Architecture
from estimator.cards import Card
from estimator.config import Config
from estimator.data_files import data_text
from estimator.families import generic
from estimator.manifest import WeightManifest
from estimator.stored_quantization import StoredQuantization

Values = dict[str, object]


@dataclass(frozen=True)
class Context:
    """What checks read: raw config, Architecture, manifest (None if unread), workload's card."""

    config: Mapping[str, object]
    arch: Architecture
    manifest: WeightManifest | None
    card: Card
    precision: str
    seq_len: int
    # The checkpoint's declared quantization (plan() reads it once for the estimate too).
    stored: StoredQuantization | None = None


@dataclass(frozen=True)
class Finding:
    """One rule's result, worded from ``data/rules.json``; ``severity`` as the rule states it."""

    id: str
    severity: str
    message: str
    fix: str


PLAUSIBLE_INT = 1 << 63
"""Rules read the raw config, including keys the family ignored: a value past this is no
fact about a model (describe() refuses it where it is used) and is not checked or printed."""


def _int(config: Mapping[str, object], *keys: str) -> int | None:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) < PLAUSIBLE_INT:
            return value
    return None


def _deep_default_init(c: Context) -> Values | None:
    init = c.config.get("initializer_range")
    if c.arch.num_layers >= 48 and init == 0.02:
        return {"layers": c.arch.num_layers, "init": init}
    return None


def _heads_divide(c: Context) -> Values | None:
    heads = _int(c.config, "num_attention_heads", "n_head", "num_heads")
    hidden = _int(c.config, "hidden_size", "n_embd", "d_model")
    if heads and hidden and hidden % heads and _int(c.config, "head_dim", "d_kv") is None:
        return {"heads": heads, "hidden": hidden}
    return None


def _kv_divide(c: Context) -> Values | None:
    heads = _int(c.config, "num_attention_heads", "n_head")
    kv = _int(c.config, "num_key_value_heads", "num_kv_heads")
    if heads and kv and heads % kv:
        return {"kv": kv, "heads": heads}
    return None


def _head_dim(c: Context) -> Values | None:
    head_dim = _int(c.config, "head_dim")
    heads = _int(c.config, "num_attention_heads")
    hidden = _int(c.config, "hidden_size")
    if head_dim and heads and hidden and head_dim * heads != hidden:
        return {"head_dim": head_dim, "heads": heads, "product": head_dim * heads, "hidden": hidden}
    return None


def _rope_scaling(c: Context) -> Values | None:
    scaling = c.config.get("rope_scaling")
    max_pos = _int(c.config, "max_position_embeddings")
    if not isinstance(scaling, Mapping) or max_pos is None:
        return None
    factor = scaling.get("factor")
    original = _int(scaling, "original_max_position_embeddings")
    if not isinstance(factor, (int, float)) or original is None or isinstance(factor, bool):
        return None
    if scaling.get("rope_type", scaling.get("type")) in ("llama3", "longrope", "dynamic"):
        return None  # these keep max_position_embeddings independent of the factor
    if abs(factor) >= PLAUSIBLE_INT or not math.isfinite(factor * original):
        return None  # families that use rope refuse such a factor; others ignore it
    product = round(factor * original)
    if product != max_pos:
        return {"factor": factor, "original": original, "product": product, "max_pos": max_pos}
    return None


def _vocab_64(c: Context) -> Values | None:
    return {"vocab": c.arch.vocab_size} if c.arch.vocab_size % 64 else None


def _dtype(c: Context) -> Values | None:
    declared = c.arch.declared_dtype
    if c.manifest is None or declared is None or not c.manifest.dtypes:
        return None
    stored = c.manifest.main_dtype
    if stored is not None and _dtype_name(stored) != _dtype_name(declared):
        return {"declared": declared, "stored": stored}
    return None


def _dtype_name(name: str) -> str:
    aliases = {
        "bf16": "bfloat16",
        "f16": "float16",
        "fp16": "float16",
        "f32": "float32",
        "fp32": "float32",
        "half": "float16",
        "float": "float32",
    }
    key = name.lower().removeprefix("torch.")
    return aliases.get(key, key)


def _tied_head(c: Context) -> Values | None:
    if c.manifest is None or not c.manifest.names:
        return None
    has_head = any(n == "lm_head.weight" or n.endswith(".lm_head.weight") for n in c.manifest.names)
    if c.arch.tie_word_embeddings and has_head:
        return {"tied": "true", "stored": "also stores"}
    return None


def _sliding_window(c: Context) -> Values | None:
    max_pos = c.arch.max_position_embeddings
    windows = [
        b.attention.sliding_window for b, _ in c.arch.block_groups if b.attention.sliding_window
    ]
    if max_pos and windows and max(windows) > max_pos:
        return {"window": max(windows), "max_pos": max_pos}
    return None


# Encoders whose position table starts after the padding index (RoBERTa's
# create_position_ids_from_input_ids): pad_token_id + 1 rows are never a position.
_PADDING_OFFSET_FAMILIES = frozenset({"roberta", "xlm-roberta"})


def usable_positions(arch: Architecture, config: Mapping[str, object]) -> int | None:
    """Longest sequence a learned position table can index (None: no such limit)."""
    rows = arch.max_position_embeddings
    if arch.position != "learned" or rows is None:
        return None
    if arch.family not in _PADDING_OFFSET_FAMILIES:
        return rows
    pad = _int(config, "pad_token_id")
    return rows - (1 if pad is None else pad) - 1


def _beyond_position_table(c: Context) -> Values | None:
    """A learned table has no row past its end: the lookup fails, it does not degrade."""
    usable = usable_positions(c.arch, c.config)
    if usable is None or c.seq_len <= usable:
        return None
    return {"seq_len": c.seq_len, "usable": usable}


def _beyond_trained_context(c: Context) -> Values | None:
    max_pos = c.arch.max_position_embeddings
    if c.arch.position not in ("rope", "alibi") or max_pos is None or c.seq_len <= max_pos:
        return None
    return {"seq_len": c.seq_len, "max_pos": max_pos}


def _fields_missing(c: Context) -> Values | None:
    """The generic estimate's fields the config lacks (families default every field)."""
    if c.arch.family != "generic":
        return None
    missing = generic.missing_fields(Config(c.config))
    if not missing:
        return None
    if any(f.endswith("hidden_size") for f in missing):  # nothing else is estimated either
        missing = tuple(f for f in missing if f.endswith("hidden_size")) + tuple(
            f for f in missing if not f.endswith("hidden_size")
        )
        return {"fields": ", ".join(missing), "effects": generic.NOT_ESTIMATED["hidden_size"]}
    effects = "; ".join(f"{f}: {generic.NOT_ESTIMATED[f.split('.')[-1]]}" for f in missing)
    return {"fields": ", ".join(missing), "effects": effects}


def _near_keys(c: Context) -> dict[str, str]:
    """Each defaulted size that a key of the config, absent from the keys read, resembles."""
    known = {k for k, _ in c.arch.defaulted}
    unknown = [k for k in c.config if isinstance(k, str) and k not in known]
    near = {}
    for key, _ in c.arch.defaulted:
        match = difflib.get_close_matches(key, unknown, n=1, cutoff=0.85)
        if match and match[0] != key:
            near[key] = match[0]
    return near


def _key_misspelt(c: Context) -> Values | None:
    """A size the family defaulted while a key of nearly its name sits in the config."""
    near = _near_keys(c)
    if not near:
        return None
    defaults = dict(c.arch.defaulted)
    return {
        "keys": ", ".join(near),
        "near": ", ".join(near.values()),
        "defaults": ", ".join(f"{k}={defaults[k]}" for k in near),
        "renames": ", ".join(f"{v} to {k}" for k, v in near.items()),
        "model_type": c.arch.model_type,
    }


def _key_defaulted(c: Context) -> Values | None:
    """Sizes the config leaves to the family's defaults (a misspelt one is its own finding)."""
    near = _near_keys(c)
    rest = [(k, v) for k, v in c.arch.defaulted if k not in near]
    if not rest:
        return None
    return {
        "keys": ", ".join(k for k, _ in rest),
        "defaults": ", ".join(f"{k}={v}" for k, v in rest),
        "model_type": c.arch.model_type,
    }


def _unsupported(c: Context) -> Values | None:
    return None if c.arch.supported else {"model_type": c.arch.model_type}


def _no_bf16(c: Context) -> Values | None:
    return {"card": c.card.name} if c.precision == "bf16" and not c.card.bf16 else None


def _stored_quantization(c: Context) -> Values | None:
    stored = c.stored
    if stored is None or stored.serve_weights is not None:
        return None
    shown = "" if stored.bits is None else f", {stored.bits} bits"
    return {"method": stored.method[:64], "bits": shown}


CHECKS: dict[str, Callable[[Context], Values | None]] = {
    "deep-attention-default-init": _deep_default_init,
    "heads-not-dividing-hidden": _heads_divide,
    "kv-heads-not-dividing-heads": _kv_divide,
    "head-dim-inconsistent": _head_dim,
    "rope-scaling-inconsistent": _rope_scaling,
    "vocab-not-multiple-of-64": _vocab_64,
    "dtype-mismatch": _dtype,
    "tied-head-stored-separately": _tied_head,
    "sliding-window-beyond-context": _sliding_window,
    "sequence-beyond-position-table": _beyond_position_table,
    "sequence-beyond-trained-context": _beyond_trained_context,
    "unsupported-model-type": _unsupported,
    "config-field-missing": _fields_missing,
    "config-key-misspelt": _key_misspelt,
    "config-key-defaulted": _key_defaulted,
    "no-bf16-on-card": _no_bf16,
    "checkpoint-quantization-not-modelled": _stored_quantization,
}


@cache
def rules() -> dict[str, dict[str, str]]:
    """Rule id -> its ``data/rules.json`` entry (severity, message and fix templates), read once."""
    text = data_text("rules.json")
    return {r["id"]: r for r in json.loads(text)["rules"]}


def verify(context: Context) -> tuple[Finding, ...]:
    """Run every check of ``CHECKS``; a check returning None adds no finding."""
    findings = []
    for rule_id, check in CHECKS.items():
        values = check(context)
        if values is None:
            continue
        rule = rules()[rule_id]
        findings.append(
            Finding(
                rule_id,
                rule["severity"],
                rule["message"].format(**values),
                rule["fix"].format(**values),
            )
        )
    return tuple(findings)
