"""Exact parameters for model types the estimator has no family for: transformers builds
the class ``architectures[0]`` names on torch's meta device (shapes only, no memory, no
weights) and its ``named_parameters()`` become the estimate's tensor list.

Needs the optional ``[exact]`` extra (torch + transformers); without it ``builder()``
returns None and the plan keeps the generic estimate, whose ``unsupported-model-type``
finding says how to get this one. torch is imported on the first unknown type only, so
plans of known families never pay for it. One build per config: results (the parameter
list and the module tree) are kept in process, keyed by the SHA-256 of the canonical
config JSON, so a daemon walking many revisions of one repo builds once; the cache
holds the ``MAX_CACHED`` latest builds, so a worker's memory does not grow with the
number of repos it meets. ``tracker.revision.stored_builds`` keeps them in the blob store
for every process of a deployment.

The config is upstream content: transformers builds every module it asks for, so a
config asking for tens of thousands of layers would cost the calling process tens of
seconds and gigabytes. Builds
therefore run in a worker process of ``tracker.untrusted.isolation`` under ``BUILD_LIMITS``,
and a build stopped by a limit is a refusal like any other (kept, so the same config
is not tried again): the plan falls back to the generic estimate.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import importlib.util
import io
import json
import logging
import re
import threading
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from estimator.families.exact import ExactParameters, ParameterList
from tracker.untrusted.isolation import (
    GiB,
    IsolatedPool,
    LimitExceeded,
    Limits,
    RemoteError,
    process_pool,
)

log = logging.getLogger("neurarch.exact")

INSTALL_HINT = "pip install 'neurarch-trace[exact]'"

# Head -> the Auto class transformers would pick when architectures[0] is not its own class.
_AUTO_BY_SUFFIX = (
    ("ForConditionalGeneration", "AutoModelForImageTextToText"),
    ("ForCausalLM", "AutoModelForCausalLM"),
    ("LMHeadModel", "AutoModelForCausalLM"),
    ("ForMaskedLM", "AutoModelForMaskedLM"),
    ("ForSequenceClassification", "AutoModelForSequenceClassification"),
)


@dataclass(frozen=True)
class MetaBuild:
    """What one meta-device build produced: parameters in transformers' order and the
    module tree (qualified name, class name), or why transformers could not build it."""

    parameters: ParameterList
    modules: tuple[tuple[str, str], ...]
    refused: str | None = None


MAX_CACHED = 256
BUILD_WORKER_IDLE_SECONDS = 60.0
BUILD_LIMITS = Limits(memory_bytes=4 * GiB, cpu_seconds=60, wall_seconds=120.0)
"""Every corpus config builds in under 1 s of CPU (3 s for the first, with transformers'
lazy imports) within 0.8 GiB of address space; these bounds leave real models far
inside them and stop a config that asks for hundreds of thousands of modules."""
_cache: dict[str, MetaBuild] = {}
_lock = threading.Lock()


@functools.cache
def available() -> bool:
    """torch and transformers are importable (checked without importing them, once per
    process: the path search costs half a millisecond and the answer does not change)."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


