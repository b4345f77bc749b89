"""Activation memory of one training step: what autograd keeps, tensor by tensor.

Counted per token from the dataflow of a transformers layer, not from a
rule of thumb (Korthikanti et al.'s 34·s·h is the 16-bit GPT-2 special case):

* a linear keeps its input only if its weight trains; under autocast each
  linear keeps its own 16-bit cast of an fp32 input (Q, K and V: three);
* norms keep an fp32 input (RMSNorm upcasts; LayerNorm runs in fp32 under
  autocast) and, when their weight trains, the normalised tensor;
* SDPA keeps q, k, v, its output and an fp32 logsumexp, never the score
  matrix; eager attention keeps the fp32 softmax and its 16-bit copy, plus
  a dropout mask when attention dropout is on;
* gated MLPs keep gate, up and activation outputs (and the product when
  the down projection trains); GELU MLPs keep fc1's output;
* MoE layers run every token through ``top_k`` experts and keep router logits;
* a LoRA adapter keeps an fp32 (or autocast 16-bit) copy of its input, a
  dropout mask when ``lora_dropout > 0``, and its rank-r intermediate;
* the loss upcasts logits to fp32: log-softmax output, the NLL gradient and
  the log-softmax gradient coexist at the start of backward (12 B per
  token and vocabulary entry);
* gradient checkpointing keeps each layer's input and recomputes one layer
  at a time during backward;
* Unsloth's fused LoRA autograd functions keep one 16-bit input per group
  of adapted linears that share it and nothing rank-wide, and its gated MLP
  keeps gate and up outputs only (the activation is recomputed in
  backward); its RMSNorm keeps the 16-bit input and an fp32 rstd per token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from estimator.architecture import (
    VOCAB_HEADS,
    Architecture,
    AttentionSpec,
    Block,
    FeedForwardSpec,
    Linear,
)
from estimator.memory.layers import Placed
from estimator.memory.numerics import Numerics

# f-sized tensors each activation function's autograd graph keeps of its input side.
ACTIVATION_SAVED: Final[dict[str, int]] = {
    "silu": 1,
    "swish": 1,
    "gelu": 1,
    "gelu_pytorch_tanh": 1,
    "gelu_new": 4,
    "gelu_fast": 3,
    "quick_gelu": 2,
    "relu": 1,
    "gelu_python": 3,
    "tanh": 1,
    "sigmoid": 1,
}
# Families whose eager attention runs softmax in the activations' dtype
# (no explicit dtype=float32), so pure 16-bit keeps a 16-bit softmax.
NATIVE_SOFTMAX_FAMILIES: Final = frozenset(
    {"bert", "roberta", "xlm-roberta", "distilbert", "deberta-v2", "gpt2", "opt", "bloom"}
)
LOSS_BYTES_PER_LOGIT: Final = 12
LOSS_FORWARD_BYTES_PER_LOGIT: Final = 10
LOGIT_16BIT_BYTES: Final = 2
CHUNKED_SAVED_BYTES: Final = 4
CHUNK_BACKWARD_BYTES: Final = 10
FUSED_BYTES_PER_TOKEN: Final = 4
SHIFT_COPY_BYTES: Final = 4
# A cross-entropy run on the 16-bit logits (no upcast, no autocast): the logits and
# the log-softmax when the forward ends; log-softmax, NLL gradient, log-softmax
# gradient and the logits at the start of backward; a shifted copy is 16-bit too.
SIXTEEN_BIT_FORWARD_BYTES: Final = 4
SIXTEEN_BIT_BACKWARD_BYTES: Final = 8
SIXTEEN_BIT_SHIFT_COPY_BYTES: Final = 2
# Under autocast ``cross_entropy(..., dtype=bf16)`` keeps its log-softmax 16-bit
# (``fp32_set_opt_dtype`` keeps a given dtype) and ``nll_loss`` saves an fp32 copy of it
# (fp32 policy); accelerate's ``convert_to_fp32`` then copies the logits to fp32 while
# the 16-bit ones are held: 2 + 2 + 4 + 4 B per logit when the forward returns.
SIXTEEN_BIT_AUTOCAST_FORWARD_BYTES: Final = 12
# Last name component of a cross-attention query projection (T5 ``EncDecAttention.q``,
# BART and Whisper ``encoder_attn.q_proj``).
CROSS_QUERY_NAMES: Final = frozenset({"q", "q_proj", "query"})
INDEX_BYTES: Final = 8


@dataclass(frozen=True)
class ActivationSettings:
    """The parts of a workload that change what autograd keeps."""

    numerics: Numerics
    seq_len: int
    eager: bool
    checkpointing: bool
    lora_rank: int
    lora_dropout: float
    head_trains: bool
    norms_train: bool
    # The head's weight and input are fp32 outside autocast (fp32 training, or
    # fp32 head after kbit preparation): logits are born fp32 and the loss's
    # ``.float()`` is a no-op, so no 16-bit logits tensor exists.
    fp32_logits: bool = False
    # Activation offloading: saved layer tensors stream to CPU memory, two layers' in flight.
    offload: bool = False
    # Chunked cross-entropy (torchtune CEWithChunkedOutputLoss, litgpt chunked_cross_entropy).
    loss_chunks: int = 1
    # The loss shifts a contiguous fp32 copy of the logits instead of padding the labels.
    loss_shift_copy: bool = False
    # The loss runs cross-entropy on the 16-bit logits: no ``.float()``, no autocast.
    loss_16bit: bool = False
    # The loss runs cross-entropy on the 16-bit logits under autocast (a model's own loss).
    loss_16bit_autocast: bool = False
    # The model returns its key/value cache in training, so each layer's present (and
    # what it views) lives until the loss is computed.
    cache_in_training: bool = False
    # Unsloth's LoRA_QKV / LoRA_W / LoRA_MLP (unsloth/kernels/fast_lora.py @f4633d8):
    # ``save_for_backward(X, QA, QB, ...)``, ``(A, B, X)`` and ``(..., X, e, g)``.
    fused_lora: bool = False
    # Unsloth's Fast_RMS_Layernorm (unsloth/kernels/rms_layernorm.py): ``save_for_backward(X, W, r)``.
    fused_rmsnorm: bool = False
    # Decoder tokens per sample of an encoder-decoder model (0: ``seq_len``); the
    # encoder and every cross-attention key run over ``seq_len``.
    target_len: int = 0
    # Every checkpointed layer input and its gradient live until backward ends
    # (training.checkpoint_inputs_kept: FSDP1's reshard-only hooks under reentrant checkpointing).
    inputs_kept: bool = False
    # Every linear saves its input, frozen or not (training.zero3_linear_saves_inputs).
    all_linears_save_input: bool = False
    # The training loop holds the model's outputs in a variable until the next forward returns.
    outputs_kept: bool = False


@dataclass(frozen=True)
class Activations:
    """Bytes for one micro-batch.

    ``saved``: held for backward when the forward pass ends; ``loss``: the
    fp32 logits/loss tensors at the start of backward; ``working``: one
    layer's recompute (checkpointing) plus the gradient temporaries of
    backward through the largest layer. ``kept_input_grads``: the gradients
    of every checkpointed layer input but the first, where those inputs and
    their gradients live until backward ends.
    """

    saved: int
    loss: int
    working: int
    loss_at_forward_end: int = 0
    kept_input_grads: int = 0
    # One step's returned outputs (logits, returned key/value cache, encoder output) where the
    # loop holds them; ``outputs_logits`` is their logits alone.
    outputs: int = 0
    outputs_logits: int = 0


def _act_saved(ff: FeedForwardSpec) -> int:
    return ACTIVATION_SAVED.get(ff.activation, 2)


def _linear_inputs(placed: Sequence[Placed], width: int, src: int, s: ActivationSettings) -> float:
    """Inputs kept by linears that share one input tensor of ``width`` elements in ``src`` bytes."""
    n = s.numerics
    total = 0.0
    savers = list(placed) if s.all_linears_save_input else [p for p in placed if p.trainable]
    if savers:
        per = n.compute if (n.autocast and src == 4) else src
        copies = len(savers) if (n.autocast and src == 4) else 1
        total += copies * per * width
    if s.fused_lora:
        # One autograd function for the whole group keeps the shared input once.
        return total + (src * width if any(p.adapted for p in placed) else 0.0)
    adapter: float | None = None  # the same for every adapter reading this input
    for p in placed:
        if p.adapted:
            if adapter is None:
                adapter = _adapter_saved(width, src, s)
            total += adapter * p.linear.copies
    return total


def _adapter_saved(width: int, src: int, s: ActivationSettings) -> float:
    """PEFT LoRA: x cast to the fp32 adapter dtype, dropout, lora_A, lora_B."""
    n = s.numerics
    kept_input = n.compute if n.autocast else 4
    mask = 1 if s.lora_dropout > 0 else 0
    if s.lora_dropout == 0 and not n.autocast and src == 4:
        kept_input = 0  # lora_A keeps the very tensor the base path already holds
    rank_bytes = (n.compute if n.autocast else 4) * s.lora_rank
    return (kept_input + mask) * width + rank_bytes


def _norm(width: int, s: ActivationSettings, rms: bool) -> float:
    n = s.numerics
    if rms and s.fused_rmsnorm:
        return n.residual * width + 4  # the input as it came, and an fp32 rstd per row
    if rms:
        return 4 * width + 4 + (n.residual * width if s.norms_train else 0)
    return n.residual * width + 8


def _kv_width(att: AttentionSpec, s: ActivationSettings) -> int:
    """K and V elements per key token that attention keeps (eager repeats them per query head)."""
    heads = att.num_heads if s.eager else att.num_kv_heads
    return heads * (att.head_dim + att.v_head_dim)


def _attention_core(
    att: AttentionSpec, s: ActivationSettings, native_softmax: bool, keys: int, with_kv: bool = True
) -> float:
    """Per query token; ``keys`` is how many tokens each query attends over.

    ``with_kv`` false leaves out K and V, which cross-attention keeps per
    encoder token, not per decoder token (``cross_source_bytes_per_token``).
    """
    n = s.numerics
    c = n.compute
    q = att.num_heads * att.head_dim
    out = att.num_heads * att.v_head_dim
    kv = _kv_width(att, s) if with_kv else 0
    if not s.eager:
        return c * (q + kv + out) + 4 * att.num_heads
    scores = att.num_heads * keys
    soft = c if (native_softmax and not n.autocast) else 4
    per_score = soft
    if att.dropout > 0:
        per_score += 1 + (c if n.autocast or soft == c else soft)
    elif soft != c:
        per_score += c
    return c * (q + kv) + per_score * scores


def _attention_part(
    block: Block, placed: Sequence[Placed], h: int, s: ActivationSettings, rms: bool, native: bool
) -> float:
    n = s.numerics
    att = block.attention
    decoder = block.cross_attention is not None
    total = _norm(h, s, rms)
    total += _linear_inputs([p for p in placed if p.slot == "attn_in"], h, n.norm_out, s)
    for p in placed:
        if p.slot == "attn_inner":
            width = p.linear.in_features
            total += 4 * width + _linear_inputs([p], width, n.compute, s)
    total += _attention_core(att, s, native, _target_len(s) if decoder else s.seq_len)
    out_width = att.num_heads * att.v_head_dim
    if s.eager or not s.fused_lora:
        # Fused, the output projection keeps the very tensor SDPA already holds as its output.
        total += _linear_inputs(
            [p for p in placed if p.slot == "attn_out"], out_width, n.compute, s
        )
    if block.cross_attention is not None:
        cross = block.cross_attention
        total += _norm(h, s, rms)
        queries = [p for p in placed if p.slot == "cross_in" and _reads_decoder(p)]
        total += _linear_inputs(queries, h, n.norm_out, s)
        total += _attention_core(cross, s, native, s.seq_len, with_kv=False)
        width = cross.num_heads * cross.v_head_dim
        total += _linear_inputs([p for p in placed if p.slot == "cross_out"], width, n.compute, s)
    return total


def _mlp(
    ff: FeedForwardSpec,
    placed_in: Sequence[Placed],
    placed_out: Sequence[Placed],
    h: int,
    s: ActivationSettings,
    src: int,
    mid: int,
) -> float:
    """``mid``: the width of the intermediates (``Numerics.base_out`` for a dense MLP)."""
    c = mid
    f = ff.intermediate_size
    total = _linear_inputs(placed_in, h, src, s)
    if ff.kind == "gated" and s.fused_lora and any(p.adapted for p in (*placed_in, *placed_out)):
        # e and g (Unsloth dequantises and multiplies in 16-bit); backward recomputes the activation
        return total + 2 * s.numerics.compute * f
    if ff.kind == "gated":
        total += c * f * (_act_saved(ff) + 2)  # act input, up output, act output
    else:
        total += c * f * _act_saved(ff)
    total += _linear_inputs(placed_out, f, c, s)
    return total


def _ffn_part(
    block: Block, placed: Sequence[Placed], h: int, s: ActivationSettings, rms: bool
) -> float:
    n = s.numerics
    total = _norm(h, s, rms)
    shared = [p for p in placed if "shared" in p.linear.name]
    regular = [p for p in placed if p not in shared] if shared else placed
    if block.feed_forward is not None:
        total += _mlp(
            block.feed_forward,
            [p for p in regular if p.slot == "mlp_in"],
            [p for p in regular if p.slot == "mlp_out"],
            h,
            s,
            n.norm_out,
            n.base_out,
        )
    moe = block.moe
    if moe is not None:
        routers = [p for p in regular if p.slot == "router"]
        total += _linear_inputs(routers, h, n.norm_out, s)
        total += (n.compute + 4) * moe.num_experts
        experts_in = [_one_copy(p) for p in regular if p.slot == "expert_in"]
        experts_out = [_one_copy(p) for p in regular if p.slot == "expert_out"]
        per_copy: float = n.compute * h  # gathered token copy
        per_copy += _mlp(moe.expert, experts_in, experts_out, h, s, n.compute, n.compute)
        if any(p.trainable for p in routers):
            per_copy += n.compute * h  # expert output kept by the routing-weight product
        total += moe.top_k * per_copy
        if moe.shared is not None:
            total += _mlp(
                moe.shared,
                [p for p in shared if p.linear.in_features == h],
                [p for p in shared if p.linear.in_features != h],
                h,
                s,
                n.norm_out,
                n.base_out,
            )
    return total


def _one_copy(p: Placed) -> Placed:
    """A routed token meets one expert's weights, not all ``copies`` of them."""
    lin = p.linear
    return Placed(
        Linear(lin.name, lin.in_features, lin.out_features, lin.bias),
        p.slot,
        p.trainable,
        p.adapted,
    )


