"""The normalised description of a model that every estimate is computed from.

A family module (``estimator.families``) reads one config.json and returns an
``Architecture``: the tensors transformers would instantiate for
``architectures[0]`` (named as in its ``named_parameters()``), and per block
the attention, feed-forward / MoE and linear layers that memory, LoRA and
cost formulas need. Nothing downstream reads the raw config again, so the
quirks of each family's config keys stay inside its module.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal, NamedTuple, overload

HeadKind = Literal[
    "base",
    "causal-lm",
    "masked-lm",
    "sequence-classification",
    "pretraining",
    "conditional-generation",
]
# Heads whose output is one logit per vocabulary entry (and the LM head's weight).
VOCAB_HEADS: Final = frozenset({"causal-lm", "masked-lm", "pretraining", "conditional-generation"})
TensorRole = Literal[
    "embedding",
    "position",
    "attention",
    "mlp",
    "expert",
    "router",
    "norm",
    "head",
    "other",
]
AttentionKind = Literal["mha", "gqa", "mqa", "mla"]
FeedForwardKind = Literal["gated", "plain"]
NormKind = Literal["layernorm", "rmsnorm"]
PositionKind = Literal["learned", "rope", "alibi", "relative", "none"]
Stack = Literal["encoder", "decoder"]


class Tensor(NamedTuple):
    """One parameter as transformers names it (``model.layers.0.self_attn.q_proj.weight``).

    A named tuple rather than a frozen dataclass: a model has hundreds of
    them and describe() stamps them out per layer, so construction cost counts.
    """

    name: str
    shape: tuple[int, ...]
    role: TensorRole
    block: int | None = None

    @property
    def numel(self) -> int:
        """Elements in the tensor (1 for a scalar); multiply by the dtype's bytes for its size."""
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class Linear:
    """A linear layer inside a block; LoRA targets and FLOPs are counted on these.

    ``copies`` is the number of identical instances (routed experts), so a
    Mixtral block lists ``experts.w1`` once with ``copies=8``.
    """

    name: str
    in_features: int
    out_features: int
    bias: bool
    copies: int = 1

    @property
    def parameters(self) -> int:
        """Weights plus biases over all ``copies``: what LoRA and FLOP counts read."""
        return self.copies * (
            self.in_features * self.out_features + (self.out_features if self.bias else 0)
        )


@dataclass(frozen=True)
class AttentionSpec:
    """Self- or cross-attention of one block.

    ``kv_cache_elements_per_token`` is what one token costs in this layer's
    KV cache: ``2 * num_kv_heads * head_dim`` for MHA/GQA/MQA with equal K/V
    widths, ``kv_lora_rank + qk_rope_head_dim`` for MLA's latent cache.
    """

    kind: AttentionKind
    num_heads: int
    num_kv_heads: int
    head_dim: int
    v_head_dim: int
    causal: bool
    sliding_window: int | None
    kv_cache_elements_per_token: int
    dropout: float = 0.0


@dataclass(frozen=True)
class FeedForwardSpec:
    """A dense MLP: gated (SwiGLU/GeGLU: gate, up, down) or plain (fc1, act, fc2)."""

    kind: FeedForwardKind
    intermediate_size: int
    activation: str
    dropout: float = 0.0


@dataclass(frozen=True)
class MoeSpec:
    """Routed experts plus optional shared experts (DeepSeek, Qwen2-MoE).

    ``shared`` describes all shared experts together (their intermediate sizes summed).
    """

    num_experts: int
    top_k: int
    expert: FeedForwardSpec
    shared: FeedForwardSpec | None = None


@dataclass(frozen=True)
class Block:
    """One transformer layer."""

    index: int
    stack: Stack
    attention: AttentionSpec
    cross_attention: AttentionSpec | None
    feed_forward: FeedForwardSpec | None
    moe: MoeSpec | None
    linears: tuple[Linear, ...]
    norms: int
    parameters: int
    # Parameters of this block by tensor role, e.g. (("attention", n), ("mlp", m), ("norm", k)).
    role_parameters: tuple[tuple[TensorRole, int], ...] = ()

    def parameters_of(self, *roles: TensorRole) -> int:
        """Parameters of this block's tensors with any of ``roles``; 0 when none has them."""
        return sum(n for role, n in self.role_parameters if role in roles)


