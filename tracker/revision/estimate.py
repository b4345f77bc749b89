"""The estimate of one revision: ``estimator.plan`` over its config.json, as a typed Plan.

The estimator is pure; this adapter feeds it the revision's parsed config
and turns its refusals into a recorded change (a config the estimator cannot
read is a finding about that revision, not a reason to lose the revision).
The weight manifest goes along when every safetensors header was read, so
the plan can compare its parameter count with the checkpoint's. The plan
carries vLLM's start-up verdict at its defaults and the model's own context on
the workload's card (``serving.engine``) and on every other card of the table
(``serving.cards``), computed here once per revision so the model page never
plans per request; a config the engine model cannot take
keeps its plan without one.

Every published figure (page headline, badge, chart, history and advisory
estimate lines, Markdown twin) reads this stored plan, so they all share its
workload: ``estimator.STATED_WORKLOAD``, one sequence of 512 tokens on an A10G,
the one place to change it. Pages print it beside every figure.

The Plan stays typed from here to every publisher; it becomes JSON only when
the revision is recorded, and the parent's stored plan is read back once per
revision (``parent_plan``), unless the worker's walk recorded that parent itself and
holds its Plan.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final

import estimator
from estimator.errors import EstimateError, PlanJsonError
from estimator.families import ExactParameters
from storage.records import Change, Severity
from tracker.diff.revision import RevisionContent
from tracker.revision.exact_parameters import builder

SERVING_ENGINE: Final = estimator.EngineRequest(engine="vllm")
STATED_WORKLOAD: Final = estimator.STATED_WORKLOAD

log = logging.getLogger("neurarch.worker")


def estimate(
    content: RevisionContent,
    previous: RevisionContent | None = None,
    exact: ExactParameters | None = None,
) -> tuple[estimator.Plan | None, Change | None]:
    """(the Plan or None, a change saying why there is no plan, if that is news).

    ``exact`` builds the parameters of a type no family knows; by default the
    process's own meta-device builds, when the ``[exact]`` extra is installed.

    A refusal is news only where config.json changed since ``previous``: the
    same config was refused for the same reason at the previous revision,
    and saying it again on every commit that touched other files is noise.
    """
    config = content.value("config.json")
    if not isinstance(config, dict):
        return None, None
    manifest = _manifest(content)
    if exact is None:
        exact = builder()  # exact parameters of unknown types, with the [exact] extra
    try:
        try:
            result = estimator.plan(
                config,
                STATED_WORKLOAD,
                manifest=manifest,
                engine=SERVING_ENGINE,
                exact=exact,
                engine_on_every_card=True,
            )
        except EstimateError:  # the engine may refuse what the plan alone takes
            result = estimator.plan(config, STATED_WORKLOAD, manifest=manifest, exact=exact)
    except EstimateError as exc:
        if previous is not None and _same_config(previous, content):
            return None, None
        return None, Change(
            "estimate",
            "config.json",
            "estimate_failed",
            None,
            str(exc),
            Severity.LOW,
            f"no estimate for this revision: {exc}",
        )
    return result, None


def parent_plan(
    document: Mapping[str, Any] | None,
    parent: RevisionContent,
    exact: ExactParameters | None = None,
) -> estimator.Plan | None:
    """The recorded parent's stored Plan JSON (None: the estimator refused it) as a typed Plan.

    A stored document the estimator no longer reads (written under another
    schema_version, or damaged) is logged as ``stored_plan_unreadable`` and the
    parent is estimated again from its files, here, before the recording
    transaction, as for a parent that is not recorded; the stored row is left
    as it is.
    """
    if document is None:
        return None
    try:
        return estimator.Plan.from_json(document)
    except PlanJsonError as exc:
        revision = parent.snapshot.revision
        event = {"event": "stored_plan_unreadable", "repo": revision.repo_id, "sha": revision.sha}
        log.warning(json.dumps(event | {"error": str(exc)}))
        return estimate(parent, None, exact)[0]


def _same_config(previous: RevisionContent, content: RevisionContent) -> bool:
    key = content.snapshot.texts.get("config.json")
    return key is not None and previous.snapshot.texts.get("config.json") == key


def _manifest(content: RevisionContent) -> estimator.WeightManifest | None:
    """The weights' tensors, when every safetensors header of the revision was read."""
    manifest = content.snapshot.manifest or {}
    tensors, headers = manifest.get("tensors"), manifest.get("headers", {})
    if not isinstance(tensors, Mapping) or not tensors or not isinstance(headers, Mapping):
        return None
    if any(isinstance(h, Mapping) and h.get("error") for h in headers.values()):
        return None
    return estimator.WeightManifest.from_headers([tensors])


__all__ = ["STATED_WORKLOAD", "estimate", "parent_plan"]