def _target_len(s: ActivationSettings) -> int:
    return s.target_len or s.seq_len


def _reads_decoder(p: Placed) -> bool:
    """Cross-attention's query projection reads the decoder stream; K and V read the encoder's output."""
    return p.linear.name.rsplit(".", 1)[-1] in CROSS_QUERY_NAMES


def cross_source_bytes_per_token(
    block: Block, placed: Sequence[Placed], s: ActivationSettings
) -> float:
    """What a decoder layer keeps per encoder token: cross-attention's K and V and,
    when its K/V projections train, their inputs (the encoder output, one copy per layer)."""
    cross = block.cross_attention
    if cross is None:
        return 0.0
    n = s.numerics
    keys_values = [p for p in placed if p.slot == "cross_in" and not _reads_decoder(p)]
    width = keys_values[0].linear.in_features if keys_values else 0
    inputs = _linear_inputs(keys_values, width, n.norm_out, s)
    if any(p.trainable for p in keys_values) and not (n.autocast and n.norm_out == 4):
        # the encoder output itself, one tensor every decoder layer shares (counted once,
        # in ``training_activations``); what stays per layer are casts and adapter copies
        inputs -= n.norm_out * width
    return n.compute * _kv_width(cross, s) + inputs


def block_bytes_per_token(
    arch: Architecture, block: Block, placed: Sequence[Placed], s: ActivationSettings
) -> float:
    """What one layer keeps for backward, per token of its own stream (a decoder
    layer's per decoder token; see ``cross_source_bytes_per_token``)."""
    h = arch.hidden_size
    rms = arch.norm == "rmsnorm"
    native = arch.family in NATIVE_SOFTMAX_FAMILIES
    total = _attention_part(block, placed, h, s, rms, native)
    total += _ffn_part(block, placed, h, s, rms)
    if arch.hidden_dropout > 0:
        total += 2 * h  # two residual dropout masks
    return total


