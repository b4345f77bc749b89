"""Training memory (full fine-tune, LoRA, QLoRA) as the moments of one step.

Moments (each a ``Phase``): end of forward (autocast still caches the
16-bit copies of fp32 weights, the loss is being computed), start of
backward (every saved activation plus the fp32 loss gradients), backward
through the top and through the bottom layer (gradients grow while saved
activations shrink; with checkpointing one layer is recomputed at a time),
and the optimizer step (weights + gradients + state + the optimizer's own
temporaries). Optimizer state is counted as allocated: from the second
step on it is alive through all of them. Gradients are freed between
steps (``zero_grad(set_to_none=True)``, the Trainer default).
"""

from __future__ import annotations

from typing import Final

from estimator.architecture import Architecture, Block
from estimator.memory.activations import Activations, ActivationSettings, training_activations
from estimator.memory.layers import Placed, Slotted, block_slots, place
from estimator.memory.lora import TargetResolution, describe_targets, resolve_targets
from estimator.memory.numerics import (
    Numerics,
    dequantised_bytes,
    loaded_16bit,
    training_numerics,
    upcast_by_kbit_prepare,
)
from estimator.memory.phases import MethodModel, Phase, Term
from estimator.memory.sharding import States, describe_distribution, distribute
from estimator.memory.states import (
    ParameterSplit,
    base_4bit_bytes,
    optimizer_bytes,
    step_temporary_bytes,
    total_optimizer_bytes,
)
from estimator.recipes import recipe
from estimator.workload import Workload

CUBLAS_WORKSPACE: Final = 32 * 2**20
RESERVE_STATIC: Final = 0.02
# Calibrated on published runs that report both max_memory_allocated and
# nvidia-smi: the caching allocator keeps 20-35% of the transient bytes as
# fragmented, reusable segments.
RESERVE_DYNAMIC: Final = 0.30
# When a device allocation fails, the caching allocator frees its cached blocks
# that are not split and retries (c10/cuda/CUDACachingAllocator.cpp, header
# comment); a split block's free part stays, which is the slack above. With
# expandable segments the segment is mapped page by page and every free block's
# pages can be unmapped on that path, so what has to fit is the allocated peak.
RESERVE_DYNAMIC_EXPANDABLE: Final = 0.0
# torch.cuda.empty_cache() releases every cached block that is not in use
# (c10/cuda/CUDACachingAllocator.cpp, emptyCache -> release_cached_blocks). A loop
# that calls it after each step starts every step with only its live tensors'
# segments, so the calibrated slack above, which builds up as blocks cut for one
# step's shapes are reused for the next one's, is not carried: the reserve is
# the step's own high-water, modelled as its allocated peak. The split
# remainders within one step are not modelled (2-7% of the peak on the PEFT
# MetaMathQA rows of ../shared/measured).
RESERVE_DYNAMIC_EMPTIED: Final = 0.0


Placements = list[tuple[Block, tuple[Placed, ...], int]]


def placements(
    arch: Architecture,
    trainable: bool,
    targets: frozenset[str] | None,
    slots: dict[int, Slotted] | None = None,
) -> Placements:
    """Place the linears of each distinct layer: (first block, its placed linears, block count).

    Layers whose linears and specs are the same objects (templates that differ
    only by a tensor outside their linears, see ``sharing_specs``) keep and
    train the same bytes per token, so they are one entry with their counts summed.
    """
    slots = block_slots(arch) if slots is None else slots
    at: dict[tuple[int, int, int, int, int], int] = {}
    out: Placements = []
    for block, count in arch.block_groups:
        key = (
            id(block.linears),
            id(block.attention),
            id(block.cross_attention),
            id(block.feed_forward),
            id(block.moe),
        )
        i = at.get(key)
        if i is None:
            at[key] = len(out)
            out.append((block, place(slots[key[0]], trainable, targets), count))
        else:
            first, placed, n = out[i]
            out[i] = (first, placed, n + count)
    return out


def _adapted_shapes(placed: Placements) -> list[tuple[int, int, int]]:
    """(in, out, copies) of every adapted linear, its copies multiplied by the blocks sharing it."""
    return [
        (p.linear.in_features, p.linear.out_features, p.linear.copies * count)
        for _, group, count in placed
        for p in group
        if p.adapted
    ]


