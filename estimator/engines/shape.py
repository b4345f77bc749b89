"""What serving engines read from a model: weights per GPU, KV layers, forward transients.

Engines size their KV cache from the attention layers alone (heads, head
width, sliding window), and their start-up profile run from one forward
pass over a token budget. ``ServingShape`` collects exactly that from an
``Architecture`` once, so each engine module is only its own arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.architecture import Architecture, Block
from estimator.memory.states import ParameterSplit

COMPUTE_BYTES = 2  # engines serve in the checkpoint's 16-bit dtype (fp32 configs are cast down)


@dataclass(frozen=True)
class KvLayer:
    """One decoder layer's KV cache, as an engine's per-layer spec describes it.

    ``heads`` and ``head_size`` are what vLLM's ``AttentionSpec`` calls
    ``num_kv_heads`` and ``head_size``: for MLA one latent "head" of
    ``kv_lora_rank + qk_rope_head_dim`` stored once (``latent``), else K and V.
    """

    heads: int
    head_size: int
    latent: bool
    sliding_window: int | None

    def heads_per_gpu(self, tp: int) -> int:
        """KV heads each of ``tp`` GPUs caches for this layer."""
        # MLA's latent cache is replicated; KV heads shard, never below one per GPU.
        return self.heads if self.latent else max(1, self.heads // tp)

    def elements_per_token(self, tp: int) -> int:
        """Cached elements per token on one GPU: K and V per head, or the one latent."""
        return (1 if self.latent else 2) * self.heads_per_gpu(tp) * self.head_size


@dataclass(frozen=True)
class ServingShape:
    """The model as an engine sizes it: weights, KV layers and the widest forward transient."""

    total_parameters: int
    block_linear_parameters: int
    hidden_size: int
    vocab_size: int
    max_position_embeddings: int | None
    # Each distinct decoder layer's KV spec with how many layers share it, in model order.
    kv_layers: tuple[tuple[KvLayer, int], ...]
    # Largest per-token transient of one layer's forward pass, in elements, at tp=1 and per tp.
    attention_width: int
    mlp_width: int
    moe_width: int
    model_type: str = ""
    rope_scaling: tuple[tuple[str, object], ...] | None = None

    @property
    def has_kv_cache(self) -> bool:
        """False for an encoder-only model: engines then reserve no KV cache."""
        return bool(self.kv_layers)

    def weights_bytes(
        self, bytes_per_weight: float, tp: int, dtype_bytes: int = COMPUTE_BYTES
    ) -> int:
        """Per-GPU weights: block linears at the quantized width, the rest in the serving
        dtype (16-bit unless the engine runs ``--dtype float32``), split by TP."""
        outside = self.total_parameters - self.block_linear_parameters
        total = self.block_linear_parameters * bytes_per_weight + outside * dtype_bytes
        return int(total / tp)

    def forward_peak_bytes(self, tokens: int, tp: int, dtype_bytes: int = COMPUTE_BYTES) -> int:
        """One layer's live tensors for ``tokens`` tokens: residual, hidden, widest transient."""
        widest = max(self.attention_width / tp, self.mlp_width / tp, self.moe_width / tp)
        return int(tokens * dtype_bytes * (2 * self.hidden_size + widest))

    def kv_bytes_per_token(self, dtype_bytes: int, tp: int) -> int:
        """KV cache bytes one token costs per GPU across every decoder layer."""
        return sum(layer.elements_per_token(tp) * n for layer, n in self.kv_layers) * dtype_bytes


def serving_shape(
    arch: Architecture, split: ParameterSplit, unquantized: tuple[str, ...] = ()
) -> ServingShape:
    """The engine's view of ``arch``; ``unquantized``: layer modules a quantised checkpoint keeps
    16-bit, counted out of the quantised block linears."""
    layers: dict[KvLayer, int] = {}
    attention = mlp = moe = 0
    kept_16bit = 0
    for block, count in arch.block_groups:
        if unquantized:
            kept_16bit += count * sum(
                lin.copies * lin.in_features * lin.out_features
                for lin in block.linears
                if lin.name.startswith(unquantized)
            )
        a, m, e = _widths(block)
        attention, mlp, moe = max(attention, a), max(mlp, m), max(moe, e)
        if block.stack != "decoder":
            continue
        layer = _kv_layer(block)
        layers[layer] = layers.get(layer, 0) + count
    return ServingShape(
        total_parameters=split.total,
        block_linear_parameters=split.block_linears - kept_16bit,
        hidden_size=arch.hidden_size,
        vocab_size=arch.vocab_size,
        max_position_embeddings=arch.max_position_embeddings,
        kv_layers=tuple(layers.items()),
        attention_width=attention,
        mlp_width=mlp,
        moe_width=moe,
        model_type=arch.model_type,
        rope_scaling=arch.rope_scaling,
    )


def _kv_layer(block: Block) -> KvLayer:
    att = block.attention
    if att.kind == "mla":
        return KvLayer(1, att.kv_cache_elements_per_token, True, att.sliding_window)
    heads = max(1, att.num_kv_heads)
    return KvLayer(heads, att.kv_cache_elements_per_token // (2 * heads), False, att.sliding_window)


def _widths(block: Block) -> tuple[int, int, int]:
    att = block.attention
    q = att.num_heads * att.head_dim
    kv = att.num_kv_heads * (att.head_dim + att.v_head_dim)
    attention = q + kv + att.num_heads * att.v_head_dim  # qkv projection out + attention out
    mlp = 0
    if block.feed_forward is not None:
        ff = block.feed_forward
        mlp = (3 if ff.kind == "gated" else 2) * ff.intermediate_size
    moe = 0
    if block.moe is not None:
        # fused MoE keeps (tokens, top_k, 2I) and (tokens * top_k, I) intermediate caches
        e = block.moe.expert.intermediate_size
        moe = block.moe.top_k * (3 * e)
        if block.moe.shared is not None:
            moe += 3 * block.moe.shared.intermediate_size
    return attention, mlp, moe
