"""Plan JSON, both ways: one cattrs converter writes and reads the Plan and every part of it.

Each part (workload, memory estimate, cost, finding, checkpoint comparison,
engine verdicts, structure nodes) is a frozen dataclass or named tuple whose
JSON is its fields in declaration order; cattrs generates the function for
each from the type, so a field added to a part is in the JSON and read back
with no code here. What this module states are the few places where the
document is not shaped like the dataclass (``estimator/schema/plan.schema.json``):

- name/value pairs (``tuple[tuple[str, X], ...]``: the model, parameter,
  breakdown and engine-settings tables) are JSON objects;
- a card fit names its card and the memory it was estimated against, and its
  methods are an object by method name, each with its split (or null);
- a structure is its flat node list;
- the Plan nests the checkpoint comparison under ``parameters``, marks the
  selected method in ``memory``, writes ``costs`` only when there are some, and
  keeps the engine verdicts under ``serving``.

Reading is strict: numbers, strings and booleans are taken as stored (an int
in a float field stays an int, so a stored document is written back byte for
byte), a key no part has is refused, and every refusal is a ``PlanJsonError``
naming the path (``$.workload.batch``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast, get_args, get_origin

from cattrs import BaseValidationError, Converter, transform_error
from cattrs.errors import CattrsError
from cattrs.gen import make_dict_unstructure_fn, override

from estimator.cards import Card, all_cards
from estimator.cost import Cost
from estimator.errors import EstimateError, PlanJsonError
from estimator.fit import CardFit, MethodFit
from estimator.manifest import ManifestComparison
from estimator.memory import MemoryEstimate
from estimator.plan import SCHEMA_VERSION, Plan
from estimator.structure import Node, NodeKind, Structure
from estimator.verifier import Finding
from estimator.workload import Workload

if TYPE_CHECKING:
    from estimator.engine_cards import CardEngineVerdict
    from estimator.engines.verdict import EngineVerdict

T = TypeVar("T")
JsonObject = dict[str, Any]

_DERIVED_PARAMETERS: Final = ("checkpoint_scalars", "checkpoint")
_SCALARS: Final = (int, str)
_NODE_KEYS: Final = set(Node._fields)
_INT: Final = {int}
_NODE_KINDS: Final = frozenset(get_args(NodeKind))


def to_json(plan: Plan) -> JsonObject:
    """The Plan as the JSON document ``plan --json`` prints and storage keeps."""
    document: JsonObject = _converter().unstructure(plan, Plan)
    return document


def from_json(document: Mapping[str, Any]) -> Plan:
    """The Plan that ``to_json`` wrote (``from_json(to_json(p)) == p``).

    Per-method memory assumptions are not in the JSON (the plan's own
    ``assumptions`` carry the selected method's); they come back empty and
    are not compared. A document that is not a Plan raises PlanJsonError.
    """
    return part_from_json(document, Plan)


def part_to_json(value: object) -> Any:
    """One part of a Plan (a Workload, an EngineVerdict, a Structure...) as the Plan writes it."""
    return _converter().unstructure(value)


def part_from_json(document: Any, kind: type[T]) -> T:
    """The part of type ``kind`` that ``part_to_json`` wrote; PlanJsonError when it is not one."""
    try:
        return _converter().structure(document, kind)
    except BaseValidationError as exc:
        raise PlanJsonError(f"not a {kind.__name__}: " + "; ".join(transform_error(exc))) from exc
    except (KeyError, TypeError, ValueError, EstimateError, CattrsError) as exc:
        raise PlanJsonError(f"not a {kind.__name__}: {type(exc).__name__}: {exc}") from exc


@cache
def _converter() -> Converter:
    converter = Converter(forbid_extra_keys=True, detailed_validation=False)
    for scalar in (int, float, str, bool):
        converter.register_structure_hook(scalar, _as_stored(scalar))
    converter.register_structure_hook_factory(_is_scalars, _scalars_structure)
    converter.register_unstructure_hook_factory(_is_pairs, _pairs_unstructure)
    converter.register_structure_hook_factory(_is_pairs, _pairs_structure)
    for part in (Workload, Cost, ManifestComparison, Finding):
        converter.register_unstructure_hook(part, make_dict_unstructure_fn(part, converter))
    converter.register_unstructure_hook(
        MemoryEstimate,
        make_dict_unstructure_fn(MemoryEstimate, converter, assumptions=override(omit=True)),
    )
    _register_card_fit(converter)
    _register_structure(converter)
    _register_plan(converter)
    return converter


@cache
def _engine_parts() -> tuple[type[EngineVerdict], type[CardEngineVerdict]]:
    """The serving section's classes, imported and registered on first use: a plan
    without an engine (``plan CONFIG``) does not load the engines' modules."""
    from estimator.engine_cards import CardEngineVerdict
    from estimator.engines.verdict import EngineVerdict

    converter = _converter()
    for part in (EngineVerdict, CardEngineVerdict):
        converter.register_unstructure_hook(part, make_dict_unstructure_fn(part, converter))
    return EngineVerdict, CardEngineVerdict


def _as_stored(kind: type[T]) -> Callable[[object, object], T]:
    """A JSON scalar taken as stored: checked, never converted (``1`` is no ``"1"``)."""
    accepted: tuple[type, ...] = (int, float) if kind is float else (kind,)

    def structure(value: object, _: object) -> T:
        if isinstance(value, bool) is not (kind is bool) or not isinstance(value, accepted):
            raise TypeError(f"expected {kind.__name__}, got {value!r}")
        return cast(T, value)

    return structure


def _is_scalars(t: object) -> bool:
    """``tuple[int, ...]``, ``tuple[str, ...]``: read in one pass (a structure has a shape per node)."""
    args = get_args(t)
    return get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis and args[0] in _SCALARS


def _scalars_structure(t: object) -> Callable[[object, object], tuple[Any, ...]]:
    kind = get_args(t)[0]

    def structure(value: object, _: object) -> tuple[Any, ...]:
        if not isinstance(value, list) or not all(type(v) is kind for v in value):
            raise TypeError(f"expected a list of {kind.__name__}, got {value!r}")
        return tuple(value)

    return structure


def _is_pairs(t: object) -> bool:
    """``tuple[tuple[str, X], ...]``: a table of named values, a JSON object."""
    args = get_args(t)
    return (
        get_origin(t) is tuple
        and len(args) == 2
        and args[1] is Ellipsis
        and get_origin(args[0]) is tuple
        and get_args(args[0])[0] is str
    )


def _pairs_unstructure(t: object, converter: Converter) -> Callable[[Any], JsonObject]:
    value_type = get_args(get_args(t)[0])[1]
    return lambda pairs: {k: converter.unstructure(v, value_type) for k, v in pairs}


def _pairs_structure(
    t: object, converter: Converter
) -> Callable[[object, object], tuple[Any, ...]]:
    value_type = get_args(get_args(t)[0])[1]

    def structure(value: object, _: object) -> tuple[Any, ...]:
        if not isinstance(value, Mapping):
            raise TypeError(f"expected an object, got {type(value).__name__}")
        return tuple((k, converter.structure(v, value_type)) for k, v in value.items())

    return structure


def _register_card_fit(converter: Converter) -> None:
    def method_json(m: MethodFit) -> JsonObject:
        split = (
            None
            if m.split_cards is None
            else {"cards": m.split_cards, "per_card_peak_bytes": m.split_per_card_bytes}
        )
        return {"largest_batch": m.largest_batch, "fits": m.fits, "split": split}

    def unstructure(fit: CardFit) -> JsonObject:
        return {
            "card": fit.card.name,
            "usable_bytes": fit.card.usable_bytes,
            "methods": {m.method: method_json(m) for m in fit.methods},
            "engine_reserved_bytes": fit.engine_reserved_bytes,
            "precision_note": fit.precision_note,
        }

    s = _reader(converter)

    def method_of(name: str, m: Mapping[str, Any]) -> MethodFit:
        split = s(m["split"], dict[str, int] | None)
        cards, per_card = (
            (None, None) if split is None else (split["cards"], split["per_card_peak_bytes"])
        )
        return MethodFit(name, s(m["largest_batch"], int), s(m["fits"], bool), cards, per_card)

    def structure(c: Mapping[str, Any], _: object) -> CardFit:
        return CardFit(
            card=_card_of(s(c["card"], str), s(c["usable_bytes"], int)),
            methods=tuple(method_of(n, m) for n, m in s(c["methods"], dict[str, Any]).items()),
            engine_reserved_bytes=s(c["engine_reserved_bytes"], int),
            precision_note=s(c["precision_note"], str | None),
        )

    converter.register_unstructure_hook(CardFit, unstructure)
    converter.register_structure_hook(CardFit, structure)


def _reader(converter: Converter) -> Callable[[Any, Any], Any]:
    """``converter.structure`` for a type written as an expression (``str | None``)."""
    return converter.structure


def _card_of(name: str, usable_bytes: int) -> Card:
    """The card table's entry, keeping the memory the plan was estimated against.

    A plan stored before the table changed (or naming a card since removed)
    still reads back with the limit it used; unknown specs are zero.
    """
    known = next((c for c in all_cards() if c.name == name), None)
    if known is None:
        return Card(name, (), usable_bytes / 2**30, usable_bytes, False, 0.0, 0.0, 0, "", None)
    if known.usable_bytes != usable_bytes:
        return replace(known, usable_bytes=usable_bytes)
    return known


def _register_structure(converter: Converter) -> None:
    """A Structure is its flat node list, written from the block patterns and read back
    with every node kept as it is. A deep model has hundreds of nodes per plan, so this one
    part is laid out here rather than generated: a node is a plain object in Node's fields."""

    def unstructure(s: Structure) -> list[JsonObject]:
        shape = list(s.block_shape)
        return (
            [_node_json(n) for n in s.leading]
            + [
                {"name": prefix + suffix, "kind": kind, "shape": shape.copy(), "parameters": n}
                for prefix, pattern in s.blocks
                for suffix, kind, n in pattern
            ]
            + [_node_json(n) for n in s.trailing]
        )

    def structure(nodes: object, _: object) -> Structure:
        if not isinstance(nodes, list):
            raise TypeError(f"structure: expected a list of nodes, got {type(nodes).__name__}")
        return Structure(tuple(_node_of(i, n) for i, n in enumerate(nodes)))

    converter.register_unstructure_hook(Structure, unstructure)
    converter.register_structure_hook(Structure, structure)


def _node_json(node: Node) -> JsonObject:
    return node._asdict() | {"shape": list(node.shape)}


def _node_of(index: int, n: object) -> Node:
    if (
        not isinstance(n, dict)
        or n.keys() != _NODE_KEYS
        or type(n["name"]) is not str
        or n["kind"] not in _NODE_KINDS
        or not isinstance(n["shape"], list)
        or not set(map(type, n["shape"])) <= _INT
        or type(n["parameters"]) is not int
    ):
        raise TypeError(f"structure[{index}]: not a node ({', '.join(Node._fields)}): {n!r}")
    return Node(n["name"], n["kind"], tuple(n["shape"]), n["parameters"])


def _register_plan(converter: Converter) -> None:
    def unstructure(p: Plan) -> JsonObject:
        def u(value: Any, kind: Any) -> Any:
            return converter.unstructure(value, kind)

        parameters = u(p.parameters, tuple[tuple[str, Any], ...])
        checkpoint = p.checkpoint
        parameters["checkpoint_scalars"] = (
            None if checkpoint is None else checkpoint.checkpoint_scalars
        )
        parameters["checkpoint"] = u(checkpoint, ManifestComparison | None)
        memory = u(p.memory, tuple[tuple[str, MemoryEstimate], ...])
        memory["selected"] = p.workload.method
        document: JsonObject = {
            "schema_version": p.schema_version,
            "model": u(p.model, tuple[tuple[str, Any], ...]),
            "parameters": parameters,
            "structure": u(p.structure, Structure),
            "workload": u(p.workload, Workload),
            "memory": memory,
            "cards": u(p.cards, tuple[CardFit, ...]),
            "cost": u(p.cost, Cost),
            **({"costs": u(p.costs, tuple[Cost, ...])} if p.costs else {}),
            "findings": u(p.findings, tuple[Finding, ...]),
            "assumptions": list(p.assumptions),
        }
        if p.engine is not None:
            verdict, card_verdict = _engine_parts()
            serving = {"engine": u(p.engine, verdict)}
            if p.engine_cards:
                serving["cards"] = u(p.engine_cards, tuple[card_verdict, ...])  # type: ignore[valid-type]
            document["serving"] = serving
        return document

    def structure(d: Any, _: object) -> Plan:
        if not isinstance(d, Mapping):
            raise TypeError(f"a Plan is a JSON object, got {type(d).__name__}")
        if d["schema_version"] != SCHEMA_VERSION:
            raise ValueError(f"schema_version {d['schema_version']!r}, expected {SCHEMA_VERSION!r}")
        s = _reader(converter)
        parameters = s(d["parameters"], dict[str, Any])
        memory = {k: v for k, v in s(d["memory"], dict[str, Any]).items() if k != "selected"}
        serving = s(d.get("serving", {}), dict[str, Any])
        engine, engine_cards = None, ()
        if serving.get("engine") is not None:
            verdict, card_verdict = _engine_parts()
            engine = s(serving["engine"], verdict)
            engine_cards = s(serving.get("cards", []), tuple[card_verdict, ...])  # type: ignore[valid-type]
        return Plan(
            schema_version=d["schema_version"],
            model=s(d["model"], tuple[tuple[str, Any], ...]),
            parameters=tuple((k, v) for k, v in parameters.items() if k not in _DERIVED_PARAMETERS),
            checkpoint=s(parameters["checkpoint"], ManifestComparison | None),
            structure=s(d["structure"], Structure),
            workload=s(d["workload"], Workload),
            memory=s(memory, tuple[tuple[str, MemoryEstimate], ...]),
            cards=s(d["cards"], tuple[CardFit, ...]),
            cost=s(d["cost"], Cost),
            costs=s(d.get("costs", []), tuple[Cost, ...]),
            findings=s(d["findings"], tuple[Finding, ...]),
            assumptions=s(d["assumptions"], tuple[str, ...]),
            engine=engine,
            engine_cards=engine_cards,
        )

    converter.register_unstructure_hook(Plan, unstructure)
    converter.register_structure_hook(Plan, structure)


__all__ = ["from_json", "part_from_json", "part_to_json", "to_json"]