def _full_states(arch: Architecture, split: ParameterSplit, w: Workload, n: Numerics) -> States:
    """Weights, gradients and optimizer state of a full fine-tune on one device.

    With ``optimizer_in_backward`` (torchtune's ``optimizer_in_bwd: True``) every
    parameter has its own optimizer, stepped by a post-accumulate-grad hook that
    then sets the gradient to None (torchtune ``training/memory.py``
    ``register_optim_in_bwd_hooks``: ``optim_dict[param].step()``,
    ``optim_dict[param].zero_grad()``): one parameter's gradient exists at a time,
    the largest, and the step's transients are that one tensor's.
    """
    total = split.total
    cache = n.compute * (split.block_linears + split.vocab_matmul) if n.autocast else 0.0
    in_backward = w.optimizer_in_backward
    stepped = split.largest_tensor if in_backward else total
    return States(
        weights=total * n.master,
        gradients=stepped * n.grad,
        gradients_top=split.largest_tensor * n.grad
        if in_backward
        else (total - split.in_blocks) * n.grad,
        optimizer=total_optimizer_bytes(arch.shape_counts, w.optimizer, n.state),
        adapters=0.0,
        quantization=0.0,
        cache=cache,
        step_temp=step_temporary_bytes(
            w.optimizer, w.adamw_impl, split.largest_tensor, stepped, n.state
        ),
        framework=CUBLAS_WORKSPACE,
    )


def _adapter_states(
    split: ParameterSplit,
    w: Workload,
    n: Numerics,
    shapes: list[tuple[int, int, int]],
    quantized: bool,
) -> States:
    r = w.lora_rank
    params = sum(r * (i + o) * c for i, o, c in shapes)
    # PEFT upcasts adapters to fp32; torchtune and litgpt build them in the model dtype.
    adapter = 4 if w.adapters_fp32 or n.dtype == "fp32" else n.compute
    optimizer = sum(
        c
        * (
            optimizer_bytes(w.optimizer, (r, i), r * i, adapter)
            + optimizer_bytes(w.optimizer, (o, r), o * r, adapter)
        )
        for i, o, c in shapes
    )
    base_bytes = 4 if n.dtype == "fp32" else 2
    quantization = 0.0
    if quantized:
        packed, constants = base_4bit_bytes(split.block_linears, w.qlora_format, w.double_quant)
        unquantized = split.total - split.block_linears
        weights = packed + unquantized * base_bytes
        if upcast_by_kbit_prepare(w, "qlora"):
            # prepare_model_for_kbit_training keeps every non-4-bit parameter in fp32;
            # TRL's peft_module_casting_to_bf16 takes the head and embeddings back to
            # 16-bit, so only the layers' norms (and biases) stay fp32.
            upcast = split.in_blocks - split.block_linears if w.kbit_head_16bit else unquantized
            weights += upcast * (4 - base_bytes)
        quantization = constants + split.largest_linear * dequantised_bytes(w, method="qlora")
    else:
        weights = split.total * base_bytes
    return States(
        weights=weights,
        gradients=params * float(adapter),
        gradients_top=0.0,
        optimizer=optimizer,
        adapters=params * float(adapter),
        quantization=quantization,
        cache=0.0,
        step_temp=0.0,
        framework=CUBLAS_WORKSPACE,
    )


