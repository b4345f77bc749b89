"""Autocast over a 4-bit LayerNorm model widens the hidden stream to fp32: pinned on a tiny model.

The model: hidden 64, two layers, vocabulary 256, checkpointed, batch 2 x 16
tokens. A checkpointed step keeps each layer's input plus the final norm's
input, so the stream's width shows directly in the end-of-forward activations.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from estimator import Workload
from estimator.memory import method_models
from estimator.memory.numerics import training_numerics
from tests.estimator.archbuilder import llama_like

RMS = llama_like(hidden=64, layers=2, heads=4, kv_heads=2, intermediate=128, vocab=256)
LAYERNORM = replace(RMS, norm="layernorm")
TOKENS = 2 * 16


def end_of_forward(arch: object, method: str, **workload: object) -> int:
    w = Workload(method=method, batch=2, seq_len=16, grad_checkpointing=True, **workload)  # type: ignore[arg-type]
    model = method_models(arch, w, has_bf16=True)[method]  # type: ignore[arg-type]
    return next(p for p in model.phases if p.name == "end of forward").breakdown(2)["activations"]


@pytest.mark.parametrize(
    ("method", "norm", "pure", "stream"),
    [
        ("qlora", "layernorm", False, 4),  # LayerNorm answers fp32, Linear4bit keeps it
        ("qlora", "layernorm", True, 2),  # no autocast: the LayerNorm stays 16-bit
        ("qlora", "rmsnorm", False, 2),  # RMSNorm casts back to its input's dtype
        ("lora", "layernorm", False, 2),  # a plain linear under autocast answers 16-bit
    ],
)
def test_stream_width(method: str, norm: str, pure: bool, stream: int) -> None:
    w = Workload(method=method, pure_16bit=pure, kbit_prepare=False)  # type: ignore[arg-type]
    n = training_numerics(w, method, has_bf16=True, norm=norm)
    assert (n.residual, n.norm_out) == (stream, stream)


def test_the_fp32_stream_doubles_every_kept_layer_input() -> None:
    autocast = end_of_forward(LAYERNORM, "qlora", kbit_prepare=False)
    pure = end_of_forward(LAYERNORM, "qlora", kbit_prepare=False, pure_16bit=True)
    # two layer inputs and the final norm's input, 2 B more per element each
    assert autocast - pure == (2 + 1) * 2 * 64 * TOKENS
    # the same job on the RMSNorm model keeps the 16-bit stream; its final norm keeps
    # an fp32 upcast of the input anyway (4 B per element and 4 B of rstd, against the
    # LayerNorm's fp32 input and 8 B of mean and rstd)
    rms = end_of_forward(RMS, "qlora", kbit_prepare=False)
    assert autocast - rms == (2 * 2 * 64 + 4) * TOKENS
