"""vLLM's KV cache arithmetic: per-layer specs, one request's bytes, the cache a pool holds.

The KV cache side of the V1 engine's start-up (steps 3 and 4 of ``vllm``'s docstring,
sources in ``data/engines.json``); ``vllm`` takes its decision with these, in vLLM's
order of checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.engines.common import cdiv


@dataclass(frozen=True)
class LayerSpec:
    """vLLM's ``FullAttentionSpec`` / ``SlidingWindowSpec`` / ``MLAAttentionSpec`` for one layer."""

    block_size: int
    heads: int
    head_size: int
    dtype_bytes: int
    latent: bool
    sliding_window: int | None

    @property
    def page_size_bytes(self) -> int:
        """Bytes of one block: K and V (or MLA's one latent) for ``block_size`` tokens."""
        coef = 1 if self.latent else 2
        return coef * self.block_size * self.heads * self.head_size * self.dtype_bytes

    def max_memory_usage_bytes(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """One request's KV bytes at ``max_model_len``; a sliding window caps the tokens held."""
        if self.sliding_window is None:
            return cdiv(max_model_len, self.block_size) * self.page_size_bytes
        num_tokens = min(self.sliding_window - 1 + max_num_batched_tokens, max_model_len)
        return (cdiv(num_tokens, self.block_size) + 1) * self.page_size_bytes


# Each distinct layer spec with the number of layers that have it, in model order.
Specs = tuple[tuple[LayerSpec, int], ...]


def needed_memory(specs: Specs, max_model_len: int, batched: int) -> int:
    """``max_memory_usage_bytes(vllm_config, kv_cache_spec.values())``: one request's KV."""
    return sum(spec.max_memory_usage_bytes(max_model_len, batched) * n for spec, n in specs)


def longest_fitting(specs: Specs, available: int, batched: int, high: int) -> int:
    """The largest length in 1..``high`` whose ``needed_memory`` fits ``available`` (0: none).

    vLLM's ``estimate_max_model_len`` bisects the length; the answer is the same one,
    solved instead of searched, because it is asked on every card of the table. One
    request's bytes depend on the length only through its block count ``k =
    cdiv(length, block_size)`` (``layer_specs`` gives every spec the settings' one
    block size): a full-attention layer holds ``k`` pages, a sliding-window layer
    ``min(k, cap) + 1`` with ``cap = cdiv(window - 1 + batched, block_size)`` (the
    ceiling of a minimum is the minimum of the ceilings). Between two caps the bytes
    are linear in ``k``, so each stretch is one division.
    """
    if high < 1 or needed_memory(specs, 1, batched) > available:
        return 0
    if not specs:
        return high
    block = specs[0][0].block_size
    slope = 0  # bytes per block while k is below every remaining cap
    capped: list[tuple[int, int]] = []  # (cap, bytes per block of the layers it caps)
    base = 0  # bytes of the capped layers' blocks at their caps, and their one extra page
    for spec, n in specs:
        page = spec.page_size_bytes * n
        slope += page
        if spec.sliding_window is not None:
            capped.append((cdiv(spec.sliding_window - 1 + batched, block), page))
            base += page
    blocks = cdiv(high, block)
    best, low = 0, 1
    for cap, page in [*sorted(capped), (blocks, 0)]:
        top = min(cap, blocks)
        if top >= low:
            k = top if slope == 0 else min(top, (available - base) // slope)
            if k < low:
                break
            best = k
            if k < top:
                break
            low = top + 1
        slope -= page
        base += cap * page
    return min(best * block, high)


def groups_of(specs: Specs) -> list[tuple[LayerSpec, int]]:
    """KV cache groups: one for uniform specs, else ``_get_kv_cache_groups_uniform_page_size``."""
    if len(specs) == 1:
        return [specs[0]]
    counts = [n for _, n in specs]
    group_size = min(counts)
    if max(counts) < min(counts) * 1.5:
        group_size = max(counts)
    groups: list[tuple[LayerSpec, int]] = []
    for spec, n in specs:
        groups.extend([(spec, group_size)] * cdiv(n, group_size))
    return groups


@dataclass(frozen=True)
class KvConfig:
    """The KV cache vLLM allocates: blocks, tokens, bytes and how many full requests fit at once."""

    num_blocks: int
    tokens: int
    bytes: int
    max_concurrency: float


def kv_cache_config(specs: Specs, available: int, max_model_len: int, batched: int) -> KvConfig:
    """``get_kv_cache_config_from_groups``: the cache that ``available`` bytes hold."""
    groups = groups_of(specs)
    group_size = max(n for _, n in groups)
    page = max(spec.page_size_bytes for spec, _ in groups)
    num_blocks = max(int(available // page // group_size), 0)
    min_block = min(spec.block_size for spec, _ in groups)
    tokens = num_blocks // len(groups) * min_block
    per_request = sum(spec.max_memory_usage_bytes(max_model_len, batched) for spec, _ in groups)
    concurrency = num_blocks / cdiv(per_request, page)
    return KvConfig(num_blocks, tokens, num_blocks * page * group_size, concurrency)