def _phases(
    st: States, acts: Activations, layers: int, checkpointing: bool, grads_kept: bool = False
) -> tuple[Phase, ...]:
    # The states every moment shares are one set of terms; only the weights
    # (with or without autocast's 16-bit cache) and the gradients differ.
    # Gathered layers and reduce buckets exist while layers run, not in the step.
    step_shared = (
        Term("optimizer_state", st.optimizer),
        Term("adapters", st.adapters),
        Term("quantization_overhead", st.quantization),
        Term("framework_overhead", st.framework),
    )
    shared = (
        *step_shared[:3],
        Term("framework_overhead", st.framework + st.gathered),
    )
    weights: dict[float, Term] = {}

    def base(grads: float, cache: float) -> tuple[Term, ...]:
        w = weights.get(cache)
        if w is None:
            w = weights[cache] = Term("weights", st.weights + cache)
        return (w, Term("gradients", grads), *shared)

    per_layer_saved = acts.saved / max(layers, 1)
    # Where checkpointed inputs outlive their layer's backward, all of them and their
    # gradients are still there when backward reaches the first layer.
    first_layer_saved = (
        acts.saved + acts.kept_input_grads if acts.kept_input_grads else per_layer_saved
    )
    lower_grads = st.gradients_top + (st.gradients - st.gradients_top) / max(layers, 1)
    # Gradients zero-filled rather than freed by zero_grad() are there all step long.
    between = st.gradients if grads_kept else 0.0
    lower_grads = max(lower_grads, between)
    graph_cache = 0.0 if checkpointing else st.cache
    all_grads = base(st.gradients, 0.0)
    step_weights = weights.get(0.0) or Term("weights", st.weights)
    step = (step_weights, Term("gradients", st.gradients), *step_shared)
    return (
        Phase(
            "end of forward",
            (
                *base(between, st.cache),
                # The loop still holds the previous step's outputs (if it keeps them at all).
                Term("activations", 0.0, acts.saved + acts.loss_at_forward_end + acts.outputs),
            ),
        ),
        Phase(
            "start of backward (loss gradients)",
            (*base(between, graph_cache), Term("activations", 0.0, acts.saved + acts.loss)),
        ),
        Phase(
            "backward through the last layer",
            (
                *base(lower_grads, graph_cache),
                Term("activations", 0.0, acts.saved + acts.working + acts.outputs_logits),
            ),
        ),
        Phase(
            "backward through the first layer",
            (
                *all_grads,
                Term("framework_overhead", st.gathered_late),
                Term("activations", 0.0, first_layer_saved + acts.working + acts.outputs),
            ),
        ),
        Phase("optimizer step", (*step, Term("activations", st.step_temp, acts.outputs))),
    )


def checkpoint_inputs_kept(w: Workload, method: str) -> bool:
    """FSDP1 keeps every checkpointed layer input, and its gradient, to the end of backward.

    With LoRA or QLoRA every parameter of a wrapped decoder layer is frozen (peft's
    ``fsdp_auto_wrap_policy`` gives the adapters units of their own), so FSDP
    reshards the layer through a multi-grad hook on its inputs
    (``torch/distributed/fsdp/_runtime_utils.py``
    ``_register_post_backward_reshard_only_hook``, torch 2.4-2.13). Under reentrant
    checkpointing those inputs are the recompute's detached leaves; the hook's
    closure holds their AccumulateGrad nodes (``torch/autograd/graph.py``
    ``register_multi_grad_hook``), and the handle is removed only by
    ``_finalize_params`` when backward ends, so each input and the gradient
    accumulated into it stay alive until then. Non-reentrant checkpointing hooks
    the real activations, whose saved tensors backward frees as it goes.
    """
    fsdp = (w.gpus > 1 and w.parallelism == "fsdp") or (
        w.gpus == 1 and w.offload_params and w.parallelism != "zero"
    )
    return (
        fsdp
        and method in ("lora", "qlora")
        and w.fsdp_frozen_reshard
        and w.grad_checkpointing
        and w.reentrant_checkpointing
        and not w.offload_activations
    )


def zero3_linear_saves_inputs(w: Workload) -> bool:
    """Under ZeRO-3 every linear layer keeps its input for backward, frozen or not.

    ``zero.Init`` (which transformers' from_pretrained enters under ZeRO-3) replaces
    ``torch.nn.functional.linear`` with ``zero3_linear_wrap`` while
    ``memory_efficient_linear`` is on, its default (DeepSpeed
    ``runtime/zero/partition_parameters.py`` ``_enable_mem_efficient_linear``), and
    ``LinearFunctionForZeroStage3.forward`` saves ``(input, weight, bias)``
    whatever needs a gradient (``runtime/zero/linear.py``), where autograd's own
    linear keeps a frozen weight's input only when the weight trains.
    """
    sharded = w.gpus > 1 or w.offload_params or w.offload_optimizer
    return w.parallelism == "zero" and w.zero_stage == 3 and sharded


