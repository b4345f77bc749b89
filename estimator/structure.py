"""The model as a list of nodes with output shapes at a sequence length (batch excluded).

Input -> Embedding -> positional embedding -> per block the attention, residual adds,
norms and FFN/MoE in the order the block applies them -> final norm -> Output.
Pre-norm blocks (decoders) normalise before each sub-layer, post-norm blocks
(BERT-style encoders) after each residual add. Every parameter of the
Architecture sits in exactly one node, so the node parameters sum to the total.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, NamedTuple

from estimator.architecture import VOCAB_HEADS, Architecture, Block, Tensor
from estimator.errors import WorkloadError

NodeKind = Literal[
    "Input",
    "Embedding",
    "PositionalEmbedding",
    "Norm",
    "Attention",
    "CrossAttention",
    "Add",
    "FFN",
    "MoE",
    "Projection",
    "Output",
]
MAX_SEQ_LEN = 1 << 31


class Node(NamedTuple):
    """One node; a named tuple because a deep model has hundreds of them per plan."""

    name: str
    kind: NodeKind
    shape: tuple[int, ...]
    parameters: int = 0


def _top_level(arch: Architecture) -> dict[str, int]:
    sums: dict[str, int] = {
        "embedding": 0,
        "position": 0,
        "head": 0,
        "norm": 0,
        "embedding_norm": 0,
        "other": 0,
    }
    for t in arch.top_tensors:
        key: str = t.role if t.role in sums else "other"
        if key == "norm" and "embed" in t.name:
            key = "embedding_norm"  # BERT's embeddings.LayerNorm, BLOOM's, BART's
        sums[key] += t.numel
    return sums


def _positional(arch: Architecture, seq_len: int, params: int) -> Node | None:
    first = arch.blocks[0].attention if arch.blocks else None
    heads = first.num_heads if first else 1
    if arch.position == "learned":
        return Node(
            "position_embeddings", "PositionalEmbedding", (seq_len, arch.hidden_size), params
        )
    if arch.position == "rope":
        head_dim = first.head_dim if first else arch.hidden_size
        return Node("rotary_embedding", "PositionalEmbedding", (seq_len, head_dim), params)
    if arch.position in ("alibi", "relative"):
        return Node("position_bias", "PositionalEmbedding", (heads, seq_len, seq_len), params)
    return None


# One block's nodes with names relative to ``layers.{i}.``: (suffix, kind, parameters).
_Pattern = tuple[tuple[str, NodeKind, int], ...]


def _block_pattern(block: Block, pre_norm: bool) -> _Pattern:
    cross = block.cross_attention is not None
    norm_params = block.parameters_of("norm")
    norm_count = 3 if cross else 2
    split = [norm_params // norm_count] * norm_count
    split[-1] += norm_params - sum(split)
    norms = iter(split)
    attention: tuple[str, NodeKind, int] = (
        "attention",
        "Attention",
        block.parameters_of("attention", "position"),
    )
    ffn_kind: NodeKind = "MoE" if block.moe is not None else "FFN"
    ffn = (
        ffn_kind.lower(),
        ffn_kind,
        block.parameters_of("mlp", "expert", "router", "other", "embedding", "head"),
    )
    sublayers = [attention]
    if cross:
        # Cross-attention projections are counted with the block's attention role.
        sublayers.append(("cross_attention", "CrossAttention", 0))
    sublayers.append(ffn)
    nodes: list[tuple[str, NodeKind, int]] = []
    for i, sub in enumerate(sublayers):
        norm: tuple[str, NodeKind, int] = (f"norm_{i}", "Norm", next(norms))
        add: tuple[str, NodeKind, int] = (f"add_{i}", "Add", 0)
        nodes.extend((norm, sub, add) if pre_norm else (sub, add, norm))
    return tuple(nodes)


def _block_patterns(arch: Architecture) -> list[tuple[str, _Pattern]]:
    """Per block its name prefix and node pattern; one pattern per distinct layer template."""
    patterns: dict[tuple[int, bool, bool, str], _Pattern] = {}
    rmsnorm = arch.norm == "rmsnorm"
    out: list[tuple[str, _Pattern]] = []
    for block in arch.blocks:
        stack = block.stack
        key = (id(block.role_parameters), block.cross_attention is None, block.moe is None, stack)
        pattern = patterns.get(key)
        if pattern is None:
            pre_norm = stack == "decoder" or rmsnorm
            pattern = patterns[key] = _block_pattern(block, pre_norm)
        out.append((f"layers.{block.index}.", pattern))
    return out


def _check(seq_len: int) -> None:
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or not 1 <= seq_len <= MAX_SEQ_LEN:
        raise WorkloadError(
            f"sequence length must be an integer in 1..{MAX_SEQ_LEN}, got {seq_len!r}"
        )


def _leading(arch: Architecture, seq_len: int, top: dict[str, int]) -> list[Node]:
    """Input, embeddings, positional embedding, embedding norm and projections."""
    nodes = [
        Node("input_ids", "Input", (seq_len,)),
        Node("embeddings", "Embedding", (seq_len, arch.hidden_size), top["embedding"]),
    ]
    positional = _positional(arch, seq_len, top["position"])
    if positional is not None:
        nodes.append(positional)
    elif top["position"]:
        nodes.append(
            Node(
                "position_embeddings",
                "PositionalEmbedding",
                (seq_len, arch.hidden_size),
                top["position"],
            )
        )
    if top["embedding_norm"]:
        nodes.append(
            Node("embedding_norm", "Norm", (seq_len, arch.hidden_size), top["embedding_norm"])
        )
    if top["other"]:
        nodes.append(Node("projections", "Projection", (seq_len, arch.hidden_size), top["other"]))
    return nodes


def _trailing(arch: Architecture, seq_len: int, top: dict[str, int]) -> list[Node]:
    """Final norm and output."""
    nodes = []
    if top["norm"]:
        nodes.append(Node("final_norm", "Norm", (seq_len, arch.hidden_size), top["norm"]))
    nodes.append(Node("output", "Output", _output_shape(arch, seq_len), top["head"]))
    return nodes


@dataclass(frozen=True, eq=False)
class Structure:
    """The node list as the model repeats it: leading nodes, one pattern per block, trailing nodes.

    A deep model has a thousand block nodes but one or two layer templates;
    keeping the blocks as (prefix, pattern) pairs costs a tuple per block
    where one object per node cost a fifth of plan()'s time. Iterating
    expands the nodes in execution order; two Structures are equal when
    their nodes are, however each was kept.
    """

    leading: tuple[Node, ...]
    blocks: tuple[tuple[str, _Pattern], ...] = ()
    block_shape: tuple[int, ...] = ()
    trailing: tuple[Node, ...] = ()

    def __iter__(self) -> Iterator[Node]:
        yield from self.leading
        shape = self.block_shape
        for prefix, pattern in self.blocks:
            for suffix, kind, n in pattern:
                yield Node(prefix + suffix, kind, shape, n)
        yield from self.trailing

    def __len__(self) -> int:
        blocks = sum(len(pattern) for _, pattern in self.blocks)
        return len(self.leading) + blocks + len(self.trailing)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Structure):
            return NotImplemented
        return tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))


def layout(arch: Architecture, seq_len: int) -> Structure:
    """The nodes at ``seq_len`` tokens (encoder and decoder both at seq_len), as a Structure."""
    _check(seq_len)
    top = _top_level(arch)
    return Structure(
        tuple(_leading(arch, seq_len, top)),
        tuple(_block_patterns(arch)),
        (seq_len, arch.hidden_size),
        tuple(_trailing(arch, seq_len, top)),
    )


def structure(arch: Architecture, seq_len: int) -> tuple[Node, ...]:
    """Nodes in execution order at ``seq_len`` tokens (encoder and decoder both at seq_len)."""
    return tuple(layout(arch, seq_len))


def _head_rows(arch: Architecture) -> int | None:
    """Width of the classifier (its last head tensor's first dimension)."""
    heads: list[Tensor] = [t for t in arch.top_tensors if t.role == "head" and len(t.shape) == 2]
    return heads[-1].shape[0] if heads else None


def _output_shape(arch: Architecture, seq_len: int) -> tuple[int, ...]:
    if arch.head in VOCAB_HEADS:
        return (seq_len, arch.vocab_size)
    if arch.head == "sequence-classification":
        return (_head_rows(arch) or 2,)
    return (seq_len, arch.hidden_size)