def outside_blocks_per_token(arch: Architecture, s: ActivationSettings) -> float:
    """Embedding stage, final norm and head, per token."""
    n = s.numerics
    h = arch.hidden_size
    total = float(INDEX_BYTES)
    if arch.hidden_dropout > 0:
        total += h
    if arch.is_encoder_only:
        total += n.residual * h + 8  # embedding LayerNorm
    else:
        total += _norm(h, s, arch.norm == "rmsnorm")  # final norm
    if arch.head in VOCAB_HEADS and s.head_trains:
        total += n.compute * h if (n.autocast or n.norm_out == n.compute) else n.norm_out * h
    return total


def loss_bytes(
    arch: Architecture,
    tokens: int,
    fp32_logits: bool = False,
    chunks: int = 1,
    shift_copy: bool = False,
    sixteen_bit: bool = False,
) -> tuple[int, int]:
    """(start of backward, end of forward) bytes of the logits and loss tensors.

    16-bit logits, their fp32 copy and the log-softmax hold 10 B per logit when
    the forward ends; the NLL gradient brings 12 B at the start of backward.
    Logits born fp32 have no 16-bit tensor: 2 B less at both moments.

    A loss over ``chunks`` > 1 chunks (torchtune ``CEWithChunkedOutputLoss``:
    ``cross_entropy(logits_chunk.float(), ...)`` per chunk) keeps every chunk's
    fp32 log-softmax (4 B per logit) but upcasts one chunk at a time; the
    recipe frees the 16-bit logits before backward (``del logits``), so the
    start of backward holds 4 B per logit plus one chunk's fp32 gradient, its
    log-softmax gradient and its 16-bit cast (10 B per logit of the chunk).
    ``chunks`` 0 is a fused linear cross-entropy: 4 B (fp32 log-sum-exp) per token.

    transformers' loss pads the labels (``src/transformers/loss/loss_utils.py``
    @0114da0, ``ForCausalLMLoss``: ``labels = nn.functional.pad(labels, (0, 1), ...)``).
    Its earlier form (``src/transformers/loss_utils.py`` @07478e0) shifted the
    logits instead: ``logits = logits.float()`` then ``shift_logits =
    logits[..., :-1, :].contiguous()``, one more fp32 copy alive while the
    log-softmax is written (``shift_copy``): 14 B per logit when the forward
    ends. The start of backward is unchanged (the copy is not saved).

    A model's own loss code of before the shared one could skip the upcast:
    GPTBigCode (``models/gpt_bigcode/modeling_gpt_bigcode.py`` @0057454) runs
    ``CrossEntropyLoss()`` on ``lm_logits[..., :-1, :].contiguous()`` as they
    are (``sixteen_bit``; autocast would still promote cross-entropy to fp32):
    4 B per logit when the forward ends (+2 for the 16-bit shifted copy), 8 B at
    the start of backward. litgpt's ``chunked_cross_entropy`` (``litgpt/utils.py``
    @v0.4.0) does the same per 128-token chunk of the head's output: 4 B per logit
    kept, plus one chunk's 4 B of gradients at the start of backward.
    """
    if arch.head not in VOCAB_HEADS:
        return 0, 0
    logits = arch.vocab_size * tokens
    saved_16bit = 0 if fp32_logits else LOGIT_16BIT_BYTES
    if chunks == 0:
        # Fused linear cross-entropy (Cut Cross-Entropy): logits are computed block by
        # block in forward and again in backward; only an fp32 log-sum-exp per token stays.
        return FUSED_BYTES_PER_TOKEN * tokens, FUSED_BYTES_PER_TOKEN * tokens
    if sixteen_bit and chunks == 1:
        forward = SIXTEEN_BIT_FORWARD_BYTES + (SIXTEEN_BIT_SHIFT_COPY_BYTES if shift_copy else 0)
        return SIXTEEN_BIT_BACKWARD_BYTES * logits, forward * logits
    if sixteen_bit:
        # Every chunk's 16-bit logits and log-softmax stay; backward adds one chunk's
        # NLL and log-softmax gradients (the 8 B of the whole-batch form, chunk by chunk).
        backward = (
            SIXTEEN_BIT_FORWARD_BYTES * logits
            + (SIXTEEN_BIT_BACKWARD_BYTES - SIXTEEN_BIT_FORWARD_BYTES) * logits // chunks
        )
        return backward, SIXTEEN_BIT_FORWARD_BYTES * logits
    if chunks > 1:
        backward = CHUNKED_SAVED_BYTES * logits + CHUNK_BACKWARD_BYTES * logits // chunks
        forward = (saved_16bit + CHUNKED_SAVED_BYTES) * logits + 4 * logits // chunks
        return backward, forward
    backward = LOSS_BYTES_PER_LOGIT - LOGIT_16BIT_BYTES + saved_16bit
    forward = LOSS_FORWARD_BYTES_PER_LOGIT - LOGIT_16BIT_BYTES + saved_16bit
    if shift_copy:
        forward += SHIFT_COPY_BYTES
    return backward * logits, forward * logits


