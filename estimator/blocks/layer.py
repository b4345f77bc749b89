"""Builders that collect one layer's parameters once and stamp it out per layer.

Families describe a layer with relative names (``self_attn.q_proj``) into a
``LayerParts``; the frozen ``LayerTemplate`` it yields is then instantiated
for every layer index that shares it. Layers of a model are nearly always
identical but for their index, so describe() does the per-tensor work once
per distinct layer kind and only renames for the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TypeVar

from estimator.architecture import (
    AttentionSpec,
    Block,
    FeedForwardSpec,
    LayerStack,
    Linear,
    MoeSpec,
    Stack,
    Tensor,
    TensorRole,
)

Shape = tuple[int, ...]
_T = TypeVar("_T")


def numel(shape: Shape) -> int:
    """Elements of a tensor of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n


@dataclass
class LayerParts:
    """Mutable collector for the parameters and linears of one layer (or the model's top)."""

    tensors: list[tuple[str, Shape, TensorRole]] = field(default_factory=list)
    linears: list[Linear] = field(default_factory=list)
    norms: int = 0

    def param(self, name: str, shape: Shape, role: TensorRole) -> None:
        """A tensor that is not a linear's or a norm's (a bias vector, a scale), in ``role``."""
        self.tensors.append((name, shape, role))

    def linear(
        self,
        name: str,
        in_features: int,
        out_features: int,
        bias: bool,
        role: TensorRole,
        *,
        conv1d: bool = False,
    ) -> None:
        """An nn.Linear (weight ``(out, in)``) or GPT-2's Conv1D (weight ``(in, out)``)."""
        shape = (in_features, out_features) if conv1d else (out_features, in_features)
        self.tensors.append((f"{name}.weight", shape, role))
        if bias:
            self.tensors.append((f"{name}.bias", (out_features,), role))
        self.linears.append(Linear(name, in_features, out_features, bias))

    def norm(self, name: str, width: int, bias: bool, *, affine: bool = True) -> None:
        """A norm (counted even when ``affine`` is False, which adds no parameters)."""
        self.norms += 1
        if not affine:
            return
        self.tensors.append((f"{name}.weight", (width,), "norm"))
        if bias:
            self.tensors.append((f"{name}.bias", (width,), "norm"))


@dataclass(frozen=True)
class LayerTemplate:
    """One kind of layer: its parameters by relative name and its specs."""

    stack: Stack
    attention: AttentionSpec
    cross_attention: AttentionSpec | None
    feed_forward: FeedForwardSpec | None
    moe: MoeSpec | None
    tensors: tuple[tuple[str, Shape, TensorRole], ...]
    linears: tuple[Linear, ...]
    norms: int
    parameters: int
    role_parameters: tuple[tuple[TensorRole, int], ...]


def template(
    parts: LayerParts,
    *,
    stack: Stack,
    attention: AttentionSpec,
    cross_attention: AttentionSpec | None = None,
    feed_forward: FeedForwardSpec | None = None,
    moe: MoeSpec | None = None,
) -> LayerTemplate:
    """Freeze the collected parts into a template that layers of this kind are stamped from."""
    return LayerTemplate(
        stack=stack,
        attention=attention,
        cross_attention=cross_attention,
        feed_forward=feed_forward,
        moe=moe,
        tensors=tuple(parts.tensors),
        linears=tuple(parts.linears),
        norms=parts.norms,
        parameters=sum(numel(shape) for _, shape, _ in parts.tensors),
        role_parameters=_by_role(parts.tensors),
    )


def _same(mine: _T, theirs: _T) -> _T:
    return theirs if mine == theirs else mine


def sharing_specs(tpl: LayerTemplate, like: LayerTemplate) -> LayerTemplate:
    """``tpl`` holding ``like``'s linears and specs wherever the two are equal.

    Per-layer formulas run once per distinct ``linears`` tuple and spec object
    (they key on identity), so a layer that differs from its neighbours only by
    a tensor outside its linears (T5's relative position bias in a stack's first
    block) is computed once together with them.
    """
    return replace(
        tpl,
        attention=_same(tpl.attention, like.attention),
        cross_attention=_same(tpl.cross_attention, like.cross_attention),
        feed_forward=_same(tpl.feed_forward, like.feed_forward),
        moe=_same(tpl.moe, like.moe),
        linears=_same(tpl.linears, like.linears),
    )


def _by_role(
    tensors: list[tuple[str, Shape, TensorRole]],
) -> tuple[tuple[TensorRole, int], ...]:
    totals: dict[TensorRole, int] = {}
    for _, shape, role in tensors:
        totals[role] = totals.get(role, 0) + numel(shape)
    return tuple(totals.items())


@dataclass
class ModelParts:
    """The whole model being assembled: top-level tensors plus stacked layers.

    Layers are kept as their templates (``LayerStack``): the named per-layer
    tensors are only built if a caller iterates ``Architecture.tensors``.
    """

    segments: list[tuple[Tensor, ...] | LayerStack] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    # id(template) -> (the template, [position of its first block, blocks stamped from it]);
    # holding the template keeps its id from being reused by a later one.
    _templates: dict[int, tuple[LayerTemplate, list[int]]] = field(default_factory=dict)

    def param(self, name: str, shape: Shape, role: TensorRole) -> None:
        """A top-level tensor outside any block, appended in model order."""
        self.segments.append((Tensor(name, shape, role),))

    def extend(self, prefix: str, parts: LayerParts, block: int | None = None) -> None:
        """Add top-level parts (embeddings, head) under ``prefix``."""
        self.segments.append(
            tuple(Tensor(prefix + name, shape, role, block) for name, shape, role in parts.tensors)
        )

    def layers(self, prefix: str, templates: list[LayerTemplate], first_index: int = 0) -> None:
        """Stamp out ``templates[i]`` as ``{prefix}{i}.*``; block indices continue across stacks."""
        self.segments.append(LayerStack(prefix, first_index, tuple(t.tensors for t in templates)))
        protos: dict[int, Block] = {}
        for i, tpl in enumerate(templates):
            index = first_index + i
            key = id(tpl)
            proto = protos.get(key)
            group = self._templates.get(key)
            if group is None:
                self._templates[key] = (tpl, [len(self.blocks), 1])
            else:
                group[1][1] += 1
            if proto is None:
                proto = protos[key] = _block(tpl, index)
                self.blocks.append(proto)
            else:
                self.blocks.append(_restamp(proto, index))

    def layer_templates(self) -> tuple[tuple[int, int], ...]:
        """(position of the first block, count) per distinct template, in order of appearance."""
        return tuple((first, n) for _, (first, n) in self._templates.values())


def _block(tpl: LayerTemplate, index: int) -> Block:
    return Block(
        index=index,
        stack=tpl.stack,
        attention=tpl.attention,
        cross_attention=tpl.cross_attention,
        feed_forward=tpl.feed_forward,
        moe=tpl.moe,
        linears=tpl.linears,
        norms=tpl.norms,
        parameters=tpl.parameters,
        role_parameters=tpl.role_parameters,
    )


def _restamp(proto: Block, index: int) -> Block:
    """A copy of ``proto`` at another index.

    Fills the frozen instance's ``__dict__`` directly: a third of the cost of
    the generated ``__init__``, which sets each field through ``object.__setattr__``.
    """
    block = object.__new__(Block)
    fields = block.__dict__
    fields.update(proto.__dict__)
    fields["index"] = index
    return block
