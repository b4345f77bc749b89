"""Where a model's parameters sit (embeddings, each block, head) and how many a token uses.

For MoE models every routed expert is resident but a token passes through only
``top_k`` of them, so compute and decode bandwidth follow the active count:
all non-expert parameters, the shared experts, and ``top_k / num_experts`` of
the routed ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from estimator.architecture import Architecture, Block

_EMBEDDING_ROLES = ("embedding", "position")


@dataclass(frozen=True)
class ParameterBreakdown:
    """Parameter counts by place; ``other`` holds top-level norms and projections."""

    embeddings: int
    blocks: tuple[int, ...]
    head: int
    other: int

    @property
    def total(self) -> int:
        """Every parameter, equal to ``Architecture.total_parameters``."""
        return self.embeddings + sum(self.blocks) + self.head + self.other


def parameter_breakdown(arch: Architecture) -> ParameterBreakdown:
    """The parameters by place, each top-level tensor counted under its role."""
    embeddings = head = other = 0
    for t in arch.top_tensors:
        if t.role in _EMBEDDING_ROLES:
            embeddings += t.numel
        elif t.role == "head":
            head += t.numel
        else:
            other += t.numel
    return ParameterBreakdown(
        embeddings=embeddings,
        blocks=tuple(b.parameters for b in arch.blocks),
        head=head,
        other=other,
    )


def inactive_expert_parameters(arch: Architecture) -> int:
    """Routed-expert parameters a single token does not touch."""
    return sum(idle_in_block(block) * count for block, count in arch.block_groups)


def idle_in_block(block: Block) -> int:
    """The routed-expert parameters of one layer that a single token does not touch."""
    moe = block.moe
    if moe is None or moe.num_experts <= moe.top_k:
        return 0
    idle = 0
    for linear in block.linears:
        if linear.copies == moe.num_experts and linear.copies > 1:
            per_expert = linear.parameters // linear.copies
            idle += per_expert * (moe.num_experts - moe.top_k)
    return idle


def active_parameters(arch: Architecture) -> int:
    """Parameters used per token: everything but the routed experts not chosen."""
    return arch.total_parameters - inactive_expert_parameters(arch)
