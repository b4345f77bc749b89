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
from typing import Literal

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


@dataclass(frozen=True)
class Tensor:
    """One parameter as transformers names it (``model.layers.0.self_attn.q_proj.weight``)."""

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
    def total_parameters(self) -> int:
        return sum(t.numel for t in self.tensors)

    @property
    def num_layers(self) -> int:
        return len(self.blocks)

    @property
    def is_encoder_only(self) -> bool:
        return all(b.stack == "encoder" for b in self.blocks)

    @property
    def has_kv_cache(self) -> bool:
        return any(b.stack == "decoder" for b in self.blocks)
