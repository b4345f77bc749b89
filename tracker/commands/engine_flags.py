"""``plan --engine ...``: the serving engine flags, named as the engines name them.

Without ``--engine`` the plan is today's (no ``serving`` block). Every flag
left out takes the engine's own default (``estimator/data/engines.json``),
which the verdict's ``settings`` then names.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from tracker.errors import UsageError

if TYPE_CHECKING:
    from estimator import EngineRequest

ENGINES = ("transformers", "vllm", "sglang", "tgi")
QUANTIZATIONS = ("auto", "none", "fp8", "awq", "gptq", "bnb-4bit", "mxfp4")


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """The engine options, grouped; none is checked here (``engine_request_from`` does)."""
    g = parser.add_argument_group("serving engine (start-up verdict under serving.engine)")
    g.add_argument("--engine", choices=ENGINES, help="model this engine's start-up decision")
    g.add_argument(
        "--card-memory",
        type=float,
        metavar="GIB",
        help="total device memory as the driver reports it (GiB), for cards not in the table",
    )
    g.add_argument(
        "--gpu-memory-utilization",
        type=float,
        metavar="F",
        help="vLLM gpu_memory_utilization (0.9); SGLang mem_fraction_static",
    )
    g.add_argument("--max-model-len", type=int, metavar="N", help="default: the config's context")
    g.add_argument("--block-size", type=int, metavar="N", help="KV block size (vLLM, TGI: 16)")
    g.add_argument(
        "--kv-cache-dtype", choices=("auto", "fp8"), default="auto", help="KV cache element width"
    )
    g.add_argument(
        "--quantization",
        choices=QUANTIZATIONS,
        default="auto",
        help="weight format of the linears (auto: the checkpoint's quantization_config, as "
        "the engines detect it; none: 16-bit)",
    )
    g.add_argument("--tensor-parallel", type=int, default=1, metavar="N", help="GPUs per replica")
    g.add_argument("--max-num-seqs", type=int, metavar="N", help="vLLM max_num_seqs")
    g.add_argument(
        "--max-num-batched-tokens",
        type=int,
        metavar="N",
        help="vLLM profile budget; SGLang chunked prefill; TGI max batch prefill tokens",
    )


def engine_request_from(args: argparse.Namespace) -> EngineRequest | None:
    """The EngineRequest the flags describe; None without ``--engine``."""
    from estimator import EngineRequest, WorkloadError

    if args.engine is None:
        return None
    memory = args.card_memory
    if memory is not None and not 0.001 <= memory <= 16384:
        raise UsageError(f"--card-memory must be a size in GiB (0.001-16384), got {memory}")
    try:
        return EngineRequest(
            engine=args.engine,
            card=args.card,
            card_memory_bytes=None if memory is None else int(memory * 2**30),
            gpu_memory_utilization=args.gpu_memory_utilization,
            max_model_len=args.max_model_len,
            block_size=args.block_size,
            kv_cache_dtype=args.kv_cache_dtype,
            quantization=args.quantization,
            group_size=getattr(args, "quant_group_size", None),
            tensor_parallel=args.tensor_parallel,
            max_num_seqs=args.max_num_seqs,
            max_num_batched_tokens=args.max_num_batched_tokens,
        )
    except WorkloadError as exc:
        raise UsageError(str(exc)) from exc
