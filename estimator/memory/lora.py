"""LoRA targets: module names or role names, resolved against the model's own linears.

PEFT matches ``target_modules`` by module-name suffix, so ``q_proj,v_proj``
means something on Llama and nothing on GPT-NeoX (``query_key_value``).
Users think in roles, so role names are accepted and mapped per family
from the tensor roles each family module assigns:

* ``attention``: every attention linear (self and cross), output projection included;
* ``qkv``: the attention linears that read the layer input (fused or not), no output projection;
* ``mlp``: the feed-forward linears, routed experts included (never the router);
* ``all-linear``: every linear of the blocks (PEFT's ``all-linear`` skips the head).

A per-head name that matches nothing (``q_proj`` on a fused-QKV model) is
mapped to the linear playing that part (``query_key_value``), and a name
that still matches nothing is reported as a finding that lists the model's
own linear names; the estimate then adapts every linear (an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from estimator.architecture import Architecture
from estimator.memory.layers import linear_roles
from estimator.workload import ALL_LINEAR

ROLE_NAMES: Final = ("attention", "qkv", "mlp", ALL_LINEAR)
# Llama/BERT/T5 per-part names and the part they play, for models naming it otherwise.
_PARTS: Final[dict[str, str]] = {
    **dict.fromkeys(("q_proj", "k_proj", "v_proj", "query", "key", "value", "q", "k", "v"), "qkv"),
    **dict.fromkeys(("o_proj", "out_proj", "o"), "attn_out"),
    **dict.fromkeys(("gate_proj", "up_proj", "fc1", "wi", "c_fc", "w1", "w3"), "mlp_in"),
    **dict.fromkeys(("down_proj", "fc2", "wo", "w2"), "mlp_out"),
}


@dataclass(frozen=True)
class TargetResolution:
    """What the LoRA targets mean on this model.

    ``names``: linear names (relative to the block) that get an adapter, or
    None for every linear; ``modules``: their leaf names, for the plan;
    ``unmatched``: asked names that match no linear; ``available``: the
    model's own linear leaf names (for the finding).
    """

    names: frozenset[str] | None
    modules: tuple[str, ...]
    unmatched: tuple[str, ...]
    available: tuple[str, ...]
    mapped: tuple[tuple[str, str], ...]


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _matches(name: str, target: str) -> bool:
    return name == target or name.endswith("." + target)


def _parts(arch: Architecture) -> tuple[dict[str, set[str]], list[str]]:
    """Linear names by part (qkv, attn_out, attention, mlp_in, mlp_out, mlp), and all names."""
    roles = linear_roles(arch)
    parts: dict[str, set[str]] = {
        k: set() for k in ("qkv", "attn_out", "attention", "mlp_in", "mlp_out", "mlp")
    }
    names: list[str] = []
    seen: set[int] = set()
    hidden = arch.hidden_size
    for block, _ in arch.block_groups:
        if id(block.linears) in seen:
            continue
        seen.add(id(block.linears))
        tensors = roles.get(block.index, [])
        attention: list[str] = []
        mlp: list[tuple[str, int, int]] = []
        for lin in block.linears:
            names.append(lin.name)
            suffix = "." + lin.name
            role = next((r for n, r in tensors if n == lin.name or n.endswith(suffix)), "other")
            if role == "attention":
                attention.append(lin.name)
            elif role in ("mlp", "expert"):
                mlp.append((lin.name, lin.in_features, lin.out_features))
        by_name = {lin.name: lin for lin in block.linears}
        outs = [n for n in attention if by_name[n].out_features == hidden]
        # The output projection is the last attention linear writing the hidden size
        # (per attention: self and cross each have one).
        out_proj = {n for n in outs if _leaf(n) in ("o_proj", "out_proj", "o", "dense", "c_proj")}
        if not out_proj and outs:
            out_proj = {outs[-1]}
        parts["attention"].update(attention)
        parts["attn_out"].update(out_proj)
        parts["qkv"].update(n for n in attention if n not in out_proj)
        for name, _, _ in mlp:
            parts["mlp"].add(name)
        if mlp:
            parts["mlp_out"].add(mlp[-1][0])
            parts["mlp_in"].update(n for n, _, _ in mlp[:-1])
    return parts, names


_last: list[tuple[Architecture, tuple[str, ...], TargetResolution]] = []


def resolve_targets(arch: Architecture, targets: tuple[str, ...]) -> TargetResolution:
    """Resolve role and module names to this model's linears.

    A plan resolves the same targets once per training method: the last
    answer is kept for the same Architecture object.
    """
    last = _last[0] if _last else None  # one read: another thread may replace it
    if last is not None and last[0] is arch and last[1] == targets:
        return last[2]
    if ALL_LINEAR in targets:
        names = {lin.name for block, _ in arch.block_groups for lin in block.linears}
        available = tuple(sorted({_leaf(n) for n in names}))
        resolution = TargetResolution(None, available, (), available, ())
    else:
        resolution = _resolve(arch, targets)
    _last[:1] = [(arch, targets, resolution)]
    return resolution


def _resolve(arch: Architecture, targets: tuple[str, ...]) -> TargetResolution:
    parts, names = _parts(arch)
    available = tuple(sorted({_leaf(n) for n in names}))
    chosen: set[str] = set()
    unmatched: list[str] = []
    mapped: list[tuple[str, str]] = []
    for target in targets:
        if target in ("attention", "qkv", "mlp"):
            found = parts[target]
        else:
            found = {n for n in names if _matches(n, target)}
            part = _PARTS.get(target)
            if not found and part is not None:
                found = parts[part]
                if found:
                    mapped.append((target, ", ".join(sorted({_leaf(n) for n in found}))))
        if found:
            chosen.update(found)
        else:
            unmatched.append(target)
    if not chosen:
        return TargetResolution(None, available, tuple(unmatched), available, tuple(mapped))
    modules = tuple(sorted({_leaf(n) for n in chosen}))
    return TargetResolution(frozenset(chosen), modules, tuple(unmatched), available, tuple(mapped))


def describe_targets(resolution: TargetResolution) -> str:
    """The modules that get adapters, as the plan states them."""
    if resolution.names is None:
        text = "all linear layers but the head (" + ", ".join(resolution.modules) + ")"
    else:
        text = ", ".join(resolution.modules)
    if resolution.mapped:
        text += "; " + "; ".join(f"{asked} read as {got}" for asked, got in resolution.mapped)
    return text
