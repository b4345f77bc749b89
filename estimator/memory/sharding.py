"""What one rank keeps: FSDP per sharding strategy, DeepSpeed ZeRO 1-3, DDP, and CPU offload.

Model states are first computed for one device (``States``), then
``distribute`` divides what the strategy shards and adds the buffers the
runtime allocates per rank. Defaults are the libraries' own:

* FSDP (torch 2.13 ``torch/distributed/fsdp``): ``limit_all_gathers=True``
  (``fully_sharded_data_parallel.py``) caps in-flight all-gathers at two
  (``_limiter_utils.py``: ``_max_num_inflight_all_gathers = 2``), so one
  wrapped layer is gathered in the compute dtype plus one prefetched; in
  backward the gathered layer's unsharded gradient exists until its
  reduce-scatter lands in the sharded gradient. FULL_SHARD and HYBRID_SHARD
  reshard after forward, except the root unit (embeddings, final norm, head),
  which ``_runtime_utils._post_forward_reshard`` keeps gathered for backward;
  with ``Workload.fsdp_mixed_units`` (LoRA adapters inside their layer's unit:
  a transformer-layer wrap policy with ``use_orig_params=True``, not peft's
  ``fsdp_auto_wrap_policy``) every layer's FlatParameter takes a gradient of its
  whole size (``_flat_param.py``: one ``flat_param.grad`` per handle; the FSDP2
  tutorial: "Mixing frozen and non-frozen parameters can in the same
  communication group without using extra memory", which FSDP1 cannot);
  without ``Workload.fsdp_frozen_reshard`` (torch before 2.1) a unit of frozen
  weights registers no post-backward hook at all (``_register_post_backward_hooks``
  returns for a flat parameter that does not require grad), so its pre-backward
  unshard is undone only by ``_post_backward_final_callback``'s catch-all reshard
  when backward ends: every layer is gathered when backward reaches the first;
  SHARD_GRAD_OP keeps every layer gathered from forward through backward; HYBRID_SHARD shards within a node
  (``gpus_per_node``) and replicates across nodes; NO_SHARD is DDP.
* DDP (torch ``nn/parallel/distributed.py``): ``gradient_as_bucket_view=False``
  by default, so the reducer's buckets are a second copy of the gradients.
* DeepSpeed ZeRO (``deepspeed/runtime/zero/config.py`` at microsoft/DeepSpeed
  03dc2b92): ``reduce_bucket_size`` and ``allgather_bucket_size`` 5e8
  elements, ``stage3_prefetch_bucket_size`` 5e7, ``stage3_param_persistence_threshold``
  1e5, ``stage3_max_live_parameters`` and ``stage3_max_reuse_distance`` 1e9.
  A DeepSpeed JSON with "auto" values gets them from transformers
  (``integrations/deepspeed.py``): reduce bucket ``h²``, prefetch ``0.9·h²``,
  persistence ``10·h`` (``Workload.zero_auto_buckets``); accelerate's plugin
  configured from its yaml writes none of these keys, so DeepSpeed's own apply.
  Stage 3 allocates one gradient bucket of ``reduce_bucket_size`` elements per
  communication dtype up front (``stage3.py``, "IPG": ``bucket.buffer =
  torch.empty(self.reduce_bucket_size, ...)``). A fetched parameter is released
  after its module unless it recurs within the next ``max_reuse_distance``
  elements of the recorded trace (``partitioned_param_coordinator.py``
  ``__params_to_release``); ``max_live_parameters`` only caps prefetching. The
  model holds 16-bit weights; the fp32 master copy lives in the optimizer
  partition.
* Offload: FSDP's ``CPUOffload(offload_params=True)`` moves parameters and
  gradients to CPU (the optimizer steps there); DeepSpeed's
  ``offload_optimizer`` moves the fp32 master, optimizer state and gradient
  partitions, ``offload_param`` (stage 3) the 16-bit partitions; activation
  offloading keeps one checkpointed layer input in flight on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from estimator.architecture import VOCAB_HEADS, Architecture, Block
from estimator.memory.numerics import Numerics
from estimator.memory.states import base_4bit_bytes
from estimator.workload import Workload

ZERO_PERSISTENCE_PER_HIDDEN: Final = 10  # transformers "auto": 10 * hidden_size
ZERO_PREFETCH_PER_HIDDEN_SQUARED: Final = 0.9  # transformers "auto": 0.9 * hidden_size**2
ZERO_REDUCE_BUCKET: Final = 5e8  # DeepSpeed reduce_bucket_size
ZERO_PREFETCH_BUCKET: Final = 5e7  # DeepSpeed stage3_prefetch_bucket_size
ZERO_MAX_REUSE_DISTANCE: Final = 1e9  # DeepSpeed stage3_max_reuse_distance
FSDP_INFLIGHT_ALL_GATHERS: Final = 2  # torch FSDP limit_all_gathers


@dataclass(frozen=True)
class States:
    """Model-state bytes on one device, before any activations.

    ``gathered``: parameters and gradients that exist only while layers run
    (all-gathered layers, reduce buckets), absent at the optimizer step.
    ``gathered_late``: gathered layers added to those by the time backward
    reaches the first layer (units FSDP does not reshard until backward ends).
    """

    weights: float
    gradients: float
    gradients_top: float
    optimizer: float
    adapters: float
    quantization: float
    cache: float
    step_temp: float
    framework: float
    gathered: float = 0.0
    gathered_late: float = 0.0


def shard_factor(w: Workload) -> int:
    """Devices each sharded tensor is split over."""
    if w.gpus == 1 or w.parallelism == "ddp":
        return 1
    if w.parallelism == "fsdp":
        if w.sharding_strategy == "NO_SHARD":
            return 1
        if w.sharding_strategy == "HYBRID_SHARD":
            return max(1, min(w.gpus, w.gpus_per_node))
    return w.gpus


def gathered_layer_bytes(block: Block, n: Numerics, w: Workload, method: str) -> float:
    """One layer's parameters as FSDP all-gathers them: as they are stored.

    QLoRA's linears stay packed (bitsandbytes' quant_storage makes the 4-bit
    data FSDP's flat parameters), so their gather moves 4-bit bytes.
    """
    if method != "qlora":
        return block.parameters * n.compute
    quantized = sum(lin.in_features * lin.out_features * lin.copies for lin in block.linears)
    packed, constants = base_4bit_bytes(quantized, w.qlora_format, w.double_quant)
    return packed + constants + (block.parameters - quantized) * n.compute


def _layers(arch: Architecture) -> list[Block]:
    return [b for b, _ in arch.block_groups]


def _fsdp(st: States, arch: Architecture, n: Numerics, w: Workload, method: str) -> States:
    shards = shard_factor(w)
    layers = _layers(arch)
    one = max((gathered_layer_bytes(b, n, w, method) for b in layers), default=0.0)
    grad_unit = max((b.parameters for b in layers), default=0) * n.grad if method == "full" else 0.0
    if w.parallelism == "ddp" or (w.parallelism == "fsdp" and w.sharding_strategy == "NO_SHARD"):
        # DDP buckets hold a second copy of every trainable gradient.
        return replace(st, framework=st.framework + st.gradients)
    # The root unit (embeddings, final norm, head: what no wrapped layer owns) is
    # not resharded after forward (_runtime_utils._post_forward_reshard frees
    # only non-root handles), so its gathered copy lives through backward.
    root = (arch.total_parameters - arch.in_block_parameters) * n.compute
    mixed = 0.0
    if w.fsdp_mixed_units and method in ("lora", "qlora"):
        # FSDP1 flattens a unit into one FlatParameter; with an adapter trainable inside
        # it, the whole flat parameter gets a gradient: one unsharded while the layer's
        # backward runs, and the sharded gradient of every layer until the step.
        grad_unit += one
        mixed = sum(gathered_layer_bytes(b, n, w, method) * c for b, c in arch.block_groups)
    every_layer = sum(gathered_layer_bytes(b, n, w, method) * c for b, c in arch.block_groups)
    late = 0.0
    if w.sharding_strategy == "SHARD_GRAD_OP" and not w.offload_params:
        gathered = every_layer * (1 - 1 / shards) + grad_unit + root
    else:
        gathered = FSDP_INFLIGHT_ALL_GATHERS * one + grad_unit + root
        if frozen_units_stay_gathered(w, method):
            late = max(0.0, every_layer - FSDP_INFLIGHT_ALL_GATHERS * one)
    out = replace(
        st,
        weights=st.weights / shards,
        gradients=(st.gradients + mixed) / shards,
        gradients_top=st.gradients_top / shards,
        optimizer=st.optimizer / shards,
        adapters=st.adapters / shards,
        quantization=st.quantization / shards,
        cache=st.cache / shards,
        step_temp=st.step_temp / shards,
        gathered=st.gathered + gathered,
        gathered_late=late,
    )
    if w.offload_params or w.offload_optimizer:
        # CPUOffload(offload_params=True): parameters, gradients and the step live on the CPU.
        out = replace(
            out,
            weights=0.0,
            gradients=0.0,
            gradients_top=0.0,
            optimizer=0.0,
            adapters=0.0,
            cache=0.0,
            step_temp=0.0,
            gathered=out.gathered + one,
        )
    return out


def frozen_units_stay_gathered(w: Workload, method: str) -> bool:
    """LoRA's frozen layer units kept gathered to the end of backward (torch before 2.1)."""
    return (
        method in ("lora", "qlora")
        and not w.fsdp_mixed_units
        and not w.fsdp_frozen_reshard
        and w.sharding_strategy in ("FULL_SHARD", "HYBRID_SHARD")
    )