def loss_in_16bit(w: Workload, n: Numerics) -> bool:
    """A loss without ``.float()`` stays 16-bit unless autocast promotes cross-entropy."""
    return not w.loss_upcast and not n.autocast and n.dtype != "fp32"


def fused_lora_applies(w: Workload, method: str) -> bool:
    """Unsloth patches its fused LoRA functions in only when dropout is 0.

    unsloth/models/llama.py ``get_peft_model``: with dropout it warns "Dropout
    = 0 is supported for fast patching ... Unsloth will patch all other
    layers, except LoRA matrices", and the adapters stay PEFT modules.
    """
    return w.fused_lora and method in ("lora", "qlora") and w.lora_dropout == 0


def training_model(
    arch: Architecture,
    split: ParameterSplit,
    w: Workload,
    method: str,
    has_bf16: bool,
    slots: dict[int, Slotted] | None = None,
) -> MethodModel:
    """Full fine-tune, LoRA or QLoRA as a ``MethodModel``."""
    w = loaded_16bit(w, method, arch.declared_dtype)
    n = training_numerics(w, method, has_bf16, arch.norm)
    full = method == "full"
    resolution = resolve_targets(arch, w.lora_targets)
    placed = placements(arch, full, resolution.names, slots)
    settings = ActivationSettings(
        numerics=n,
        seq_len=w.seq_len,
        target_len=w.target_len,
        eager=w.attention == "eager" or arch.position == "relative",
        checkpointing=w.grad_checkpointing,
        lora_rank=w.lora_rank,
        lora_dropout=w.lora_dropout,
        head_trains=full,
        norms_train=full,
        fp32_logits=n.dtype == "fp32"
        or (upcast_by_kbit_prepare(w, method) and w.pure_16bit and not w.kbit_head_16bit),
        offload=w.offload_activations,
        fused_lora=fused_lora_applies(w, method),
        fused_rmsnorm=w.fused_rmsnorm,
        loss_chunks=w.loss_chunks,
        loss_shift_copy=w.loss_shift_copy,
        loss_16bit=loss_in_16bit(w, n),
        loss_16bit_autocast=not w.loss_upcast and n.autocast,
        cache_in_training=w.cache_in_training,
        outputs_kept=w.loop_keeps_outputs,
        inputs_kept=checkpoint_inputs_kept(w, method),
        all_linears_save_input=zero3_linear_saves_inputs(w),
    )
    acts = training_activations(arch, placed, settings, batch=1)
    if full:
        st = _full_states(arch, split, w, n)
    else:
        st = _adapter_states(split, w, n, _adapted_shapes(placed), method == "qlora")
    st = distribute(st, arch, n, w, method, split.total)
    notes, assumptions = _explain(arch, w, method, n, acts, resolution)
    return MethodModel(
        method=method,
        phases=_phases(
            st, acts, arch.num_layers, w.grad_checkpointing, not w.zero_grad_set_to_none
        ),
        numerics=n.label,
        num_layers=arch.num_layers,
        layer_fraction=split.layer_fraction,
        notes=notes,
        assumptions=assumptions,
        reserve_static=RESERVE_STATIC,
        reserve_dynamic=_reserve_dynamic(w),
    )


def _reserve_dynamic(w: Workload) -> float:
    """The caching allocator's slack above the batch-proportional bytes, per allocator use."""
    if w.expandable_segments:
        return RESERVE_DYNAMIC_EXPANDABLE
    if w.empty_cache_each_step:
        return RESERVE_DYNAMIC_EMPTIED
    return RESERVE_DYNAMIC


