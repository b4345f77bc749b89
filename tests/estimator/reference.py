"""What transformers itself instantiates for a config, built on the meta device.

The independent source the exact-parameter tests compare against: the class
``architectures[0]`` names (or, when that class belongs to another model type
or does not exist, the Auto class transformers would pick for the same head).
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Mapping

import torch
import transformers
from transformers import (
    CONFIG_MAPPING,
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoModelForMaskedLM,
    AutoModelForPreTraining,
    AutoModelForSeq2SeqLM,
    AutoModelForSequenceClassification,
)

from estimator.architecture import Architecture

AUTO_BY_HEAD = {
    "base": AutoModel,
    "causal-lm": AutoModelForCausalLM,
    "masked-lm": AutoModelForMaskedLM,
    "sequence-classification": AutoModelForSequenceClassification,
    "pretraining": AutoModelForPreTraining,
    "conditional-generation": AutoModelForSeq2SeqLM,
}

transformers.logging.set_verbosity_error()
logging.getLogger("transformers").setLevel(logging.ERROR)


# Falcon's pre-transformers names; transformers 4.x mapped these onto FalconConfig itself.
LEGACY_TYPES = {
    "RefinedWeb": ("falcon", {"n_head": "num_attention_heads", "n_layer": "num_hidden_layers"}),
    "RefinedWebModel": (
        "falcon",
        {"n_head": "num_attention_heads", "n_layer": "num_hidden_layers"},
    ),
    # Mistral 7B's pre-release name (its first revision on the hub), Mistral's keys.
    "rafale": ("mistral", {}),
}


class Refused(Exception):
    """transformers cannot build this config; the message says why (used as a skip reason)."""


def reference_shapes(raw: Mapping[str, object], arch: Architecture) -> dict[str, tuple[int, ...]]:
    model_type = arch.model_type
    if model_type in LEGACY_TYPES:
        model_type, renames = LEGACY_TYPES[model_type]
        raw = {renames.get(k, k): v for k, v in raw.items() if k != "model_type"}
    if model_type not in CONFIG_MAPPING:
        raise Refused(f"transformers has no config class for model_type {model_type!r}")
    config_cls = CONFIG_MAPPING[model_type]
    try:
        config = config_cls.from_dict(dict(raw))
    except Exception as exc:
        raise Refused(f"transformers refuses the config: {type(exc).__name__}: {exc}") from exc
    cls = getattr(transformers, arch.architecture, None)
    try:
        with torch.device("meta"), contextlib.redirect_stdout(io.StringIO()):
            if cls is not None and getattr(cls, "config_class", None) is config_cls:
                model = cls(config)
            else:
                model = _auto_model(arch, config)
    except Exception as exc:
        raise Refused(f"transformers refuses to build it: {type(exc).__name__}: {exc}") from exc
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def _auto_model(arch: Architecture, config: object) -> object:
    """The Auto class for the head; a vision-language wrapper published under a causal-LM
    class name (LLaVA's ``LlavaLlamaForCausalLM``) is built as transformers' image-text model."""
    try:
        return AUTO_BY_HEAD[arch.head].from_config(config)
    except ValueError:
        return AutoModelForImageTextToText.from_config(config)


def estimated_shapes(arch: Architecture) -> dict[str, tuple[int, ...]]:
    return {t.name: t.shape for t in arch.tensors}


def difference(expected: dict[str, tuple[int, ...]], got: dict[str, tuple[int, ...]]) -> str:
    """A short, readable account of what differs (for assertion messages)."""
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    wrong = sorted(n for n in set(expected) & set(got) if expected[n] != got[n])
    lines = [f"missing {n} {expected[n]}" for n in missing[:8]]
    lines += [f"extra {n} {got[n]}" for n in extra[:8]]
    lines += [f"shape {n}: transformers {expected[n]} vs estimate {got[n]}" for n in wrong[:8]]
    return "; ".join(lines)
