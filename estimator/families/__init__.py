"""config.json -> Architecture, dispatched on ``model_type`` through one table.

``TABLE`` maps each supported model_type to its ``Family``; a config without
model_type is matched on its ``architectures[0]`` class prefix, and an unknown
type gets the generic decoder estimate marked ``supported=False``.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import cache
from typing import Final

from estimator.architecture import Architecture
from estimator.config import Config
from estimator.families import generic
from estimator.families.exact import ExactParameters, from_parameters
from estimator.families.family import Family, Request
from estimator.families.heads import architecture_of, head_of

_HOMES: Final[dict[str, tuple[str, str]]] = {
    "llama": ("llama", "FAMILY"),
    "mistral": ("mistral", "FAMILY"),
    "rafale": ("mistral", "FAMILY"),  # Mistral 7B's pre-release name, on its first revision
    "qwen2": ("qwen2", "FAMILY"),
    "qwen3": ("qwen3", "FAMILY"),
    "gemma": ("gemma", "FAMILY"),
    "gemma2": ("gemma", "FAMILY2"),
    "gemma3_text": ("gemma", "FAMILY3"),
    "phi3": ("phi3", "FAMILY"),
    "smollm3": ("smollm3", "FAMILY"),
    "mixtral": ("moe", "MIXTRAL_FAMILY"),
    "qwen2_moe": ("moe", "QWEN2_MOE_FAMILY"),
    "qwen3_moe": ("moe", "QWEN3_MOE_FAMILY"),
    "granitemoe": ("moe", "GRANITE_MOE_FAMILY"),
    "gpt_oss": ("gpt_oss", "FAMILY"),
    "deepseek_v3": ("deepseek_v3", "FAMILY"),
    "gpt2": ("gpt2", "FAMILY"),
    "gpt_bigcode": ("gpt_bigcode", "FAMILY"),
    "gpt_neox": ("gpt_neox", "FAMILY"),
    "opt": ("opt", "FAMILY"),
    "bloom": ("bloom", "FAMILY"),
    "falcon": ("falcon", "FAMILY"),
    "RefinedWeb": ("falcon", "FAMILY"),
    "RefinedWebModel": ("falcon", "FAMILY"),
    "phi": ("phi", "FAMILY"),
    "gptj": ("gptj", "FAMILY"),
    "bert": ("bert", "BERT"),
    "roberta": ("bert", "ROBERTA"),
    "xlm-roberta": ("bert", "XLM_ROBERTA"),
    "distilbert": ("distilbert", "FAMILY"),
    "deberta-v2": ("deberta_v2", "FAMILY"),
    "t5": ("t5", "T5"),
    "mt5": ("t5", "MT5"),
    "bart": ("bart", "BART"),
    "mbart": ("bart", "MBART"),
    "whisper": ("whisper", "FAMILY"),
    "vit": ("vision", "VIT"),
    "clip": ("vision", "CLIP"),
    "qwen": ("qwen", "FAMILY"),
    "stablelm": ("stablelm", "FAMILY"),
    "stablelm_epoch": ("stablelm", "EPOCH"),
    "codegen": ("codegen", "FAMILY"),
    "mpnet": ("mpnet", "FAMILY"),
    "marian": ("marian", "FAMILY"),
    "lfm2": ("lfm2", "FAMILY"),
    "llava": ("llava", "FAMILY"),
    "gemma3": ("gemma3_vl", "FAMILY"),
}
"""model_type -> (module under estimator.families, the Family's name there)."""


class FamilyTable(Mapping[str, Family]):
    """Every supported model_type's Family, each module imported when its type is first asked.

    A plan reads one family; importing all thirty-odd modules for it was a third
    of the estimator's import time.
    """

    def __getitem__(self, model_type: str) -> Family:
        return _family(*_HOMES[model_type])

    def __iter__(self) -> Iterator[str]:
        return iter(_HOMES)

    def __len__(self) -> int:
        return len(_HOMES)


TABLE: Final = FamilyTable()


@cache
def _family(module: str, name: str) -> Family:
    """The Family ``name`` of ``module``, imported once: every plan asks for its model's."""
    family: Family = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return family


@cache
def _by_prefix() -> tuple[tuple[str, str], ...]:
    """(class prefix, model_type), longest prefix first, so "DistilBert" wins over "Bert".

    Only a config without model_type asks, and it loads every family.
    """
    return tuple(
        sorted(((f.class_prefix, mt) for mt, f in TABLE.items()), key=lambda p: -len(p[0]))
    )


# Configs written before transformers had model_type or architectures (pytorch-pretrained-bert,
# 2019: early revisions of bert-base-*, gpt2, distilbert) are told apart by their key sets,
# most specific first; transformers itself then guessed from the repo name.
_LEGACY_KEYS: tuple[tuple[frozenset[str], str], ...] = (
    (frozenset({"dim", "n_layers", "n_heads", "hidden_dim"}), "distilbert"),
    (frozenset({"n_embd", "n_layer", "n_head", "n_positions"}), "gpt2"),
    (frozenset({"hidden_size", "num_hidden_layers", "type_vocab_size"}), "bert"),
)
ROBERTA_POSITIONS = 514
"""RoBERTa's position table: 512 positions plus its padding offset of 2."""


def _legacy_type(cfg: Config) -> str | None:
    keys = set(cfg.raw)
    for needed, model_type in _LEGACY_KEYS:
        if needed <= keys:
            if model_type == "bert" and cfg.raw.get("max_position_embeddings") == ROBERTA_POSITIONS:
                return "roberta"
            return model_type
    return None


def _model_type(cfg: Config, architecture: str | None) -> str | None:
    model_type = cfg.optional_text("model_type")
    if model_type is not None:
        return model_type
    if architecture is None:
        return _legacy_type(cfg)
    for prefix, mt in _by_prefix():
        if architecture.startswith(prefix) and architecture[len(prefix) :][:1].isupper():
            return mt
    return None


def describe(
    config: Mapping[str, object] | object, exact: ExactParameters | None = None
) -> Architecture:
    """The model a config.json describes; raises ConfigError naming the offending field.

    ``exact`` (tracker.revision.exact_parameters, with the ``[exact]`` extra) is asked only for
    types no family module knows: the parameters transformers builds for the config on
    the meta device replace the generic estimate when it can build them.
    """
    cfg = Config(config)
    architecture = architecture_of(cfg)
    model_type = _model_type(cfg, architecture)
    family = TABLE.get(model_type) if model_type is not None else None
    if family is None:
        params = exact(cfg.raw) if exact is not None else None
        if params:
            return from_parameters(cfg, model_type, architecture, params)
        return generic.build(cfg, model_type, architecture)
    if architecture is None:
        architecture = family.default_architecture
    head = head_of(architecture)
    supported = head is not None and head in family.heads
    if head is None or head not in family.heads:
        head = head_of(family.default_architecture) or "base"
    arch = family.build(cfg, Request(model_type or family.name, architecture, head, supported))
    return replace(arch, defaulted=tuple(cfg.defaulted.items())) if cfg.defaulted else arch


__all__ = ["TABLE", "ExactParameters", "describe"]
