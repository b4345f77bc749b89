"""Estimate parameters, memory per method, card fits and cost from a config.json.

SOURCE is a config.json, or a directory holding one plus optionally a
model.safetensors.index.json and/or *.safetensors headers (only the JSON
header at the start of each file is read, never the weights); or a model on
the Hub: ORG/NAME, ORG/NAME@REV (branch, tag or sha), hf://ORG/NAME@REV or a
model page URL. From the Hub only config.json, the safetensors index or the
single file's header are fetched (at most six requests; none for a
revision the database recorded, or a sharded one the HF cache holds);
--json names the sha planned.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from tracker.commands.engine_flags import add_engine_arguments, engine_request_from
from tracker.commands.plan_stack import add_stack_argument, stack_from
from tracker.errors import ArtifactError, UsageError
from tracker.hub.source_shape import could_be_hub_ref
from tracker.untrusted.json_input import JsonInputError, JsonSyntaxError, read_json
from tracker.untrusted.safetensors_header import MAX_HEADER_BYTES, read_header

if TYPE_CHECKING:
    from collections.abc import Mapping

    from estimator import Plan, WeightManifest, Workload
    from estimator.families.exact import ParameterList
    from tracker.hub.plan_source import PlanInputs
    from tracker.settings import Settings

# The names in estimator/recipes.py RECIPE_NAMES (kept literal: flags parse without the estimator).
RECIPE_CHOICES: Final = (
    "hf-trainer",
    "peft",
    "trl-sft",
    "torchtune",
    "litgpt",
    "axolotl",
    "unsloth",
)
NAME = "plan"
HELP = "estimate memory per method, card fits and cost from a config.json"
MAX_CONFIG_BYTES: Final = 16 * 2**20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE, the output form, the workload, the cards, the stack and the engine options."""
    parser.add_argument(
        "source", metavar="SOURCE", help="config.json, a directory, or ORG/NAME[@REV] on the Hub"
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the plan as one JSON object")
    out.add_argument("--markdown", action="store_true", help="print the model page as Markdown")
    parser.add_argument(
        "--share",
        action="store_true",
        help="store the plan on the configured server ([server] public_url, api_token) and "
        "print its page's URL",
    )
    # Flags a recipe can set default to None: an explicit flag wins over the recipe.
    parser.add_argument(
        "--recipe",
        choices=RECIPE_CHOICES,
        help="training library whose defaults fill the flags not given (estimator/README.md)",
    )
    add_stack_argument(parser)
    parser.add_argument("--method", choices=("full", "lora", "qlora", "serve"), help="(full)")
    parser.add_argument("--batch", type=int, help="micro-batch per device (32)")
    parser.add_argument("--seq-len", type=int, help="(512)")
    parser.add_argument(
        "--target-len",
        type=int,
        help="decoder tokens per sample of an encoder-decoder model, e.g. the label length "
        "(default: --seq-len)",
    )
    parser.add_argument("--precision", choices=("bf16", "fp16", "fp32"), help="(bf16)")
    parser.add_argument(
        "--pure-bf16",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="weights, gradients and optimizer state in the 16-bit precision, no fp32 master copy",
    )
    parser.add_argument(
        "--optimizer", choices=("adamw", "adamw8bit", "sgd", "adafactor"), help="(adamw)"
    )
    parser.add_argument("--grad-checkpointing", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument(
        "--loss-chunks",
        type=int,
        help="cross-entropy over N chunks of logits (torchtune: 8); 1 one fp32 loss, 0 fused (no logits)",
    )
    parser.add_argument("--attention", choices=("sdpa", "eager"), help="(sdpa)")
    parser.add_argument("--lora-rank", type=int, help="(16)")
    parser.add_argument("--lora-alpha", type=int, help="(32)")
    parser.add_argument("--lora-dropout", type=float, help="(0.05)")
    parser.add_argument(
        "--lora-targets",
        help="comma-separated module names or roles: attention, qkv, mlp, all-linear (all-linear)",
    )
    parser.add_argument(
        "--serve-weights",
        choices=("auto", "bf16", "fp16", "int8", "fp8", "nf4", "awq", "gptq", "int4", "mxfp4"),
        default="auto",
        help="weight format when serving (--method serve); auto: the format config.json's "
        "quantization_config declares, else 16-bit",
    )
    parser.add_argument(
        "--quant-group-size",
        type=int,
        default=None,
        metavar="N",
        help="inputs per AWQ/GPTQ scale (0: one per output channel); default: the "
        "checkpoint's group_size with --serve-weights auto, else 128",
    )
    parser.add_argument(
        "--prompt-logits",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="serving computes logits for every prompt position with an fp32 copy "
        "(transformers' generate before v4.45, or a loop calling the model); default: the "
        "last position only",
    )
    parser.add_argument(
        "--awq-fused",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="AWQ weights in AutoAWQ's fused modules (fuse_layers=True, or transformers' "
        "AwqConfig(do_fuse=True)) with --seq-len as their max_seq_len: per-layer KV cache "
        "and RoPE table, q/k/v held twice while fusing, eager attention with an fp32 softmax "
        "(needs --serve-weights awq)",
    )
    parser.add_argument("--card", default="A10G")
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--parallelism", choices=("fsdp", "zero", "ddp"), default="fsdp")
    parser.add_argument(
        "--sharding-strategy",
        choices=("FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD"),
        default="FULL_SHARD",
        help="FSDP sharding strategy (--parallelism fsdp)",
    )
    parser.add_argument("--zero-stage", type=int, choices=(1, 2, 3), default=3)
    parser.add_argument(
        "--qlora-format",
        choices=("nf4", "gptq"),
        default="nf4",
        help="QLoRA's 4-bit base: bitsandbytes NF4, or a GPTQ checkpoint (16-bit scales and "
        "4-bit zeros per 128 inputs)",
    )
    parser.add_argument(
        "--zero-auto-buckets",
        action=argparse.BooleanOptionalAction,
        default=True,
        help='the DeepSpeed config\'s bucket sizes are "auto" (transformers fills them from '
        "hidden_size); --no-zero-auto-buckets: DeepSpeed's own defaults, as an accelerate yaml "
        "leaves them (reduce bucket 5e8, prefetch 5e7 elements)",
    )
    parser.add_argument("--gpus-per-node", type=int, default=8, help="HYBRID_SHARD's shard group")
    parser.add_argument("--offload-optimizer", action="store_true", help="optimizer state on CPU")
    parser.add_argument("--offload-params", action="store_true", help="parameters on CPU")
    parser.add_argument(
        "--offload-activations",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="saved activations on CPU",
    )
    parser.add_argument(
        "--expandable-segments",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the allocator returns free "
        "pages before an allocation fails, so what must fit is the allocated peak",
    )
    parser.add_argument(
        "--empty-cache-each-step",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the training loop calls torch.cuda.empty_cache() after every step: no "
        "fragmentation carried from step to step, so what must fit is the step's allocated peak",
    )
    parser.add_argument(
        "--zero-grad-set-to-none",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="zero_grad() frees the gradients (torch 2's default); --no-zero-grad-set-to-none: "
        "it zero-fills them in place (torch 1.x's default), so they stay through the next forward",
    )
    parser.add_argument(
        "--cache-in-training",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the model returns its key/value cache while training (transformers 4.x's "
        "GPTBigCode under checkpointing): every layer's present lives until the loss",
    )
    parser.add_argument(
        "--loop-keeps-outputs",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="the training loop holds the model's outputs (outputs = model(**batch), as "
        "peft's and accelerate's example scripts do): one step's logits, returned cache and "
        "encoder output live through its backward and the next forward; the HF Trainer "
        "keeps only the loss",
    )
    parser.add_argument(
        "--reentrant-checkpointing",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="checkpointing with use_reentrant=True (transformers 4.x's default; 5 passes "
        "False): under FSDP with LoRA/QLoRA every checkpointed layer input and its gradient "
        "then stay until backward ends",
    )
    parser.add_argument(
        "--fsdp-mixed-units",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="FSDP1 with LoRA: the adapters share each layer's unit with its frozen weights "
        "(a transformer-layer wrap policy with use_orig_params, not peft's "
        "fsdp_auto_wrap_policy), so every layer's flat parameter takes a whole gradient",
    )
    parser.add_argument(
        "--load-dtype-auto",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="from_pretrained loads config.json's dtype (transformers 5): a full fine-tune of "
        "a checkpoint declared bf16 (fp16) trains in pure bf16 (fp16), no fp32 master weights",
    )
    parser.add_argument(
        "--fsdp-frozen-reshard",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="FSDP1 with LoRA: a layer unit of frozen weights is resharded once backward has "
        "passed it (torch 2.1 on); --no-fsdp-frozen-reshard keeps every such unit gathered "
        "until backward ends (torch 2.0 and earlier)",
    )
    add_engine_arguments(parser)


def _read_json(path: Path, limit: int = MAX_CONFIG_BYTES) -> Any:
    try:
        if path.stat().st_size > limit:
            raise UsageError(f"{path}: larger than {limit} bytes, not a config")
        return read_json(path.read_bytes())
    except FileNotFoundError as exc:
        raise UsageError(f"{path}: no such file") from exc
    except JsonSyntaxError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from exc
    except JsonInputError as exc:
        raise UsageError(f"{path}: {exc}") from exc
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror})") from exc


def _safetensors_header(path: Path) -> Any:
    with path.open("rb") as handle:

        def read(offset: int, length: int) -> bytes:
            handle.seek(offset)
            return handle.read(length)

        try:
            return read_header(read, str(path), size=path.stat().st_size)
        except ArtifactError as exc:
            raise UsageError(str(exc)) from exc


def load_source(source: Path) -> tuple[Any, WeightManifest | None]:
    """The parsed config and the weight manifest found beside it, if any."""
    from estimator import WeightManifest

    if not source.is_dir():
        return _read_json(source), None
    config = _read_json(source / "config.json")
    headers = [_safetensors_header(p) for p in sorted(source.glob("*.safetensors"))]
    if headers:
        return config, WeightManifest.from_headers(headers)
    index = source / "model.safetensors.index.json"
    if index.is_file():
        return config, WeightManifest.from_index(_read_json(index, MAX_HEADER_BYTES))
    return config, None


def workload_from(args: argparse.Namespace, config: Any = None) -> Workload:
    """The Workload of the flags: the recipe's defaults (``--recipe``, or the training
    library ``--stack`` names), the stack's versions over them, then every flag given.
    ``config`` gives the model_type a few mechanisms are limited to.

    Without ``--stack`` no mechanism holds and no library implies a recipe, so
    the recipe's defaults under the flags are the whole Workload: the stack
    tables (their modules and data) are read only for a stack."""
    explicit: dict[str, object] = {
        field: value
        for field, value in (
            ("method", args.method),
            ("batch", args.batch),
            ("seq_len", args.seq_len),
            ("target_len", args.target_len),
            ("precision", args.precision),
            ("pure_16bit", args.pure_bf16),
            ("optimizer", args.optimizer),
            ("grad_checkpointing", args.grad_checkpointing),
            ("loss_chunks", args.loss_chunks),
            ("lora_rank", args.lora_rank),
            ("lora_alpha", args.lora_alpha),
            ("lora_dropout", args.lora_dropout),
            ("offload_activations", args.offload_activations),
            ("expandable_segments", args.expandable_segments),
            ("empty_cache_each_step", args.empty_cache_each_step),
            ("reentrant_checkpointing", args.reentrant_checkpointing),
            ("zero_grad_set_to_none", args.zero_grad_set_to_none),
            ("cache_in_training", args.cache_in_training),
            ("loop_keeps_outputs", args.loop_keeps_outputs),
            ("prompt_logits", args.prompt_logits),
            ("awq_fused", args.awq_fused),
            ("quant_group_size", args.quant_group_size),
            ("attention", args.attention),
            ("fsdp_mixed_units", args.fsdp_mixed_units),
            ("fsdp_frozen_reshard", args.fsdp_frozen_reshard),
            ("load_dtype_auto", args.load_dtype_auto),
        )
        if value is not None
    }
    if args.lora_targets is not None:
        targets = tuple(t.strip() for t in args.lora_targets.split(",") if t.strip())
        explicit["lora_targets"] = targets or ("all-linear",)
    model_type = config.get("model_type") if isinstance(config, dict) else None
    stack = stack_from(args)
    if stack is None:
        from estimator.recipes import apply_recipe

        return apply_recipe(args.recipe, **explicit, **placement_of(args))
    from estimator.stacks import apply_stack

    return apply_stack(
        stack,
        args.recipe,
        model_type if isinstance(model_type, str) else None,
        **explicit,
        **placement_of(args),
    )


def placement_of(args: argparse.Namespace) -> dict[str, object]:
    """The placement flags (card, GPUs, parallelism, offload), passed as given."""
    return dict(
        serve_weights=args.serve_weights,
        card=args.card,
        gpus=args.gpus,
        parallelism=args.parallelism,
        sharding_strategy=args.sharding_strategy,
        zero_stage=args.zero_stage,
        zero_auto_buckets=args.zero_auto_buckets,
        qlora_format=args.qlora_format,
        gpus_per_node=args.gpus_per_node,
        offload_optimizer=args.offload_optimizer,
        offload_params=args.offload_params,
    )


def render(result: Plan, args: argparse.Namespace, planned: PlanInputs | None = None) -> str:
    """The plan as ``--json`` (naming the Hub revision planned), ``--markdown`` or text."""
    from estimator.report import render_markdown, render_terminal

    if args.json:
        document = result.to_json()
        if planned is not None:
            document["source"] = {
                "repo_id": planned.ref.repo_id,
                "requested": planned.ref.revision or "main",
                "revision": planned.sha,
                "read_from": planned.origin,
            }
        return json.dumps(document, indent=2) + "\n"
    if args.markdown:
        return render_markdown(result)
    text = render_terminal(result)
    if result.engine is not None:
        text = text.rstrip("\n") + "\n\n" + result.engine.summary() + "\n"
    return text


def inputs_of(
    source: str, settings: Settings | None
) -> tuple[Any, WeightManifest | None, PlanInputs | None]:
    """(config, manifest, what was read from the Hub or database) for SOURCE."""
    path = Path(source)
    if path.exists():
        return (*load_source(path), None)
    if settings is None or not could_be_hub_ref(source):
        raise UsageError(f"{source}: no such file, and not a Hub repo (ORG/NAME[@REV])")
    from tracker.commands.common import user_errors
    from tracker.hub.plan_source import parse_hub_ref
    from tracker.reads.plan_fetch import fetch_inputs

    with user_errors():
        ref = parse_hub_ref(source, settings.hub.endpoint)
        if ref is None:
            raise UsageError(f"{source}: no such file, and not a Hub repo (ORG/NAME[@REV])")
        planned = fetch_inputs(ref, settings)
    return planned.config, planned.manifest, planned


def exact_parameters(config: Mapping[str, object]) -> ParameterList | None:
    """Exact parameters of a type no family knows, with the [exact] extra.

    The estimator asks only for such types, so the isolation machinery
    (multiprocessing, 44 ms of imports) loads only for them.
    """
    from tracker.revision.exact_parameters import builder

    build = builder()
    return None if build is None else build(config)


def reads_settings(args: argparse.Namespace) -> bool:
    """A local config.json or directory is planned from the arguments alone, unless the
    plan is to be shared (the server and its token are settings)."""
    return bool(args.share) or not Path(args.source).exists()


def run(args: argparse.Namespace, settings: Settings | None) -> int:
    """Print the plan (exit 0); an estimate the estimator refuses is a UsageError (exit 2).

    A Hub SOURCE comes from the database, the HF cache or the Hub; ``--share`` POSTs the plan.
    """
    from estimator import EstimateError, plan

    config, manifest, planned = inputs_of(args.source, settings)
    try:
        result = plan(
            config,
            workload_from(args, config),
            manifest,
            engine_request_from(args),
            exact_parameters,
        )
    except EstimateError as exc:
        raise UsageError(str(exc)) from exc
    sys.stdout.write(render(result, args, planned))
    if args.share:
        from tracker.commands.share import share

        assert settings is not None  # reads_settings asks for them when sharing
        sys.stdout.write(f"Shared: {share(result, settings)}\n")
    return 0
