"""A tiny Architecture builder for memory tests: one decoder or encoder layer type, stamped L times.

Hand-built so a test can state the expected bytes from the formula alone,
independent of the family modules.
"""

from __future__ import annotations

from estimator.architecture import (
    Architecture,
    AttentionSpec,
    Block,
    FeedForwardSpec,
    Linear,
    MoeSpec,
    Tensor,
)


def llama_like(
    *,
    hidden: int = 64,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 4,
    intermediate: int = 128,
    vocab: int = 256,
    sliding_window: int | None = None,
    experts: int = 0,
    top_k: int = 2,
    encoder: bool = False,
) -> Architecture:
    head_dim = hidden // heads
    att = AttentionSpec(
        kind="mha" if kv_heads == heads else "gqa",
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        v_head_dim=head_dim,
        causal=not encoder,
        sliding_window=sliding_window,
        kv_cache_elements_per_token=2 * kv_heads * head_dim,
    )
    kv = kv_heads * head_dim
    linears: list[tuple[Linear, str]] = [
        (Linear("self_attn.q_proj", hidden, hidden, False), "attention"),
        (Linear("self_attn.k_proj", hidden, kv, False), "attention"),
        (Linear("self_attn.v_proj", hidden, kv, False), "attention"),
        (Linear("self_attn.o_proj", hidden, hidden, False), "attention"),
    ]
    ff = FeedForwardSpec("gated", intermediate, "silu")
    moe = None
    if experts:
        moe = MoeSpec(experts, top_k, ff)
        linears += [
            (Linear("mlp.gate", hidden, experts, False), "router"),
            (Linear("mlp.experts.gate_proj", hidden, intermediate, False, experts), "expert"),
            (Linear("mlp.experts.up_proj", hidden, intermediate, False, experts), "expert"),
            (Linear("mlp.experts.down_proj", intermediate, hidden, False, experts), "expert"),
        ]
    else:
        linears += [
            (Linear("mlp.gate_proj", hidden, intermediate, False), "mlp"),
            (Linear("mlp.up_proj", hidden, intermediate, False), "mlp"),
            (Linear("mlp.down_proj", intermediate, hidden, False), "mlp"),
        ]
    tensors = [Tensor("model.embed_tokens.weight", (vocab, hidden), "embedding")]
    blocks = []
    lin_tuple = tuple(lin for lin, _ in linears)
    for i in range(layers):
        params = 0
        for lin, role in linears:
            shape = (
                (lin.copies, lin.out_features, lin.in_features)
                if lin.copies > 1
                else (lin.out_features, lin.in_features)
            )
            tensors.append(Tensor(f"model.layers.{i}.{lin.name}.weight", shape, role, i))
            params += lin.parameters
        for norm in ("input_layernorm", "post_attention_layernorm"):
            tensors.append(Tensor(f"model.layers.{i}.{norm}.weight", (hidden,), "norm", i))
            params += hidden
        blocks.append(
            Block(
                i,
                "encoder" if encoder else "decoder",
                att,
                None,
                None if experts else ff,
                moe,
                lin_tuple,
                2,
                params,
            )
        )
    tensors.append(Tensor("model.norm.weight", (hidden,), "norm"))
    tensors.append(Tensor("lm_head.weight", (vocab, hidden), "head"))
    return Architecture(
        model_type="llama",
        architecture="LlamaForCausalLM",
        head="causal-lm",
        family="llama",
        supported=True,
        hidden_size=hidden,
        vocab_size=vocab,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        declared_dtype="bfloat16",
        norm="rmsnorm",
        position="rope",
        hidden_dropout=0.0,
        blocks=tuple(blocks),
        tensors=tuple(tensors),
    )
