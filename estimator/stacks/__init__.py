"""Stacks: the libraries and versions that run a job, and what their versions imply.

``parse_stack("torch==2.4 transformers==4.44")`` (or ``parse_requirements`` /
``parse_lock`` over a file's text, which the caller reads) gives a ``Stack``;
``stack_fields(stack, model_type)`` the Workload fields its versions set, from
``data/mechanisms.json``; ``recipe_for(stack)`` the training library's recipe
it implies; ``apply_stack`` builds the Workload: library defaults (the
recipe), then the versions' mechanisms, then every explicit field.
Serving engines read their version from ``Workload.stack`` (``engine_version``).
"""

from __future__ import annotations

from estimator.errors import StackError
from estimator.recipes import apply_recipe
from estimator.stacks.mechanisms import Mechanism, holding, known, recipe_for, stack_fields, table
from estimator.stacks.pins import (
    Stack,
    canonical_name,
    parse_lock,
    parse_requirements,
    parse_stack,
    release,
    stack_of,
)
from estimator.workload import Workload

__all__ = [
    "Mechanism",
    "Stack",
    "StackError",
    "apply_stack",
    "canonical_name",
    "engine_version",
    "holding",
    "known",
    "parse_lock",
    "parse_requirements",
    "parse_stack",
    "recipe_for",
    "release",
    "stack_fields",
    "stack_of",
    "table",
]

# The package each serving engine is installed as.
ENGINE_PACKAGES = {"vllm": "vllm", "sglang": "sglang", "tgi": "text-generation-inference"}


def apply_stack(
    stack: Stack, recipe: str | None, model_type: str | None = None, **explicit: object
) -> Workload:
    """The Workload of ``stack``: ``recipe`` (or the one the stack implies) gives the
    library's defaults, the stack's versions set their mechanisms over them, and every
    ``explicit`` field wins over both. ``Workload.stack`` keeps the known pins."""
    pins = known(stack)
    values: dict[str, object] = dict(stack_fields(pins, model_type))
    if pins:
        values["stack"] = pins.text()
    values.update(explicit)
    return apply_recipe(recipe or recipe_for(pins), **values)


def engine_version(stack_text: str, engine: str) -> str | None:
    """The pinned version of ``engine``'s package in a Workload's ``stack`` text."""
    package = ENGINE_PACKAGES.get(engine)
    if not stack_text or package is None:
        return None
    return parse_stack(stack_text).version_text(package)
