"""What the user wants to do with a model: a ``Workload`` is validated once, here.

Every later formula trusts these fields, so a batch of 0, an unknown method
or a LoRA rank of 10^9 is refused as a ``WorkloadError`` naming the field,
before any estimate is attempted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal, get_args

from estimator.errors import WorkloadError

Method = Literal["full", "lora", "qlora", "serve"]
Precision = Literal["bf16", "fp16", "fp32"]
Optimizer = Literal["adamw", "adamw8bit", "sgd", "adafactor"]
AttentionImpl = Literal["sdpa", "eager"]
ServeWeights = Literal["auto", "bf16", "fp16", "int8", "fp8", "nf4", "awq", "gptq", "int4", "mxfp4"]
AdamImpl = Literal["foreach", "fused", "loop"]
Parallelism = Literal["fsdp", "zero", "ddp"]
ShardingStrategy = Literal["FULL_SHARD", "SHARD_GRAD_OP", "HYBRID_SHARD", "NO_SHARD"]
QLoRAFormat = Literal["nf4", "gptq"]

METHODS: Final = get_args(Method)
PRECISIONS: Final = get_args(Precision)
OPTIMIZERS: Final = get_args(Optimizer)
ATTENTION_IMPLS: Final = get_args(AttentionImpl)
SERVE_WEIGHTS: Final = get_args(ServeWeights)
ADAM_IMPLS: Final = get_args(AdamImpl)
PARALLELISMS: Final = get_args(Parallelism)
SHARDING_STRATEGIES: Final = get_args(ShardingStrategy)
QLORA_FORMATS: Final = get_args(QLoRAFormat)

MAX_BATCH: Final = 1 << 20
MAX_SEQ: Final = 1 << 24
MAX_GPUS: Final = 4096
MAX_RANK: Final = 1 << 16
MAX_LOSS_CHUNKS: Final = 4096
# Training recipes with a file in data/recipes/ (estimator/recipes.py reads them).
RECIPE_NAMES: Final = ("hf-trainer", "peft", "trl-sft", "torchtune", "litgpt", "axolotl", "unsloth")
ALL_LINEAR: Final = "all-linear"
# Workload.stack as estimator/stacks/pins.py writes it (Stack.text()), at most 256 pins.
_STACK: Final = re.compile(
    r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,127}==[0-9][0-9A-Za-z.+!_-]{0,63}"
    r"(?: [A-Za-z0-9][A-Za-z0-9._-]{0,127}==[0-9][0-9A-Za-z.+!_-]{0,63}){0,255})?"
)


@dataclass(frozen=True)
class Workload:
    """One training or serving job.

    ``batch`` is the micro-batch per device. ``pure_16bit`` keeps weights,
    gradients and optimizer state in ``precision`` (no fp32 master copy);
    otherwise 16-bit precisions mean autocast over fp32 weights. With
    ``gpus > 1`` every device runs ``batch`` sequences and ``parallelism``
    says what is split: ``fsdp`` with ``sharding_strategy`` (FULL_SHARD,
    SHARD_GRAD_OP, HYBRID_SHARD over ``gpus_per_node``, NO_SHARD), ``zero``
    with ``zero_stage`` 1-3, or ``ddp`` (replicas). ``offload_optimizer``,
    ``offload_params`` and ``offload_activations`` move those tensors to CPU
    memory; the plan states what stays on the GPU.
    ``target_len``: decoder tokens per sample of an encoder-decoder model
    (the padded label length: a classification label is a few tokens while
    the input is ``seq_len``); 0 is ``seq_len``. Decoder-only models ignore it.
    ``lora_targets``: module names, or role names (``attention``, ``mlp``,
    ``qkv``, ``all-linear``) that each family maps to its own linears.
    ``loss_chunks``: 1 is one cross-entropy over fp32 logits of the whole
    micro-batch; N > 1 is a chunked loss (torchtune ``CEWithChunkedOutputLoss``,
    litgpt ``chunked_cross_entropy``) that upcasts one chunk of logits at a
    time; 0 is a fused linear cross-entropy that never materialises the
    logits (Apple's Cut Cross-Entropy in Unsloth, Liger's fused loss).
    ``loss_shift_copy``: the loss shifts a contiguous fp32 copy of the logits
    (transformers' ``loss_utils.py`` before the labels were padded instead)
    while the model output still holds the 16-bit logits.
    ``loss_upcast``: the causal-LM loss casts the logits to fp32 first
    (transformers' shared ``ForCausalLMLoss``); false is a model's own loss of
    before it that ran cross-entropy on the 16-bit logits (GPTBigCode), which
    only autocast makes fp32.
    ``kbit_head_16bit``: after ``kbit_prepare`` upcast every non-4-bit
    parameter to fp32, TRL's ``peft_module_casting_to_bf16`` casts the head and
    the embeddings back to bf16 and keeps the norms in fp32.
    ``adapters_fp32``: PEFT keeps LoRA weights in fp32
    (``autocast_adapter_dtype``); torchtune and litgpt build them in the
    model's dtype. ``recipe``: the training recipe whose defaults built this
    workload (``estimator/data/recipes/``), empty when none.
    ``fused_lora``: Unsloth's fused LoRA autograd functions (attention
    Q/K/V, output and gated MLP each one function, used when LoRA dropout is
    0) instead of PEFT's per-adapter modules; ``fused_rmsnorm``: Unsloth's
    Triton RMSNorm, which keeps its 16-bit input instead of an fp32 copy.
    ``expandable_segments``: the run sets ``PYTORCH_CUDA_ALLOC_CONF=
    expandable_segments:True`` (Unsloth does on import).
    ``empty_cache_each_step``: the training loop calls
    ``torch.cuda.empty_cache()`` after every step (PEFT's MetaMathQA method
    comparison does), so segments cached in one step do not carry their
    fragmentation into the next.
    ``reentrant_checkpointing``: checkpointing recomputes each layer from a
    detached copy of its input (``torch.utils.checkpoint`` with
    ``use_reentrant=True``: transformers 4.35-4.x's default; transformers 5
    passes ``use_reentrant=False``).
    ``zero_grad_set_to_none``: ``zero_grad()`` frees the gradients, torch 2's
    default (``torch/optim/optimizer.py``, ``nn.Module.zero_grad``); false
    zero-fills them in place, torch 1.x's default, so they stay allocated
    through the next forward.
    ``cache_in_training``: the model returns its key/value cache while training
    (transformers 4.x's GPTBigCode kept ``config.use_cache`` under gradient
    checkpointing, where Llama's forward turned it off), so every layer's present
    lives until the loss is computed.
    ``loop_keeps_outputs``: the training loop holds the model's outputs in a
    variable (``outputs = model(**batch)``, as peft's and accelerate's example
    scripts do), so one step's logits, returned key/value cache (with
    ``cache_in_training``) and encoder output stay through its backward and
    optimizer step and the next forward; the HF Trainer keeps only the loss.
    ``qlora_format``: the 4-bit format of QLoRA's frozen base: ``nf4``
    (bitsandbytes; ``double_quant`` applies) or ``gptq`` (a GPTQ checkpoint:
    16-bit scales and 4-bit zeros per 128 inputs).
    ``zero_auto_buckets``: the DeepSpeed config's bucket sizes are "auto",
    filled by transformers from hidden_size (its documented configs); false:
    DeepSpeed's own defaults, as accelerate's plugin leaves them when it is
    configured from its yaml (reduce bucket 5e8 elements, prefetch 5e7).
    ``serve_weights``: the serving weight format; ``auto`` is the format the
    checkpoint declares in config.json's ``quantization_config``
    (estimator/stored_quantization.py), else its 16-bit dtype; ``plan()``
    resolves it, with ``serve_unquantized`` (layer module prefixes the
    checkpoint keeps 16-bit). ``quant_group_size``: inputs per AWQ/GPTQ scale
    (0: one per output channel); None is the checkpoint's ``group_size``, else 128.
    ``prompt_logits``: serving computes logits for every prompt position, with
    an fp32 copy (transformers' ``generate`` before ``logits_to_keep``, v4.45,
    or a loop calling the model itself); false: the last position only.
    ``awq_fused``: AWQ weights served by AutoAWQ's fused modules
    (``fuse_layers=True``; transformers' ``AwqConfig(do_fuse=True)``), with
    ``seq_len`` as their ``max_seq_len`` (estimator/memory/serving.py).
    ``adamw_impl``: torch's foreach AdamW (the ``torch.optim.AdamW`` default
    on CUDA since torch 2.0) briefly holds one more state-sized copy in
    ``step()``; fused and per-parameter-loop implementations do not.
    ``stack``: the libraries and versions that run the job, as pins
    (``torch==2.4 transformers==4.44 vllm==0.6.4``; estimator/stacks/): the
    fields their versions imply are already set here, and a serving engine
    reads its own version from it (empty: each engine's current release).
    ``optimizer_in_backward``: each parameter is stepped as soon as its gradient
    is accumulated and the gradient freed (torchtune's ``optimizer_in_bwd``), so
    a full fine-tune never holds every gradient at once (one GPU).
    ``fsdp_mixed_units``: under FSDP1 the LoRA adapters share each layer's
    unit with its frozen weights (a transformer-layer wrap policy with
    ``use_orig_params=True``, accelerate's default for a script that does not
    install peft's ``fsdp_auto_wrap_policy``), so every layer's flat parameter
    takes a gradient of its whole size.
    ``load_dtype_auto``: ``from_pretrained`` loads the weights in the dtype
    config.json declares (transformers 5), so a full fine-tune of a checkpoint
    declared in the run's 16-bit dtype trains those 16-bit weights with no fp32
    master copy, as ``pure_16bit``.
    ``fsdp_frozen_reshard``: FSDP1 reshards a unit whose parameters are all
    frozen (a LoRA base layer) once backward has passed it; without it (torch
    before 2.1) each such unit stays gathered until backward ends.
    """

    method: Method = "full"
    batch: int = 32
    seq_len: int = 512
    target_len: int = 0
    precision: Precision = "bf16"
    pure_16bit: bool = False
    optimizer: Optimizer = "adamw"
    adamw_impl: AdamImpl = "foreach"
    grad_checkpointing: bool = False
    attention: AttentionImpl = "sdpa"
    lora_rank: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_targets: tuple[str, ...] = (ALL_LINEAR,)
    double_quant: bool = True
    # QLoRA through peft's prepare_model_for_kbit_training (the documented recipe).
    kbit_prepare: bool = True
    # TRL's SFTTrainer casts the head and embeddings back to 16-bit after that preparation.
    kbit_head_16bit: bool = False
    loss_chunks: int = 1
    loss_shift_copy: bool = False
    loss_upcast: bool = True
    adapters_fp32: bool = True
    fused_lora: bool = False
    fused_rmsnorm: bool = False
    recipe: str = ""
    stack: str = ""
    optimizer_in_backward: bool = False
    fsdp_mixed_units: bool = False
    fsdp_frozen_reshard: bool = True
    load_dtype_auto: bool = False
    serve_weights: ServeWeights = "auto"
    quant_group_size: int | None = None
    serve_unquantized: tuple[str, ...] = ()
    kv_cache_bytes: int = 2
    prompt_logits: bool = False
    awq_fused: bool = False
    card: str = "A10G"
    gpus: int = 1
    parallelism: Parallelism = "fsdp"
    sharding_strategy: ShardingStrategy = "FULL_SHARD"
    zero_stage: int = 3
    gpus_per_node: int = 8
    offload_optimizer: bool = False
    offload_params: bool = False
    offload_activations: bool = False
    expandable_segments: bool = False
    empty_cache_each_step: bool = False
    reentrant_checkpointing: bool = False
    zero_auto_buckets: bool = True
    qlora_format: QLoRAFormat = "nf4"
    zero_grad_set_to_none: bool = True
    cache_in_training: bool = False
    loop_keeps_outputs: bool = False
    epochs: float = 10.0
    samples: int = 50_000
    headroom: float = 1.15
    mfu: float = 0.35

    def __post_init__(self) -> None:
        _choice("method", self.method, METHODS)
        _choice("precision", self.precision, PRECISIONS)
        _choice("optimizer", self.optimizer, OPTIMIZERS)
        _choice("adamw_impl", self.adamw_impl, ADAM_IMPLS)
        _choice("attention", self.attention, ATTENTION_IMPLS)
        _choice("serve_weights", self.serve_weights, SERVE_WEIGHTS)
        _choice("parallelism", self.parallelism, PARALLELISMS)
        _choice("sharding_strategy", self.sharding_strategy, SHARDING_STRATEGIES)
        _choice("qlora_format", self.qlora_format, QLORA_FORMATS)
        _bounded("zero_stage", self.zero_stage, 1, 3)
        _bounded("gpus_per_node", self.gpus_per_node, 1, MAX_GPUS)
        _bounded("batch", self.batch, 1, MAX_BATCH)
        _bounded("seq_len", self.seq_len, 1, MAX_SEQ)
        _bounded("target_len", self.target_len, 0, MAX_SEQ)
        _bounded("gpus", self.gpus, 1, MAX_GPUS)
        _bounded("lora_rank", self.lora_rank, 1, MAX_RANK)
        _bounded("lora_alpha", self.lora_alpha, 1, MAX_RANK)
        _bounded("samples", self.samples, 1, 1 << 40)
        _bounded("kv_cache_bytes", self.kv_cache_bytes, 1, 4)
        if self.quant_group_size is not None:
            _bounded("quant_group_size", self.quant_group_size, 0, 1 << 16)
        if not isinstance(self.serve_unquantized, tuple) or not all(
            isinstance(m, str) and m for m in self.serve_unquantized
        ):
            raise WorkloadError("workload: serve_unquantized must be module-name prefixes")
        _bounded("loss_chunks", self.loss_chunks, 0, MAX_LOSS_CHUNKS)
        if self.recipe != "" and self.recipe not in RECIPE_NAMES:
            raise WorkloadError(
                f"workload: recipe must be one of {', '.join(RECIPE_NAMES)}, got {self.recipe!r}"
            )
        if not isinstance(self.stack, str) or not _STACK.fullmatch(self.stack):
            raise WorkloadError(
                "workload: stack must be space-separated NAME==VERSION pins such as 'torch==2.4'"
            )
        for name in (
            "grad_checkpointing",
            "pure_16bit",
            "double_quant",
            "kbit_prepare",
            "kbit_head_16bit",
            "loss_shift_copy",
            "loss_upcast",
            "adapters_fp32",
            "fused_lora",
            "fused_rmsnorm",
            "offload_optimizer",
            "offload_params",
            "offload_activations",
            "expandable_segments",
            "empty_cache_each_step",
            "reentrant_checkpointing",
            "zero_auto_buckets",
            "zero_grad_set_to_none",
            "cache_in_training",
            "loop_keeps_outputs",
            "prompt_logits",
            "awq_fused",
            "optimizer_in_backward",
            "fsdp_mixed_units",
            "fsdp_frozen_reshard",
            "load_dtype_auto",
        ):
            if not isinstance(getattr(self, name), bool):
                raise WorkloadError(f"workload: {name} must be true or false")
        _fraction("lora_dropout", self.lora_dropout, 0.0, 0.99)
        _fraction("mfu", self.mfu, 0.01, 1.0)
        _fraction("headroom", self.headroom, 1.0, 4.0)
        _fraction("epochs", self.epochs, 0.001, 1e6)
        if not isinstance(self.card, str) or not self.card:
            raise WorkloadError("workload: card must be a card name such as 'A10G'")
        if (
            not isinstance(self.lora_targets, tuple)
            or not self.lora_targets
            or not all(isinstance(t, str) and t for t in self.lora_targets)
        ):
            raise WorkloadError("workload: lora_targets must be 'all-linear' or module names")
        if self.awq_fused and self.serve_weights not in ("awq", "auto"):
            raise WorkloadError("workload: awq_fused needs serve_weights 'awq'")
        if self.optimizer_in_backward and (
            self.gpus > 1 or self.offload_optimizer or self.offload_params
        ):
            raise WorkloadError(
                "workload: optimizer_in_backward is modelled on one GPU without offloading"
            )
        zero = self.gpus > 1 and self.parallelism == "zero"
        if self.offload_params and zero and self.zero_stage != 3:
            raise WorkloadError("workload: offload_params needs zero_stage 3 (DeepSpeed)")

    @property
    def tokens_per_step(self) -> int:
        """Tokens one GPU processes per step: batch times sequence length."""
        return self.batch * self.seq_len

    @property
    def all_linear(self) -> bool:
        """True for ``lora_targets=("all-linear",)``: PEFT's shorthand for every block linear."""
        return self.lora_targets == (ALL_LINEAR,)


def _choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise WorkloadError(f"workload: {name} must be one of {', '.join(allowed)}, got {value!r}")


def _bounded(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WorkloadError(f"workload: {name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise WorkloadError(f"workload: {name} must be between {low} and {high}, got {value}")


def _fraction(name: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise WorkloadError(f"workload: {name} must be a number, got {value!r}")
    if not low <= float(value) <= high:
        raise WorkloadError(f"workload: {name} must be between {low} and {high}, got {value}")


STATED_WORKLOAD: Final = Workload(batch=1, seq_len=512, card="A10G")
"""The workload every published figure is stated at (one sequence of 512 tokens on an A10G):
the tracker stores each revision's plan at it and the paste form plans at it. The one place
to change it."""
