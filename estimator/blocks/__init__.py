"""Building blocks the architecture families share: attention (MHA/GQA/MQA, MLA), dense
MLPs (gated, plain), mixture-of-experts, embeddings and heads, and the layer collector
that stamps one layer's parameters out for every layer index."""

from estimator.blocks import attention, embeddings, layer, mlp, moe

__all__ = ["attention", "embeddings", "layer", "mlp", "moe"]