def config_hash(config: Mapping[str, object]) -> str:
    """The sha256 of the config's canonical JSON: the key a meta-device build is stored under."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


_INT_FOR_FLOAT = re.compile(r"Field '(\w+)' expected float, got int")
_TOKEN_ID_LIST = re.compile(r"Field '(\w+_token_id)' expected int, got list")
_UNKNOWN_SUBCONFIG = re.compile(r"Unrecognized model type for subconfig: ([\w.-]+)\.")
MAX_REPAIRS = 8


def _repaired(config: dict[str, Any], error: str) -> dict[str, Any] | None:
    """``config`` with the one field transformers 5's strict validation refused put the way
    older transformers read it, or None when the refusal is not one of these:

    - an int where a float is declared (grounding-dino's ``class_cost: 1``) becomes a float;
    - a list of token ids (whisper-base's 2022 ``decoder_start_token_id``) is dropped: a
      token id selects no parameter, so the build's shapes do not depend on it;
    - a sub-config naming a pre-release type and nothing else (grounding-dino-tiny's
      ``{"model_type": "grounding-dino-text-prenet"}``) is dropped, so the class default
      applies, as the repo's later revisions say with ``text_config: null``.
    """
    if (m := _INT_FOR_FLOAT.search(error)) and isinstance(config.get(m[1]), int):
        return {**config, m[1]: float(config[m[1]])}
    if (m := _TOKEN_ID_LIST.search(error)) and isinstance(config.get(m[1]), list):
        return {k: v for k, v in config.items() if k != m[1]}
    if m := _UNKNOWN_SUBCONFIG.search(error):
        bare = [k for k, v in config.items() if v == {"model_type": m[1]}]
        if bare:
            return {k: v for k, v in config.items() if k not in bare}
    return None


def _parsed(config_cls: Any, config: dict[str, Any]) -> Any:
    """``config_cls.from_dict``, retried with a published field that transformers' strict
    validation refuses repaired as older transformers read it."""
    for _ in range(MAX_REPAIRS):
        try:
            return config_cls.from_dict(config)
        except Exception as exc:
            repaired = _repaired(config, str(exc))
            if repaired is None:
                raise
            config = repaired
    return config_cls.from_dict(config)


def _model(transformers: Any, config_cls: Any, cfg: Any, arch: str) -> Any:
    """The class ``arch`` names when it is transformers' own for this config, else the Auto
    class for its head, then the image-text and base Auto classes (LLaVA's remote-code
    ``LlavaLlamaForCausalLM`` is built as transformers' LLaVA)."""
    cls = getattr(transformers, arch, None) if arch else None
    if cls is not None and getattr(cls, "config_class", None) is config_cls:
        return cls(cfg)
    autos = [a for s, a in _AUTO_BY_SUFFIX if arch.endswith(s)]
    autos += ["AutoModelForImageTextToText", "AutoModel"]
    error: Exception | None = None
    for auto in dict.fromkeys(autos):
        try:
            return getattr(transformers, auto).from_config(cfg)
        except ValueError as exc:  # "Unrecognized configuration class ... for this kind"
            error = error or exc
    assert error is not None
    raise error


def _build(config: Mapping[str, object]) -> MetaBuild:
    import torch
    import transformers
    from transformers import CONFIG_MAPPING

    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        return MetaBuild((), (), f"transformers has no config class for {model_type!r}")
    config_cls = CONFIG_MAPPING[model_type]
    names = config.get("architectures")
    arch = names[0] if isinstance(names, list) and names and isinstance(names[0], str) else ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # transformers' config classes rewrite nested sub-configs in place (Gemma 4's
            # vision rope_type "default" becomes "axial"); the caller's config is the file's.
            cfg = _parsed(config_cls, copy.deepcopy(dict(config)))
            with torch.device("meta"), contextlib.redirect_stdout(io.StringIO()):
                model = _model(transformers, config_cls, cfg, arch)
    except Exception as exc:  # transformers raises anything from a config it cannot build
        return MetaBuild((), (), f"{type(exc).__name__}: {exc}"[:300])
    params = tuple((n, tuple(int(d) for d in p.shape)) for n, p in model.named_parameters())
    modules = tuple((n, type(m).__name__) for n, m in model.named_modules())
    return MetaBuild(params, modules)


def build_pool() -> IsolatedPool:
    """This process's worker for meta-device builds: one at a time, torch imported first.

    Builds come in bursts (a backfill meets a repo's configs, then reads them from the
    blob store): the worker stays for ``BUILD_WORKER_IDLE_SECONDS`` after a build, then
    leaves rather than keep torch's ~300 MB resident in every instance.
    """
    return process_pool(
        "meta-build",
        lambda: IsolatedPool(
            BUILD_LIMITS,
            max_workers=1,
            preload=("torch", "transformers", __name__),
            idle_seconds=BUILD_WORKER_IDLE_SECONDS,
        ),
    )


def _build_isolated(config: Mapping[str, object]) -> MetaBuild:
    """``_build`` in the build worker; a limit it hits is the build's refusal.

    A worker that cannot be started (``WorkerUnavailable``) is a fault of this
    machine, not of the config, so it propagates and nothing is kept.
    """
    try:
        return build_pool().call(_build, dict(config))  # pickled: the worker gets a copy
    except LimitExceeded as exc:
        log.warning(
            "meta-device build of a %r config stopped: %s", config.get("model_type"), exc.reason
        )
        return MetaBuild((), (), f"meta-device build stopped: {exc.reason}")
    except RemoteError as exc:
        return MetaBuild((), (), f"{exc.kind}: {exc.message}"[:300])


def meta_build(config: Mapping[str, object]) -> MetaBuild:
    """The (cached) meta-device build of ``config``, made under ``BUILD_LIMITS``."""
    key = config_hash(config)
    hit = cached(key)
    if hit is not None:
        return hit
    built = _build_isolated(config)
    _keep(key, built)
    return built


def cached(key: str) -> MetaBuild | None:
    """This process's build of the config whose ``config_hash`` is ``key``, if it has one."""
    with _lock:
        return _cache.get(key)


def remember(key: str, built: MetaBuild) -> None:
    """Keep a build read from elsewhere (the blob store) as if this process had made it."""
    _keep(key, built)


def _keep(key: str, built: MetaBuild) -> None:
    with _lock:
        _cache[key] = built
        while len(_cache) > MAX_CACHED:
            del _cache[next(iter(_cache))]  # the oldest build first


def meta_parameters(config: Mapping[str, object]) -> ParameterList | None:
    """The ExactParameters callable describe() takes: None where transformers refuses."""
    built = meta_build(config)
    return built.parameters or None


def builder() -> ExactParameters | None:
    """``meta_parameters`` when the ``[exact]`` extra is installed, else None."""
    return meta_parameters if available() else None


__all__ = [
    "BUILD_LIMITS",
    "INSTALL_HINT",
    "MetaBuild",
    "available",
    "build_pool",
    "builder",
    "cached",
    "config_hash",
    "meta_build",
    "meta_parameters",
    "remember",
]
