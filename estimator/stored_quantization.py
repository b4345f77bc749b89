"""The weight format a checkpoint declares in config.json's ``quantization_config``.

A quantised checkpoint is served as it is stored: vLLM reads the method from
``quantization_config`` when ``--quantization`` is not given
(``vllm/config.py`` ``ModelConfig._verify_quantization``), and transformers'
``from_pretrained`` loads AWQ, GPTQ, FP8, bitsandbytes and MXFP4 checkpoints
through the matching quantizer (``transformers/quantizers/auto.py``). So a
plan whose serving format is ``auto`` takes it from here, with the group
size and the modules the checkpoint leaves unquantised
(``modules_to_not_convert``: gpt-oss keeps attention, router, embeddings and
head in bf16).

Methods the estimator has no byte count for (compressed-tensors, HQQ, EETQ,
quanto, torchao, 8-bit GPTQ/AWQ) are recognised and reported, and the plan
counts such weights 16-bit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from estimator.engines.request import EngineRequest, Quantization
from estimator.errors import WorkloadError
from estimator.memory.quantized import GROUP_SIZE
from estimator.workload import ServeWeights, Workload

MAX_NOT_CONVERTED: Final = 4096
MAX_PREFIXES: Final = 64
MAX_PREFIX_CHARS: Final = 128


@dataclass(frozen=True)
class StoredQuantization:
    """``quantization_config`` read as a serving format.

    ``serve_weights`` and ``engine`` are None when the method is not modelled.
    ``group_size`` 0 is one scale per output channel (GPTQ/AWQ ``group_size: -1``).
    ``unquantized`` are module-name prefixes inside a layer that stay 16-bit.
    ``bits`` is the config's ``bits`` where it is an integer.
    """

    method: str
    bits: int | None
    serve_weights: ServeWeights | None
    engine: Quantization | None
    group_size: int
    unquantized: tuple[str, ...]


def stored_quantization(config: Mapping[str, object]) -> StoredQuantization | None:
    """The checkpoint's declared quantization, or None for a 16-bit/fp32 checkpoint."""
    if not isinstance(config, Mapping):
        return None
    raw = config.get("quantization_config")
    if not isinstance(raw, Mapping):
        return None
    method = raw.get("quant_method")
    if not isinstance(method, str) or not method:
        method = "bitsandbytes" if _flag(raw, "load_in_4bit") or _flag(raw, "load_in_8bit") else ""
    if not method:
        return None
    declared = raw.get("bits")
    serve, engine = _formats(method.lower(), raw.get("bits", raw.get("w_bit", 4)), raw)
    return StoredQuantization(
        method=method,
        bits=declared if isinstance(declared, int) and not isinstance(declared, bool) else None,
        serve_weights=serve,
        engine=engine,
        group_size=_group_size(raw),
        unquantized=_unquantized(raw.get("modules_to_not_convert")),
    )


def _formats(
    method: str, bits: object, raw: Mapping[str, object]
) -> tuple[ServeWeights | None, Quantization | None]:
    if method == "awq" and bits == 4:
        return "awq", "awq"
    if method == "gptq" and bits == 4:
        return "gptq", "gptq"
    if method == "fp8":
        return "fp8", "fp8"
    if method == "mxfp4":
        return "mxfp4", "mxfp4"
    if method == "bitsandbytes":
        if _flag(raw, "load_in_4bit"):
            return "nf4", "bnb-4bit"
        if _flag(raw, "load_in_8bit"):
            return "int8", None
    return None, None


def _flag(raw: Mapping[str, object], key: str) -> bool:
    return raw.get(key) is True


def _group_size(raw: Mapping[str, object]) -> int:
    value = raw.get("group_size", raw.get("q_group_size", GROUP_SIZE))
    if isinstance(value, bool) or not isinstance(value, int):
        return GROUP_SIZE
    if value == -1:
        return 0
    return value if 1 <= value <= 1 << 16 else GROUP_SIZE


def _unquantized(value: object) -> tuple[str, ...]:
    """Layer-relative prefixes from patterns such as ``model.layers.*.self_attn``.

    Patterns outside the layers (``lm_head``, ``model.embed_tokens``) need no
    entry: embeddings and head are 16-bit in every format anyway. The list is
    upstream data: only its first ``MAX_NOT_CONVERTED`` entries are read, and
    at most ``MAX_PREFIXES`` prefixes of up to ``MAX_PREFIX_CHARS`` are kept
    (gpt-oss lists four patterns), so a hostile list costs linear time.
    """
    if not isinstance(value, list):
        return ()
    prefixes: dict[str, None] = {}
    for pattern in value[:MAX_NOT_CONVERTED]:
        if not isinstance(pattern, str) or "*." not in pattern:
            continue
        inner = pattern.rsplit("*.", 1)[1]
        if inner and len(inner) <= MAX_PREFIX_CHARS:
            prefixes[inner] = None
            if len(prefixes) == MAX_PREFIXES:
                break
    return tuple(prefixes)


def serving_workload(w: Workload, stored: StoredQuantization | None) -> Workload:
    """``w`` with an ``auto`` serving format replaced by the checkpoint's (else 16-bit), and
    an unset group size by the checkpoint's (else 128)."""
    if w.serve_weights != "auto" and w.quant_group_size is not None:
        return w
    changes: dict[str, object] = {}
    if w.quant_group_size is None:
        changes["quant_group_size"] = GROUP_SIZE if stored is None else stored.group_size
    if w.serve_weights == "auto":
        if stored is None or stored.serve_weights is None:
            changes["serve_weights"] = "bf16"
        else:
            changes["serve_weights"] = stored.serve_weights
            changes["serve_unquantized"] = stored.unquantized
    if w.awq_fused and changes.get("serve_weights", "awq") != "awq":
        raise WorkloadError(
            f"workload: awq_fused needs serve_weights 'awq'; the checkpoint stores "
            f"{changes['serve_weights']}"
        )
    return _with(w, changes)


def _with(w: Workload, changes: dict[str, object]) -> Workload:
    """``replace(w, **changes)`` for values already valid (a supported format, a group size
    ``_group_size`` bounded, module prefixes), without validating every field again: this
    runs in every plan()."""
    new = object.__new__(Workload)
    new.__dict__.update(w.__dict__)
    new.__dict__.update(changes)
    return new


def engine_request(request: EngineRequest, stored: StoredQuantization | None) -> EngineRequest:
    """``request`` with an ``auto`` quantization replaced as the engine would detect it."""
    if request.quantization != "auto":
        return request
    if stored is None or stored.engine is None:
        return replace(request, quantization="none")
    return replace(
        request,
        quantization=stored.engine,
        unquantized=stored.unquantized,
        group_size=stored.group_size if request.group_size is None else request.group_size,
    )