# One layer's tensors relative to its prefix: (name, shape, role), shared by identical layers.
LayerTensors = tuple[tuple[str, tuple[int, ...], TensorRole], ...]


class LayerStack(NamedTuple):
    """Layers ``{prefix}{i}.*`` for i in range(len(layers)), block indices from ``first_index``."""

    prefix: str
    first_index: int
    layers: tuple[LayerTensors, ...]


class TensorTable(Sequence[Tensor]):
    """All tensors of a stamped model, named only when someone asks for the names.

    describe() knows each layer as a shared template, so the per-layer
    ``Tensor`` objects (tens of thousands for a deep MoE) are only needed by
    callers that compare names (transformers' ``named_parameters()``, a
    checkpoint's tensor list). Counts per shape, the top-level tensors and one
    block's tensors come straight from the templates, in the order the full
    list would give them.
    """

    def __init__(self, segments: Sequence[tuple[Tensor, ...] | LayerStack]) -> None:
        self.segments = tuple(segments)

    @cached_property
    def _all(self) -> tuple[Tensor, ...]:
        out: list[Tensor] = []
        new = tuple.__new__  # Tensor's fields in order, without the keyword-parsing constructor
        for seg in self.segments:
            if not isinstance(seg, LayerStack):
                out.extend(seg)
                continue
            for i, layer in enumerate(seg.layers):
                head = f"{seg.prefix}{i}."
                index = seg.first_index + i
                out.extend(
                    [new(Tensor, (head + n, shape, role, index)) for n, shape, role in layer]
                )
        return tuple(out)

    @cached_property
    def top(self) -> tuple[Tensor, ...]:
        """Tensors outside the blocks, in model order."""
        return tuple(t for seg in self.segments if not isinstance(seg, LayerStack) for t in seg)

    def shape_counts(self) -> dict[tuple[int, ...], int]:
        """How many tensors have each shape, keyed in order of first appearance."""
        counts: dict[tuple[int, ...], int] = {}
        for seg in self.segments:
            if not isinstance(seg, LayerStack):
                for t in seg:
                    counts[t.shape] = counts.get(t.shape, 0) + 1
                continue
            # Each distinct layer adds its shapes where it first appears, times its repeats.
            repeats: dict[int, tuple[LayerTensors, int]] = {}
            for layer in seg.layers:
                seen = repeats.get(id(layer))
                repeats[id(layer)] = (layer, 1 if seen is None else seen[1] + 1)
            for layer, n in repeats.values():
                for _, shape, _ in layer:
                    counts[shape] = counts.get(shape, 0) + n
        return counts

    def block_tensors(self, index: int) -> tuple[Tensor, ...]:
        """Block ``index``'s tensors, named as in the full list; () for an index past the blocks."""
        for seg in self.segments:
            if isinstance(seg, LayerStack) and 0 <= index - seg.first_index < len(seg.layers):
                i = index - seg.first_index
                head = f"{seg.prefix}{i}."
                return tuple(
                    Tensor(head + n, shape, role, index) for n, shape, role in seg.layers[i]
                )
        return ()

    def __len__(self) -> int:
        return sum(
            sum(len(layer) for layer in seg.layers) if isinstance(seg, LayerStack) else len(seg)
            for seg in self.segments
        )

    @overload
    def __getitem__(self, i: int) -> Tensor: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Tensor, ...]: ...
    def __getitem__(self, i: int | slice) -> Tensor | tuple[Tensor, ...]:
        return self._all[i]

    def __iter__(self) -> Iterator[Tensor]:
        return iter(self._all)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TensorTable):
            return self._all == other._all
        return isinstance(other, tuple) and self._all == other

    def __hash__(self) -> int:
        return hash(self._all)

    def __repr__(self) -> str:
        return f"TensorTable({len(self)} tensors)"


