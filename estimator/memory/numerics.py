"""Byte widths of every tensor class a training or serving step holds.

One place decides what "bf16" means for a method: autocast over fp32
master weights (the HF Trainer ``bf16=True`` default), pure 16-bit
(weights, gradients and optimizer state all 16-bit), or fp32. A card
without bf16 (T4) runs the same job in fp16 with the same widths.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from estimator.workload import Workload


@dataclass(frozen=True)
class Numerics:
    """Widths in bytes.

    ``compute``: matmul inputs/outputs; ``residual``: the hidden stream
    between layers (fp32 under autocast because embeddings and norms keep
    their fp32 weights' dtype); ``master``: trainable weights;
    ``norm_out``: what a norm hands to the next linears; ``autocast``: each
    linear casts its own copy of an fp32 input to 16-bit.
    """

    label: str
    compute: int
    residual: int
    master: int
    grad: int
    state: int
    norm_out: int
    autocast: bool
    dtype: str
    # The frozen base is 4-bit and its input is fp32 (see ``base_out``).
    fp32_base_out: bool = False

    @property
    def base_out(self) -> int:
        """Width of what a dense MLP's base linears hand on.

        A 16-bit linear answers in ``compute`` whatever it reads; bitsandbytes'
        ``Linear4bit.forward`` casts its product back to the input's dtype, so
        after an fp32 norm output the MLP's intermediates are fp32.
        """
        return self.norm_out if self.fp32_base_out else self.compute


DECLARED_16BIT = {"bf16": "bfloat16", "fp16": "float16"}
"""config.json's dtype name for each 16-bit precision a workload may run in."""


def loaded_16bit(workload: Workload, method: str, declared_dtype: str | None) -> Workload:
    """The workload as it trains once ``from_pretrained`` has loaded the declared dtype.

    transformers 5 resolves ``dtype=None`` to ``"auto"`` (``modeling_utils.py``
    @v5.25.0 ``from_pretrained``: ``if dtype is None: dtype = "auto"``), the
    dtype config.json declares; 4.x loaded fp32 unless told. A full fine-tune of
    a checkpoint declared in the run's own 16-bit dtype then holds 16-bit weights,
    gradients and AdamW state: pure 16-bit, whatever the Trainer's autocast.
    """
    if (
        not workload.load_dtype_auto
        or workload.pure_16bit
        or method != "full"
        or declared_dtype != DECLARED_16BIT.get(workload.precision)
    ):
        return workload
    return replace(workload, pure_16bit=True)


def training_numerics(
    workload: Workload, method: str, has_bf16: bool, norm: str = "rmsnorm"
) -> Numerics:
    """Widths for ``method`` (full/lora/qlora) under the workload's precision.

    ``norm`` is the architecture's normalisation ("layernorm" or "rmsnorm"):
    under autocast it decides whether a 4-bit base widens the hidden stream.
    """
    dtype = _effective_dtype(workload.precision, has_bf16)
    if dtype == "fp32":
        return Numerics("fp32", 4, 4, 4, 4, 4, 4, False, "fp32")
    if method == "full" and not workload.pure_16bit:
        return Numerics(f"{dtype} autocast, fp32 master weights", 2, 4, 4, 4, 4, 4, True, dtype)
    if method == "full":
        return Numerics(f"pure {dtype}", 2, 2, 2, 2, 2, 2, False, dtype)
    # Adapters: the frozen base runs in 16-bit; trainable adapters are fp32
    # (PEFT upcasts them), and the Trainer's autocast flag only decides how
    # the adapter inputs are cast.
    label = f"{dtype} base" + ("" if workload.pure_16bit else " with autocast")
    if upcast_by_kbit_prepare(workload, method):
        # Embeddings and norms hold fp32 weights: the hidden stream and every
        # norm output become fp32 (type promotion), as under autocast.
        return Numerics(label + ", fp32 embeddings and norms", 2, 4, 4, 4, 4, 4, True, dtype, True)
    if fp32_stream_under_autocast(workload, method, norm):
        return Numerics(
            label + ", fp32 LayerNorm outputs and stream", 2, 4, 4, 4, 4, 4, True, dtype, True
        )
    return Numerics(label, 2, 2, 4, 4, 4, 2, not workload.pure_16bit, dtype)


def upcast_by_kbit_prepare(workload: Workload, method: str) -> bool:
    """Whether peft's prepare_model_for_kbit_training upcasts the activations too.

    It casts every parameter that is not 4-bit (embeddings, norms, head) to
    fp32. On one GPU the forward then runs on those fp32 weights; under FSDP
    (several GPUs) the mixed-precision policy casts parameters back to the
    compute dtype for the forward, so only the stored weights grow.
    """
    return method == "qlora" and workload.kbit_prepare and workload.gpus == 1


def fp32_stream_under_autocast(workload: Workload, method: str, norm: str) -> bool:
    """Whether autocast over a 4-bit base makes the hidden stream fp32.

    ``layer_norm`` is on autocast's fp32 list (torch ``autocast_mode.cpp``,
    CUDA ``KERNEL_CUDA(layer_norm, fp32)``), so an ``nn.LayerNorm`` hands
    fp32 to the next linears. A plain linear under autocast answers in 16-bit
    whatever it is given, but bitsandbytes' ``Linear4bit.forward``
    (``bitsandbytes/nn/modules.py``) returns ``out.to(inp_dtype)``: after a
    LayerNorm the 4-bit MLP answers fp32, and adding it to the residual
    promotes the stream to fp32 from the first layer on. RMSNorm modules
    (Llama, Mistral) cast back to their input's dtype themselves, so their
    stream stays 16-bit.
    """
    return method == "qlora" and not workload.pure_16bit and norm == "layernorm"


def dequantised_bytes(workload: Workload, method: str) -> int:
    """Bytes per weight of the dequantised copy of the 4-bit linear in flight.

    bitsandbytes (``bitsandbytes/autograd/_functions.py`` @012c660,
    ``MatMul4Bit``) dequantises one weight at a time and saves no input
    (``ctx.tensors = (None, B)``): ``forward`` runs
    ``F.dequantize_4bit(B, quant_state).to(A.dtype)`` and ``backward``
    ``F.dequantize_4bit(B, ctx.state).to(grad_output.dtype)``.
    ``Linear4bit.forward`` (``bitsandbytes/nn/modules.py``) casts its input
    to the compute dtype first and the product back afterwards
    (``matmul_4bit(...).to(inp_dtype)``), outside the autograd function, so
    both ``A`` and ``grad_output`` are 16-bit even when prepare_model_for_kbit_training
    made the hidden stream fp32: the copy is 2 bytes per weight (4 in fp32 training).
    """
    del method
    return 4 if workload.precision == "fp32" else 2


def serving_dtype(workload: Workload, has_bf16: bool) -> str:
    """The dtype served in: the workload's precision, fp16 for bf16 on a card without bf16."""
    return _effective_dtype(workload.precision, has_bf16)


def _effective_dtype(precision: str, has_bf16: bool) -> str:
    if precision == "bf16" and not has_bf16:
        return "fp16"
    return precision
