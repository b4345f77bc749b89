"""An Architecture from the parameter list transformers itself instantiates.

For a model type no family module knows, a caller holding the optional ``[exact]``
extra (torch + transformers) builds the model on the meta device and hands the
``(name, shape)`` list in; this module stays free of torch and turns the list into
the same Architecture the families build: repeated ``layers.{i}`` / ``layer.{i}`` /
``h.{i}`` / ``blocks.{i}`` groups become stamped layer templates, 2-D weights inside
a layer become the Linears LoRA and FLOPs read, and the attention shape (heads, KV
heads, head_dim) is read from the config as the generic estimate reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from estimator.architecture import (
    Architecture,
    FeedForwardSpec,
    Linear,
    Stack,
    TensorRole,
)
from estimator.blocks import attention
from estimator.blocks.layer import LayerParts, LayerTemplate, ModelParts, numel, template
from estimator.config import Config
from estimator.errors import ConfigError
from estimator.families.common import assemble
from estimator.families.family import Request

Shape = tuple[int, ...]
ParameterList = tuple[tuple[str, Shape], ...]
ExactParameters = Callable[[Mapping[str, object]], "ParameterList | None"]
"""config.json -> the parameters transformers builds for ``architectures[0]``, or None
when it cannot (the extra is not installed, the type is unknown to transformers)."""

_LAYER = re.compile(
    r"^(?P<prefix>(?:.*\.)?(?:layers|layer|h|blocks|block)\.)(?P<i>\d+)\.(?P<rest>.+)$"
)
_ROLES: tuple[tuple[tuple[str, ...], TensorRole], ...] = (
    (("expert",), "expert"),
    (("router", "gate.weight"), "router"),
    (("norm", "ln_", "layer_norm", "layernorm"), "norm"),
    (("position", "wpe", "pos_embed"), "position"),
    (("embed", "wte", "word_embeddings", "shared.", "patch"), "embedding"),
    (("attn", "attention", "q_proj", "k_proj", "v_proj", "o_proj"), "attention"),
    (("mlp", "fc", "ffn", "feed_forward", "dense", "intermediate", "output"), "mlp"),
    (("lm_head", "classifier", "score", "head", "proj_out", "projection", "pooler"), "head"),
)


@dataclass(frozen=True)
class AttentionShape:
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int


def role_of(name: str) -> TensorRole:
    """A tensor's role guessed from its name by substring, first match wins; "other" if none."""
    lowered = name.lower()
    for needles, role in _ROLES:
        if any(n in lowered for n in needles):
            return role
    return "other"


def _attention_shape(cfg: Config, params: ParameterList) -> AttentionShape:
    """Heads and widths from the config (or its text_config), as the generic estimate reads
    them; a config without them gets one head over the widest embedding."""
    from estimator.families.generic import _language_model, missing_fields, shape_of

    if not missing_fields(cfg):
        try:
            s = shape_of(_language_model(cfg))
            return AttentionShape(s.hidden_size, s.num_heads, s.num_kv_heads, s.head_dim)
        except ConfigError:
            pass
    widths = [shape[-1] for name, shape in params if len(shape) == 2 and "embed" in name]
    hidden = max(widths, default=1)
    return AttentionShape(hidden, 1, 1, hidden)


def _stack_of(prefix: str) -> Stack:
    return "decoder" if "decoder" in prefix or "encoder" not in prefix else "encoder"


def _template(
    rest: tuple[tuple[str, Shape], ...], stack: Stack, shape: AttentionShape
) -> LayerTemplate:
    parts = LayerParts()
    names = {name for name, _ in rest}
    widths: list[int] = []
    for name, dims in rest:
        role = role_of(name)
        parts.param(name, dims, role)
        if role == "norm":
            parts.norms += 1
        elif len(dims) == 2 and name.endswith(".weight"):
            base = name[: -len(".weight")]
            parts.linears.append(Linear(base, dims[1], dims[0], f"{base}.bias" in names))
            if role == "mlp":
                widths.append(max(dims))
        elif len(dims) == 3 and role == "expert":
            parts.linears.append(Linear(name, dims[2], dims[1], False, dims[0]))
    spec = attention.spec(shape.heads, shape.kv_heads, shape.head_dim, causal=stack == "decoder")
    ffn = FeedForwardSpec("plain", max(widths), "gelu") if widths else None
    return template(parts, stack=stack, attention=spec, feed_forward=ffn)


def from_parameters(
    cfg: Config, model_type: str | None, architecture: str | None, params: ParameterList
) -> Architecture:
    """The Architecture of ``params`` (transformers' own ``named_parameters()`` order)."""
    from estimator.families.heads import head_of

    shape = _attention_shape(cfg, params)
    model = ModelParts()
    stacks: dict[str, dict[int, list[tuple[str, Shape]]]] = {}
    order: list[str | tuple[str, Shape]] = []
    for name, dims in params:
        m = _LAYER.match(name)
        if m is None:
            order.append((name, dims))
            continue
        prefix = m["prefix"]
        if prefix not in stacks:
            stacks[prefix] = {}
            order.append(prefix)
        stacks[prefix].setdefault(int(m["i"]), []).append((m["rest"], dims))
    first = 0
    cache: dict[tuple[tuple[str, Shape], ...], LayerTemplate] = {}
    for item in order:
        if isinstance(item, tuple):
            model.param(item[0], item[1], role_of(item[0]))
            continue
        layers = stacks[item]
        stack = _stack_of(item)
        templates = []
        for i in range(max(layers) + 1):
            rest = tuple(layers.get(i, ()))
            tpl = cache.get(rest)
            if tpl is None:
                tpl = cache[rest] = _template(rest, stack, shape)
            templates.append(tpl)
        model.layers(item, templates, first_index=first)
        first += len(templates)
    head = head_of(architecture) if architecture else None
    vocab = max((d[0] for n, d in params if len(d) == 2 and role_of(n) == "embedding"), default=0)
    names = {n for n, _ in params}
    req = Request(model_type or "unknown", architecture or "unknown", head or "base")
    return assemble(
        cfg,
        model,
        req,
        family="meta-device",
        hidden_size=shape.hidden,
        vocab_size=vocab,
        max_position_embeddings=cfg.optional_size("max_position_embeddings", limit=1 << 31),
        tie_word_embeddings=not any("lm_head" in n for n in names),
        norm="layernorm",
        position="learned",
    )


def total(params: ParameterList) -> int:
    """Parameters in the list: the number transformers' ``numel`` sum gives."""
    return sum(numel(dims) for _, dims in params)


__all__ = ["ExactParameters", "ParameterList", "from_parameters", "role_of", "total"]