def training_activations(
    arch: Architecture,
    placements: Sequence[tuple[Block, Sequence[Placed], int]],
    s: ActivationSettings,
    batch: int,
) -> Activations:
    """Saved, loss and working bytes; ``placements`` lists each distinct layer once with its count.

    An encoder-decoder model runs its encoder and every cross-attention key over
    ``seq_len`` tokens per sample, its decoder and the logits over ``target_len``.
    """
    n = s.numerics
    h = arch.hidden_size
    source = batch * s.seq_len
    seq2seq = any(b.cross_attention is not None for b, _, _ in placements)
    target = batch * _target_len(s) if seq2seq else source

    def own_tokens(block: Block) -> int:
        return target if block.cross_attention is not None else source

    per_layer = [
        (
            block_bytes_per_token(arch, b, p, s) * own_tokens(b)
            + cross_source_bytes_per_token(b, p, s) * source,
            n.residual * h * own_tokens(b),
            count,
        )
        for b, p, count in placements
    ]
    largest = max((v for v, _, _ in per_layer), default=0.0)
    all_layers = sum(v * count for v, _, count in per_layer)
    stream = sum(kept * count for _, kept, count in per_layer)
    if s.offload:
        stream = min(stream, 2 * max((kept for _, kept, _ in per_layer), default=0))
    ends = [arch.blocks[0], arch.blocks[-1]] if arch.blocks else []
    widest = max((_widest(b) for b in ends), default=h)
    # Gradient temporaries of backward through one layer: the incoming and
    # outgoing residual gradients plus two of the widest intermediate.
    grads = (2 * n.residual * h + 2 * n.compute * widest) * max(source, target)
    # Both stacks of an encoder-decoder have their embedding stage and final norm.
    outside = outside_blocks_per_token(arch, s) * (source + target if seq2seq else source)
    if seq2seq and s.head_trains:
        outside += n.norm_out * h * source  # the encoder output the cross K/V projections keep
    if s.checkpointing:
        saved = stream + outside
        working = largest + grads
    else:
        saved = min(2 * largest if s.offload else all_layers, all_layers) + outside
        working = grads
    loss, loss_forward = loss_bytes(
        arch, target, s.fp32_logits, s.loss_chunks, s.loss_shift_copy, s.loss_16bit
    )
    if s.loss_16bit_autocast and s.loss_chunks == 1 and arch.head in VOCAB_HEADS:
        loss_forward = SIXTEEN_BIT_AUTOCAST_FORWARD_BYTES * arch.vocab_size * target
    if s.cache_in_training and s.checkpointing:
        # Without checkpointing the attention keeps the projections' outputs anyway.
        loss_forward += int(
            sum(
                present_bytes_per_token(b, p, s) * own_tokens(b) * count
                for b, p, count in placements
            )
        )
    outputs, outputs_logits = (
        returned_outputs(arch, placements, s, source, target) if s.outputs_kept else (0, 0)
    )
    kept_grads = 0.0
    if s.checkpointing and s.inputs_kept and not s.offload:
        # A layer input's gradient has the input's shape and dtype: the stream again,
        # less the first layer's, whose gradient is the one being computed.
        layers = sum(count for _, _, count in per_layer)
        kept_grads = stream * (layers - 1) / max(layers, 1)
    return Activations(
        int(saved), loss, int(working), loss_forward, int(kept_grads), outputs, outputs_logits
    )


