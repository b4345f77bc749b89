"""Which behaviour a stack's versions imply: ``data/mechanisms.json`` read as ranges.

Each mechanism names one Workload field, the library and the version range
``[from, below)`` in which the library behaves that way, and the line of its
source that says so. No version is a code branch: adding a release's
behaviour is one entry in the data file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from estimator.data_files import data_text
from estimator.errors import StackError
from estimator.stacks.pins import Stack, Version, at_least, release


@dataclass(frozen=True)
class Mechanism:
    """A library's behaviour in releases ``[low, below)``: the Workload field it sets, cited."""

    id: str
    library: str
    low: Version | None
    below: Version | None
    field: str
    value: object
    source: str
    model_types: tuple[str, ...] = ()
    bounded: str = ""

    def holds(self, version: Version, model_type: str | None) -> bool:
        """True when ``version`` is in range and ``model_type`` among ``model_types`` (if any)."""
        if self.model_types and model_type not in self.model_types:
            return False
        if self.low is not None and not at_least(version, self.low):
            return False
        return self.below is None or not at_least(version, self.below)

    def range_text(self) -> str:
        """The range as a requirement (``transformers>=4.36,<4.45``), for messages."""
        low = "" if self.low is None else ">=" + ".".join(map(str, self.low))
        high = "" if self.below is None else "<" + ".".join(map(str, self.below))
        return f"{self.library}{low}{',' if low and high else ''}{high}"


@dataclass(frozen=True)
class Table:
    """``data/mechanisms.json``: mechanisms, which library picks a recipe, which ones matter."""

    mechanisms: tuple[Mechanism, ...]
    recipe_order: tuple[str, ...]
    recipe_of: tuple[tuple[str, str], ...]
    libraries: tuple[str, ...]


def _bound(raw: object) -> Version | None:
    return None if raw is None else release(str(raw))


@cache
def table() -> Table:
    """The table, read once per process; StackError for a bound that is not a version."""
    raw: dict[str, Any] = json.loads(data_text("mechanisms.json"))
    mechanisms = tuple(
        Mechanism(
            id=m["id"],
            library=m["library"],
            low=_bound(m["from"]),
            below=_bound(m["below"]),
            field=m["field"],
            value=m["value"],
            source=m["source"],
            model_types=tuple(m.get("model_types", ())),
            bounded=m.get("bounded", ""),
        )
        for m in raw["mechanisms"]
    )
    recipes = raw["recipes"]
    return Table(
        mechanisms=mechanisms,
        recipe_order=tuple(recipes["order"]),
        recipe_of=tuple(recipes["recipe_of"].items()),
        libraries=tuple(raw["libraries"]),
    )


def holding(stack: Stack, model_type: str | None = None) -> tuple[Mechanism, ...]:
    """The mechanisms whose library the stack pins at a version in their range."""
    out = []
    for m in table().mechanisms:
        version = stack.version(m.library)
        if version is not None and m.holds(version, model_type):
            out.append(m)
    return tuple(out)


def stack_fields(stack: Stack, model_type: str | None = None) -> dict[str, object]:
    """Workload field -> value for every mechanism that holds.

    A training library's mechanism wins over another library's on the same field:
    the library passes the setting to the one below it (torchtune wraps layers in
    torch's non-reentrant checkpoint, whatever transformers' default is). Two
    holding mechanisms of the same rank that disagree are a table error.
    """
    training = set(table().recipe_order)
    out: dict[str, object] = {}
    by: dict[str, Mechanism] = {}
    for m in holding(stack, model_type):
        prior = by.get(m.field)
        if prior is not None and out[m.field] != m.value:
            rank, prior_rank = m.library in training, prior.library in training
            if rank == prior_rank:
                raise StackError(f"stack: mechanisms {prior.id} and {m.id} disagree on {m.field}")
            if prior_rank:
                continue
        out[m.field], by[m.field] = m.value, m
    return out


def recipe_for(stack: Stack) -> str | None:
    """The recipe of the first training library of the table's order the stack names."""
    recipe_of = dict(table().recipe_of)
    for library in table().recipe_order:
        if stack.version(library) is not None:
            return recipe_of[library]
    return None


def known(stack: Stack) -> Stack:
    """The stack's pins of libraries the estimator reads (an environment holds hundreds)."""
    return stack.only(table().libraries)