def zero3_resident_at_turn(arch: Architecture) -> float:
    """Parameter elements ZeRO-3 keeps gathered when forward turns into backward.

    A module's next use after its forward is its backward, about twice the
    elements that follow it in forward away; those within ``max_reuse_distance``
    are kept, so the modules of the forward's last reuse/2 elements stay
    gathered, the output head always (nothing follows it; tied or not, it is
    the vocabulary matrix).
    """
    head = arch.vocab_size * arch.hidden_size if arch.head in VOCAB_HEADS else 0
    tail = max(0.0, ZERO_MAX_REUSE_DISTANCE / 2 - head)
    return head + min(tail, float(arch.in_block_parameters))


def _zero(
    st: States, arch: Architecture, n: Numerics, w: Workload, method: str, total: int
) -> States:
    gpus = w.gpus
    stage = w.zero_stage
    h = arch.hidden_size
    bucket = float(h * h) if w.zero_auto_buckets else ZERO_REDUCE_BUCKET
    full = method == "full"
    # DeepSpeed: 16-bit model weights and gradients, the fp32 master weights
    # in the optimizer partition.
    upcast = full and n.master == 4 and n.compute == 2
    master = total * 4.0 if upcast else 0.0
    weights16 = total * float(n.compute) if upcast else st.weights
    grad_scale = (n.compute / n.grad if upcast else 1.0) / (gpus if stage >= 2 else 1)
    optimizer = (st.optimizer + master) / gpus
    gradients = st.gradients * grad_scale
    gradients_top = st.gradients_top * grad_scale
    reduce_buffers = bucket * n.compute if st.gradients else 0.0
    weights = weights16
    gathered = reduce_buffers
    if stage == 3:
        persistent = sum(
            b.parameters * c
            for b, c in arch.block_groups
            if b.parameters < ZERO_PERSISTENCE_PER_HIDDEN * h
        )
        weights = weights16 / gpus + persistent * n.compute
        prefetch = (
            ZERO_PREFETCH_PER_HIDDEN_SQUARED * h * h
            if w.zero_auto_buckets
            else ZERO_PREFETCH_BUCKET
        )
        live = zero3_resident_at_turn(arch) + prefetch
        if w.offload_params:
            # Fetching an offloaded parameter copies its CPU partition to the GPU
            # beside the gathered buffer (partition_parameters.py, all-gather of a
            # partition not on the device): the largest tensor twice, briefly.
            largest = max(
                [lin.parameters for b in _layers(arch) for lin in b.linears] + [arch.vocab_size * h]
            )
            live += largest / gpus
        width = weights16 / total if total else float(n.compute)
        gathered += min(live, float(total)) * width
    else:
        gathered += bucket * n.compute  # allgather of updated partitions after the step
    out = replace(
        st,
        weights=weights,
        gradients=gradients,
        gradients_top=gradients_top,
        optimizer=optimizer,
        adapters=st.adapters / (gpus if stage == 3 else 1),
        quantization=st.quantization / (gpus if stage == 3 else 1),
        cache=0.0,
        step_temp=st.step_temp / gpus,
        gathered=st.gathered + gathered,
    )
    if w.offload_optimizer:
        # Master weights, optimizer state and gradient partitions move to the CPU.
        out = replace(out, optimizer=0.0, step_temp=0.0, gradients=0.0, gradients_top=0.0)
    if w.offload_params and stage == 3:
        out = replace(out, weights=0.0, adapters=0.0)
    return out


