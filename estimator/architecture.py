"""The normalised description of a model that every estimate is computed from.

A family module (``estimator.families``) reads one config.json and returns an
``Architecture``: the tensors transformers would instantiate for
``architectures[0]`` (named as in its ``named_parameters()``), and per block
the attention, feed-forward / MoE and linear layers that memory, LoRA and
cost formulas need. Nothing downstream reads the raw config again, so the
quirks of each family's config keys stay inside its module.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal, NamedTuple

HeadKind = Literal[
    "base",
    "causal-lm",
    "masked-lm",
    "sequence-classification",
    "pretraining",
    "conditional-generation",
]
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
        return sum(n for role, n in self.role_parameters if role in roles)


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
    tensors: tuple[Tensor, ...]
    rope_scaling: tuple[tuple[str, object], ...] | None = None
    rope_theta: float | None = None

    @cached_property
    def block_groups(self) -> tuple[tuple[Block, int], ...]:
        """Distinct layers, each as its first block and how many blocks are identical to it.

        Families stamp identical layers from one template, so their specs and
        linears are the same objects; per-layer formulas run once per group.
        """
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
        counts: dict[tuple[int, ...], int] = {}
        for t in self.tensors:
            counts[t.shape] = counts.get(t.shape, 0) + 1
        return counts

    @cached_property
    def top_tensors(self) -> tuple[Tensor, ...]:
        """Tensors outside the blocks (embeddings, final norm, head)."""
        return tuple(t for t in self.tensors if t.block is None)

    @cached_property
    def total_parameters(self) -> int:
        return sum(shape_numel(shape) * n for shape, n in self.shape_counts.items())

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @property
    def is_encoder_only(self) -> bool:
        return all(b.stack == "encoder" for b in self.blocks)

    @property
    def has_kv_cache(self) -> bool:
        return any(b.stack == "decoder" for b in self.blocks)


def shape_numel(shape: tuple[int, ...]) -> int:
    """Elements of a tensor of ``shape``."""
    n = 1
    for d in shape:
        n *= d
    return n
