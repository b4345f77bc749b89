"""Backward through a routed MoE layer runs one expert at a time over its own tokens.

transformers' MoE blocks loop over the experts a batch hits, so the gradient of an
expert's intermediate covers the tokens routed to it (top_k / num_experts of them on
average), where a dense MLP's covers every token.
"""

from __future__ import annotations

from estimator.memory.activations import _widest
from tests.estimator.archbuilder import llama_like


def test_an_experts_gradient_spans_its_share_of_the_tokens() -> None:
    moe = llama_like(hidden=64, heads=4, intermediate=1024, experts=8, top_k=2)
    assert _widest(moe.blocks[0]) == 1024 * 2 // 8  # wider than attention's 64, narrower than 1024


def test_a_dense_mlps_gradient_spans_every_token() -> None:
    dense = llama_like(hidden=64, heads=4, intermediate=1024)
    assert _widest(dense.blocks[0]) == 1024


def test_with_many_small_experts_the_attention_is_the_widest() -> None:
    fine = llama_like(hidden=64, heads=4, intermediate=128, experts=64, top_k=2)
    assert _widest(fine.blocks[0]) == 64
