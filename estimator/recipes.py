"""Training recipes: what a library's own defaults make of a fine-tuning job.

A recipe is data, one file per recipe in ``data/recipes/<name>.json``: the
``Workload`` fields the library sets when the user does not (numerics,
optimizer, loss implementation, checkpointing and offloading, LoRA and
QLoRA details), each with the file and version that sets it. Applying a
recipe gives a ``Workload`` built from those defaults; any field the caller
passes explicitly still wins, so ``--recipe torchtune --lora-rank 64`` is
torchtune with rank 64. No recipe is a code branch: the memory model only
reads the Workload fields.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, Final

from estimator.data_files import data_text
from estimator.errors import WorkloadError
from estimator.workload import RECIPE_NAMES, Workload

__all__ = ["RECIPE_NAMES", "Recipe", "apply_recipe", "recipe", "recipes"]

_FIELDS: Final = frozenset(f.name for f in fields(Workload))


@dataclass(frozen=True)
class Recipe:
    """One library's defaults.

    ``defaults``: Workload field -> value; ``sources``: the same fields ->
    where the library sets the value (repository, file, version and the
    setting as written there); ``by_method``: a method's own config where the
    library ships one per method (torchtune's full fine-tune beside its QLoRA
    one), over ``defaults``, its sources under ``METHOD.FIELD``; ``notes``:
    behaviour the Workload fields cannot carry (a paged optimizer), in words.
    """

    name: str
    library: str
    version: str
    summary: str
    defaults: tuple[tuple[str, object], ...]
    sources: tuple[tuple[str, str], ...]
    notes: tuple[str, ...]
    by_method: tuple[tuple[str, tuple[tuple[str, object], ...]], ...] = ()

    def source(self, field_name: str) -> str:
        """Where the library sets ``field_name``; KeyError for a field the recipe does not set."""
        return dict(self.sources)[field_name]

    def defaults_for(self, method: object) -> dict[str, object]:
        """``defaults`` with the method's own config over them."""
        out = dict(self.defaults)
        out.update(dict(dict(self.by_method).get(str(method), ())))
        return out

    def describe(self) -> str:
        """One line for a plan's assumptions."""
        return f"recipe {self.name} ({self.library} {self.version}): {self.summary}"


def _load(name: str) -> Recipe:
    raw: dict[str, Any] = json.loads(data_text(f"recipes/{name}.json"))
    defaults = dict(raw["defaults"])
    unknown = sorted(set(defaults) - _FIELDS)
    if unknown:
        raise WorkloadError(f"recipe {name}: not Workload fields: {', '.join(unknown)}")
    sources = dict(raw["sources"])
    uncited = sorted(set(defaults) - set(sources))
    if uncited:
        raise WorkloadError(f"recipe {name}: defaults without a source: {', '.join(uncited)}")
    if "lora_targets" in defaults:
        defaults["lora_targets"] = tuple(defaults["lora_targets"])
    by_method: dict[str, dict[str, object]] = raw.get("by_method", {})
    for method, values in by_method.items():
        wrong = sorted(set(values) - _FIELDS)
        missing = sorted(f"{method}.{f}" for f in values if f"{method}.{f}" not in sources)
        if wrong or missing:
            raise WorkloadError(f"recipe {name}: {method}: {', '.join(wrong + missing)}")
    return Recipe(
        name=raw["name"],
        library=raw["library"],
        version=raw["version"],
        summary=raw["summary"],
        defaults=tuple(defaults.items()),
        sources=tuple(sources.items()),
        notes=tuple(raw.get("notes", ())),
        by_method=tuple((m, tuple(v.items())) for m, v in by_method.items()),
    )


@cache
def recipe(name: str) -> Recipe:
    """The recipe called ``name``; ``WorkloadError`` for a name not in ``RECIPE_NAMES``."""
    if name not in RECIPE_NAMES:
        raise WorkloadError(
            f"workload: recipe must be one of {', '.join(RECIPE_NAMES)}, got {name!r}"
        )
    return _load(name)


def recipes() -> tuple[Recipe, ...]:
    """Every recipe in ``RECIPE_NAMES`` order, each file read once per process."""
    return tuple(recipe(n) for n in RECIPE_NAMES)


def apply_recipe(name: str | None, **explicit: object) -> Workload:
    """A Workload from the recipe's defaults, overridden by every ``explicit`` field.

    ``name`` None (or empty) is the plain Workload defaults with ``explicit``
    on top. ``pure_16bit`` given explicitly wins over the recipe's numerics.
    """
    unknown = sorted(set(explicit) - _FIELDS)
    if unknown:
        raise WorkloadError(f"workload: unknown fields {', '.join(unknown)}")
    values: dict[str, object] = {}
    if name:
        chosen = recipe(name)
        values.update(
            chosen.defaults_for(explicit.get("method", dict(chosen.defaults).get("method")))
        )
        values["recipe"] = name
    values.update(explicit)
    return Workload(**values)  # type: ignore[arg-type]