def distribute(
    st: States, arch: Architecture, n: Numerics, w: Workload, method: str, total: int
) -> States:
    """The states one rank keeps under the workload's parallelism and offload."""
    if w.gpus == 1:
        if w.parallelism == "zero" and (w.offload_params or w.offload_optimizer):
            return _zero(st, arch, n, w, method, total)
        if w.offload_params:
            return _fsdp(st, arch, n, replace(w, parallelism="fsdp"), method)
        if w.offload_optimizer:
            # One GPU offloads through DeepSpeed ZeRO-Offload (stage 2).
            return _zero(st, arch, n, replace(w, parallelism="zero", zero_stage=2), method, total)
        return st
    if w.parallelism == "zero":
        return _zero(st, arch, n, w, method, total)
    return _fsdp(st, arch, n, w, method)


def describe_distribution(w: Workload, method: str) -> list[str]:
    """The plan's sentences on what each rank keeps and what sits in CPU memory."""
    out: list[str] = []
    shards = shard_factor(w)
    if w.gpus > 1:
        if w.parallelism == "zero":
            kept = {1: "optimizer state", 2: "optimizer state and gradients", 3: "everything"}
            buckets = (
                "reduce bucket hidden² elements (HF 'auto')"
                if w.zero_auto_buckets
                else "reduce bucket 5e8 elements (DeepSpeed's default)"
            )
            out.append(
                f"{w.gpus} GPUs: DeepSpeed ZeRO-{w.zero_stage} partitions {kept[w.zero_stage]}; "
                f"16-bit weights on the GPU, fp32 master copy in the optimizer partition; {buckets}"
                + (
                    "; the head and the forward's last 5e8 parameter elements stay gathered "
                    "into backward (max_reuse_distance 1e9), plus one prefetch bucket"
                    if w.zero_stage == 3
                    else ""
                )
            )
        elif w.parallelism == "ddp" or w.sharding_strategy == "NO_SHARD":
            out.append(
                f"{w.gpus} GPUs: replicas (DDP / FSDP NO_SHARD); gradient buckets copy every gradient"
            )
        else:
            what = {
                "FULL_SHARD": "one layer gathered plus one prefetched (limit_all_gathers), "
                "the root unit (embeddings, final norm, head) gathered through backward",
                "HYBRID_SHARD": f"sharded over {shards} GPUs per node, replicated across nodes; "
                "one layer gathered plus one prefetched, the root unit through backward",
                "SHARD_GRAD_OP": "every layer stays gathered from forward through backward",
            }[w.sharding_strategy]
            out.append(
                f"{w.gpus} GPUs: FSDP {w.sharding_strategy} of weights, gradients and optimizer "
                f"state; batch {w.batch} per device; {what}"
                + (", its linears still packed in 4 bit" if method == "qlora" else "")
            )
            if frozen_units_stay_gathered(w, method):
                out.append(
                    "frozen layer units are not resharded in backward (torch before 2.1): every "
                    "layer is gathered when backward reaches the first"
                )
    if w.offload_params or (w.offload_optimizer and w.gpus > 1 and w.parallelism == "fsdp"):
        out.append(
            "parameter offload: weights, gradients and optimizer state in CPU memory; the GPU "
            "keeps the gathered layers, activations and the loss"
        )
    elif w.offload_optimizer:
        out.append(
            "optimizer offload: fp32 master weights, optimizer state and gradient partitions in "
            "CPU memory (the step runs on the CPU); the GPU keeps 16-bit weights, reduce "
            "buckets, activations and the loss"
        )
    if w.offload_activations:
        out.append(
            "activation offload: saved layer inputs go to CPU memory; the GPU keeps two layers' "
            "inputs in flight, one layer's working set and the loss"
        )
    return out
