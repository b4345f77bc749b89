"""Which head ``architectures[0]`` names, read from its class-name suffix."""

from __future__ import annotations

from estimator.architecture import HeadKind
from estimator.config import MAX_LABELS, Config

# Longest suffix first: "BloomModelForCausalLM" is a causal LM, not a base "Model".
SUFFIXES: tuple[tuple[str, HeadKind], ...] = (
    ("ForSequenceClassification", "sequence-classification"),
    # An image classifier is the same head over the pooled state (ViT, CLIP).
    ("ForImageClassification", "sequence-classification"),
    ("ForConditionalGeneration", "conditional-generation"),
    ("ForPreTraining", "pretraining"),
    ("ForCausalLM", "causal-lm"),
    ("ForMaskedLM", "masked-lm"),
    ("LMHeadModel", "causal-lm"),
    ("MTModel", "conditional-generation"),
    ("Model", "base"),
)


def head_of(architecture: str) -> HeadKind | None:
    """The head a class name's suffix names (``LlamaForCausalLM``: causal-lm); None if none."""
    for suffix, head in SUFFIXES:
        if architecture.endswith(suffix):
            return head
    return None


def architecture_of(cfg: Config) -> str | None:
    """``architectures[0]``; None when the list is absent or empty."""
    names = cfg.texts("architectures")
    if not names:
        return None
    return names[0]


def num_labels(cfg: Config) -> int:
    """Classifier width: id2label's size, else num_labels, else transformers' default of 2."""
    id2label = cfg.mapping("id2label")
    if id2label:
        if len(id2label) > MAX_LABELS:
            raise cfg.error("id2label", f"has {len(id2label)} labels (limit {MAX_LABELS})")
        return len(id2label)
    return cfg.size("num_labels", 2, limit=MAX_LABELS)
