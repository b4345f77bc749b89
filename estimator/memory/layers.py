"""Where each linear of a block sits in the dataflow, and whether it trains.

Activation memory depends on which tensors autograd must keep, and a
linear keeps its input only when its weight receives a gradient (or an
adapter reads that input). So every linear is given a slot (attention
input, attention output, MLP input, ...) from the tensor roles the family
module assigned, and a trainability from the method and LoRA targets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal, NamedTuple

from estimator.architecture import Architecture, Block, Linear, TensorRole

Slot = Literal[
    "attn_in",
    "attn_inner",
    "attn_out",
    "cross_in",
    "cross_out",
    "mlp_in",
    "mlp_out",
    "expert_in",
    "expert_out",
    "router",
    "other",
]

_CROSS_MARKERS = ("cross", "encoder_attn", "encdecattention", "layer.1.")


class Placed(NamedTuple):
    """A linear with its slot and its trainability under the method."""

    linear: Linear
    slot: Slot
    trainable: bool
    adapted: bool

    @property
    def leaf(self) -> str:
        """The linear's last name part (``q_proj``), which LoRA target lists match."""
        return self.linear.name.rsplit(".", 1)[-1]


def linear_roles(arch: Architecture) -> dict[int, list[tuple[str, TensorRole]]]:
    """Roles of the linear weights of each block: block index -> [(tensor name, role)].

    Only the first block of each layer template is listed: blocks sharing a
    template share their linears tuple, and ``placements`` places each once.
    """
    firsts: dict[int, int] = {}
    for block, _ in arch.block_groups:
        firsts.setdefault(id(block.linears), block.index)
    roles: dict[int, list[tuple[str, TensorRole]]] = {}
    for index in sorted(firsts.values()):
        for tensor in arch.block_tensors(index):
            if tensor.name.endswith(".weight"):
                roles.setdefault(index, []).append((tensor.name[: -len(".weight")], tensor.role))
    return roles


def _role_finder(roles: list[tuple[str, TensorRole]]) -> Callable[[Linear], str]:
    """The role of a linear among one block's tensor roles.

    Tensor names carry the stack prefix ("model.layers.3."); linear names are
    relative. A linear named L belongs to the first tensor N (in order) with
    N == L or N ending in "." + L; both imply N's last dotted part is L's, so
    only the tensors sharing that leaf are compared.
    """
    by_leaf: dict[str, list[tuple[str, TensorRole]]] = {}
    for name, role in roles:
        by_leaf.setdefault(name.rpartition(".")[2], []).append((name, role))

    def role_of(linear: Linear) -> str:
        lname = linear.name
        suffix = "." + lname
        for name, role in by_leaf.get(lname.rpartition(".")[2], ()):
            if name == lname or name.endswith(suffix):
                return role
        return "other"

    return role_of


Slotted = tuple[tuple[Linear, Slot], ...]


def block_slots(arch: Architecture) -> dict[int, Slotted]:
    """Slots of every distinct layer's linears, keyed by ``id(block.linears)``.

    Slots depend on the dataflow only, not on the method, so they are
    derived once per plan and shared by the full, LoRA and QLoRA models.
    """
    roles = linear_roles(arch)
    out: dict[int, Slotted] = {}
    for block, _ in arch.block_groups:
        key = id(block.linears)
        if key not in out:
            out[key] = slot_block(block, arch.hidden_size, roles.get(block.index, []))
    return out


def place(slotted: Slotted, trainable: bool, targets: frozenset[str] | None) -> tuple[Placed, ...]:
    """The method's view of slotted linears; ``targets`` None adapts every linear (all-linear)."""
    new = tuple.__new__  # Placed's fields in order, without the keyword-parsing constructor
    if trainable:
        return tuple([new(Placed, (lin, slot, trainable, False)) for lin, slot in slotted])
    if targets is None:
        return tuple([new(Placed, (lin, slot, trainable, True)) for lin, slot in slotted])
    return tuple(
        [new(Placed, (lin, slot, trainable, _matches(lin.name, targets))) for lin, slot in slotted]
    )


def slot_block(block: Block, hidden: int, roles: list[tuple[str, TensorRole]]) -> Slotted:
    """Where each linear of one block sits in the dataflow."""
    role_of = _role_finder(roles)
    role_by_linear = [(lin, role_of(lin)) for lin in block.linears]
    attn = [lin for lin, role in role_by_linear if role == "attention"]
    cross = (
        []
        if block.cross_attention is None
        else [lin for lin in attn if any(m in lin.name.lower() for m in _CROSS_MARKERS)]
    )
    # Linears compare by value; with distinct names (every family's case) that is identity.
    if len({lin.name for lin in block.linears}) == len(block.linears):
        cross_ids = {id(lin) for lin in cross}
        self_attn = [lin for lin in attn if id(lin) not in cross_ids]
    else:
        cross_ids = None
        self_attn = [lin for lin in attn if lin not in cross]
    attn_out = _last_projecting_to(self_attn, hidden)
    cross_out = _last_projecting_to(cross, hidden)
    last_mlp = next((lin for lin, role in reversed(role_by_linear) if role == "mlp"), None)
    slotted: list[tuple[Linear, Slot]] = []
    for lin, role in role_by_linear:
        slot: Slot
        if role == "router":
            slot = "router"
        elif role == "expert":
            slot = "expert_in" if lin.in_features == hidden else "expert_out"
        elif role == "mlp":
            slot = (
                "mlp_in" if lin.in_features == hidden and lin.out_features != hidden else "mlp_out"
            )
            if lin.in_features == hidden and lin.out_features == hidden:
                slot = "mlp_out" if lin is last_mlp else "mlp_in"
        elif lin is attn_out:
            slot = "attn_out"
        elif lin is cross_out:
            slot = "cross_out"
        elif (id(lin) in cross_ids) if cross_ids is not None else (lin in cross):
            slot = "cross_in"
        elif role == "attention":
            slot = "attn_in" if lin.in_features == hidden else "attn_inner"
        else:
            slot = "other"
        slotted.append((lin, slot))
    return tuple(slotted)


def _last_projecting_to(linears: list[Linear], hidden: int) -> Linear | None:
    for lin in reversed(linears):
        if lin.out_features == hidden:
            return lin
    return None


def _matches(name: str, targets: Iterable[str]) -> bool:
    return any(name == t or name.endswith("." + t) for t in targets)