@dataclass(frozen=True)
class Architecture:
    """Everything the estimator knows about a model, derived from its config alone."""

    model_type: str
    architecture: str
    head: HeadKind
    family: str
    supported: bool
    hidden_size: int
    vocab_size: int
    max_position_embeddings: int | None
    tie_word_embeddings: bool
    declared_dtype: str | None
    norm: NormKind
    position: PositionKind
    hidden_dropout: float
    blocks: tuple[Block, ...]
    # A plain tuple (hand-built architectures) or describe()'s TensorTable.
    tensors: Sequence[Tensor]
    rope_scaling: tuple[tuple[str, object], ...] | None = None
    rope_theta: float | None = None
    # (index of the first block, blocks stamped from its template) per distinct
    # layer, as describe() stamped them; empty: derived from the blocks.
    layer_templates: tuple[tuple[int, int], ...] = ()
    # Sizes config.json did not give and the family's default stood in for (key, default).
    defaulted: tuple[tuple[str, int], ...] = ()

    @cached_property
    def block_groups(self) -> tuple[tuple[Block, int], ...]:
        """Distinct layers, each as its first block and how many blocks are identical to it.

        Families stamp identical layers from one template, so their specs and
        linears are the same objects; per-layer formulas run once per group.
        """
        if self.layer_templates:
            return tuple((self.blocks[i], n) for i, n in self.layer_templates)
        firsts: dict[tuple[object, ...], Block] = {}
        counts: dict[tuple[object, ...], int] = {}
        for b in self.blocks:
            key = (
                id(b.linears),
                id(b.attention),
                id(b.cross_attention),
                id(b.feed_forward),
                id(b.moe),
                id(b.role_parameters),
                b.stack,
                b.norms,
                b.parameters,
            )
            firsts.setdefault(key, b)
            counts[key] = counts.get(key, 0) + 1
        return tuple((firsts[key], n) for key, n in counts.items())

    @cached_property
    def shape_counts(self) -> dict[tuple[int, ...], int]:
        """How many tensors have each shape: per-tensor formulas run once per distinct shape."""
        if isinstance(self.tensors, TensorTable):
            return self.tensors.shape_counts()
        counts: dict[tuple[int, ...], int] = {}
        for t in self.tensors:
            counts[t.shape] = counts.get(t.shape, 0) + 1
        return counts

    @cached_property
    def top_tensors(self) -> tuple[Tensor, ...]:
        """Tensors outside the blocks (embeddings, final norm, head)."""
        if isinstance(self.tensors, TensorTable):
            return self.tensors.top
        return tuple(t for t in self.tensors if t.block is None)

    @cached_property
    def total_parameters(self) -> int:
        """Every parameter, equal to transformers' ``numel`` sum over ``named_parameters()``."""
        return sum(shape_numel(shape) * n for shape, n in self.shape_counts.items())

    def block_tensors(self, index: int) -> tuple[Tensor, ...]:
        """The tensors of block ``index``, named as in the full list."""
        if isinstance(self.tensors, TensorTable):
            return self.tensors.block_tensors(index)
        return tuple(t for t in self.tensors if t.block == index)

    @cached_property
    def in_block_parameters(self) -> int:
        """Parameters inside the blocks: the total less top-level tensors (embeddings, head)."""
        return sum(b.parameters * n for b, n in self.block_groups)

    @property
    def num_layers(self) -> int:
        """Blocks in all stacks: an encoder-decoder counts both."""
        return len(self.blocks)

    @property
    def is_encoder_only(self) -> bool:
        """True when no block is a decoder: no generation, no KV cache."""
        return all(b.stack == "encoder" for b, _ in self.block_groups)

    @property
    def has_kv_cache(self) -> bool:
        """True when a decoder block exists, whose keys and values are cached while generating."""
        return any(b.stack == "decoder" for b, _ in self.block_groups)


def shape_numel(shape: tuple[int, ...]) -> int:
    """Elements of a tensor of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n