def returned_outputs(
    arch: Architecture,
    placements: Sequence[tuple[Block, Sequence[Placed], int]],
    s: ActivationSettings,
    source: int,
    target: int,
) -> tuple[int, int]:
    """Bytes of what the model's forward returns, and of its logits alone.

    A loop that writes ``outputs = model(**batch)`` (peft's and accelerate's
    example scripts) holds them through backward and the optimizer step, and
    the previous step's until the next forward returns: the logits in the
    head's dtype, every decoder layer's returned key/value cache (with
    ``cache_in_training``; an encoder-decoder's cross-attention keys and values
    run over the source tokens) and an encoder-decoder's encoder output. The
    HF Trainer keeps only the detached loss.
    """
    n = s.numerics
    logits = 0
    if arch.head in VOCAB_HEADS:
        width = 4 if s.fp32_logits else n.compute
        logits = width * arch.vocab_size * target
    cache = 0.0
    if s.cache_in_training:
        for block, placed, count in placements:
            if block.stack == "encoder":
                continue
            tokens = target if block.cross_attention is not None else source
            cache += present_bytes_per_token(block, placed, s) * tokens * count
            cross = block.cross_attention
            if cross is not None:
                per_token = cross.num_kv_heads * (cross.head_dim + cross.v_head_dim)
                cache += per_token * n.base_out * source * count
    seq2seq = any(b.cross_attention is not None for b, _, _ in placements)
    encoder_output = n.residual * arch.hidden_size * source if seq2seq else 0
    return int(logits + cache + encoder_output), logits