def _explain(
    arch: Architecture,
    w: Workload,
    method: str,
    n: Numerics,
    acts: Activations,
    resolution: TargetResolution,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    notes: list[str] = [f"{method}: {n.label}, optimizer {w.optimizer}"]
    assumptions: list[str] = []
    if w.recipe:
        assumptions.append(recipe(w.recipe).describe())
    if w.loss_chunks == 0:
        assumptions.append(
            "fused linear cross-entropy: logits never materialised, an fp32 log-sum-exp per token"
        )
    elif loss_in_16bit(w, n) and w.loss_chunks == 1:
        assumptions.append(
            f"cross-entropy on the {n.dtype} logits (the model's own loss: no fp32 upcast"
            + (", a shifted 16-bit copy" if w.loss_shift_copy else "")
            + ")"
        )
    elif w.loss_shift_copy and w.loss_chunks == 1:
        assumptions.append(
            "the loss shifts a contiguous fp32 copy of the logits while the 16-bit logits "
            "are still held (transformers' loss before it padded the labels)"
        )
    elif w.loss_chunks > 1:
        assumptions.append(
            f"chunked cross-entropy over {w.loss_chunks} chunks: every chunk's fp32 "
            "log-softmax is kept, one chunk is upcast and differentiated at a time"
        )
    if acts.kept_input_grads:
        assumptions.append(
            "FSDP with frozen layer units and reentrant checkpointing keeps every checkpointed "
            "layer input and its gradient until backward ends (torch FSDP1 reshard-only hooks)"
        )
    if acts.loss > acts.saved and arch.vocab_size >= 32_000:
        notes.append("the fp32 loss over the vocabulary is the largest activation term")
    if any(b.cross_attention is not None for b in arch.blocks):
        decoder = w.target_len or w.seq_len
        assumptions.append(
            f"encoder and cross-attention keys over {w.seq_len} tokens per sample, decoder "
            f"and logits over {decoder}" + ("" if w.target_len else " (--target-len sets it)")
        )
    elif w.target_len:
        notes.append(
            f"target_len {w.target_len} ignored: a decoder-only model has no decoder stack"
        )
    if method == "full" and n.autocast:
        assumptions.append(
            "autocast keeps a 16-bit copy of every fp32 matmul weight until backward consumes it"
        )
    if method in ("lora", "qlora"):
        targets = describe_targets(resolution)
        assumptions.append(
            f"LoRA r={w.lora_rank} alpha={w.lora_alpha} dropout={w.lora_dropout} on {targets}; "
            + (
                "adapters fp32 (PEFT autocast_adapter_dtype)"
                if w.adapters_fp32
                else "adapters in the model's dtype"
            )
            + " with their gradients and optimizer state"
        )
        if fused_lora_applies(w, method):
            assumptions.append(
                "Unsloth's fused LoRA (LoRA_QKV, LoRA_W, LoRA_MLP): one 16-bit input kept per "
                "group of adapted linears, gate and up outputs kept, the activation recomputed"
            )
        elif w.fused_lora:
            assumptions.append(
                f"LoRA dropout {w.lora_dropout}: Unsloth leaves the adapters as PEFT modules "
                "(its fused LoRA needs dropout 0)"
            )
    if w.fused_rmsnorm and arch.norm == "rmsnorm":
        assumptions.append("Unsloth's RMSNorm keeps its 16-bit input and an fp32 rstd per token")
    if method == "qlora":
        assumptions.append(
            "QLoRA: block linears in NF4 (0.5 B/param + absmax"
            + (", double-quantised)" if w.double_quant else ")")
            + (
                (
                    "; prepare_model_for_kbit_training casts norms to fp32"
                    + (
                        " (TRL casts the head and embeddings back to 16-bit)"
                        if w.kbit_head_16bit
                        else ", embeddings and head too"
                    )
                    + " (the hidden stream and norm outputs follow: fp32 activations)"
                    if w.gpus == 1
                    else "; sharded over GPUs the model keeps one 16-bit dtype "
                    "(no fp32 upcast: FSDP flattens uniform dtypes, TRL skips the preparation)"
                )
                if w.kbit_prepare
                else "; embeddings, norms and head stay 16-bit"
            )
            + "; one weight dequantised at a time"
        )
    assumptions.extend(describe_distribution(w, method))
    if w.grad_checkpointing:
        assumptions.append(
            "gradient checkpointing keeps each layer's input and recomputes one layer"
        )
    if w.attention == "sdpa" and arch.position != "relative":
        assumptions.append(
            "SDPA attention keeps no score matrix; packed sequences (no padding mask)"
        )
    else:
        assumptions.append("eager attention keeps the fp32 softmax and its 16-bit copy per head")
    return tuple(notes), tuple(assumptions)