def present_bytes_per_token(block: Block, placed: Sequence[Placed], s: ActivationSettings) -> float:
    """One layer's key/value cache entry per token, with what it keeps alive.

    A fused QKV projection's present is a ``split`` view of its whole output
    (GPTBigCode's ``key_value = c_attn(...)``), so the output stays whole; separate
    projections keep their keys and values.
    """
    inputs = [p for p in placed if p.slot == "attn_in"]
    att = block.attention
    width = (
        inputs[0].linear.out_features if len(inputs) == 1 else 2 * att.num_kv_heads * att.head_dim
    )
    return float(width * s.numerics.base_out)


def _widest(block: Block) -> int:
    """The widest intermediate whose gradient backward through the layer holds, per token.

    Routed experts run one at a time over the tokens routed to each (transformers'
    MoE blocks loop ``for expert_idx in ...``), so an expert's gradient covers
    ``top_k / num_experts`` of the tokens on average, not every token ``top_k`` times.
    """
    widths = [block.attention.num_heads * block.attention.head_dim]
    if block.feed_forward is not None:
        widths.append(block.feed_forward.intermediate_size)
    if block.moe is not None:
        moe = block.moe
        widths.append(moe.expert.intermediate_size * moe.top_k // max(moe.num_experts, 1))
    return max(widths)
