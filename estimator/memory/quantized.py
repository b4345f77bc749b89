"""Serving weight formats: bytes per quantised weight, what stays 16-bit, and the kernels' scratch.

Each format is counted from the tensors the engines allocate per linear
(``in`` x ``out`` weights, group size ``g``):

* ``awq`` (vLLM ``vllm/model_executor/layers/quantization/awq.py``,
  ``AWQLinearMethod.create_weights``): ``qweight`` int32 [in, out/8],
  ``qzeros`` int32 [in/g, out/8], ``scales`` 16-bit [in/g, out]: 0.5 + 2.5/g B
  per weight. From 256 tokens on, ``apply`` dequantises the whole weight to
  16 bit (``awq_dequantize``) before ``torch.matmul``: one fused linear's
  16-bit copy during prefill.
* ``gptq`` / ``int4`` (vLLM ``gptq.py``): ``qweight`` int32 [in/8, out],
  ``qzeros`` [in/g, out/8], ``scales`` [in/g, out] and ``g_idx`` int32 [in]:
  AWQ's bytes plus 4 B per input row. Group size 128, the AutoGPTQ/AutoAWQ
  default quantisation config. The exllama/marlin kernels' workspace is a few
  MB (``marlin_make_workspace``: one int32 per SM); the dequantised copy is
  counted as for AWQ (the exllama path reconstructs the weight for prompts).
* ``nf4`` (bitsandbytes ``Params4bit``, blocksize 64): 0.5 B plus an fp32
  absmax per 64 weights (8-bit with one fp32 per 256 blocks when double
  quantised); ``matmul_4bit`` dequantises the weight for prompts.
* ``int8`` (bitsandbytes ``Int8Params``, LLM.int8()): 1 B plus an fp32 scale per
  output row; the int32 product of the running linear is scratch.
* ``fp8`` (vLLM ``fp8.py``, per-tensor scales): 1 B per weight; the input is
  quantised to fp8 (1 B per element) for the GEMM. Block-wise checkpoints
  (DeepSeek-V3's ``weight_block_size`` [128, 128]) add one fp32 scale per
  16,384 weights, under 0.03%: not counted.
* ``mxfp4`` (OCP microscaling, gpt-oss; transformers ``integrations/mxfp4.py``,
  vLLM ``mxfp4.py``): 4-bit E2M1 values with one E8M0 byte per 32 inputs of an
  output, 4.25 bits per weight.

The group size of AWQ/GPTQ scales is the workload's ``quant_group_size``
(the checkpoint's ``quantization_config.group_size``; 0 is one scale per
output channel); MXFP4's block of 32 is part of the format.

Embeddings, the LM head, norms, biases and MoE routers stay in the 16-bit
dtype (vLLM builds ``lm_head`` and the router ``gate`` without a quant method).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from estimator.architecture import Architecture, Block

GROUP_SIZE: Final = 128
NF4_BLOCK: Final = 64
NF4_DOUBLE_QUANT_BLOCK: Final = 256
DEQUANT_FROM_TOKENS: Final = 256  # vLLM AWQ: FP16_MATMUL_HEURISTIC_CONDITION


@dataclass(frozen=True)
class WeightFormat:
    """Bytes of one quantised linear and the scratch its kernel needs."""

    name: str
    bits: float
    group_bytes: float  # per group of GROUP_SIZE inputs and per output (scales + zeros)
    row_bytes: float  # per input row (g_idx)
    col_bytes: float  # per output column (per-row scales)
    dequantises: bool  # reconstructs the 16-bit weight for prompts
    int32_output: bool = False
    fixed_group: int = 0  # a group size the format defines (MXFP4's 32), else the workload's


FORMATS: Final[dict[str, WeightFormat]] = {
    "awq": WeightFormat("awq", 4, 2.5, 0.0, 0.0, True),
    "gptq": WeightFormat("gptq", 4, 2.5, 4.0, 0.0, True),
    "int4": WeightFormat("int4", 4, 2.5, 4.0, 0.0, True),
    "nf4": WeightFormat("nf4", 4, 0.0, 0.0, 0.0, True),
    "int8": WeightFormat("int8", 8, 0.0, 0.0, 4.0, False, int32_output=True),
    "fp8": WeightFormat("fp8", 8, 0.0, 0.0, 0.0, False),
    "mxfp4": WeightFormat("mxfp4", 4, 1.0, 0.0, 0.0, True, fixed_group=32),
}


def per_weight_bytes(fmt: WeightFormat, double_quant: bool, group_size: int = GROUP_SIZE) -> float:
    """Bytes per weight of the packed values, their group scales and NF4's block constants
    (the per-input-row and per-output-column tensors aside); ``group_size`` 0: per channel."""
    total = fmt.bits / 8
    group = fmt.fixed_group or group_size
    if group:
        total += fmt.group_bytes / group
    if fmt.name == "nf4":
        absmax = 1 + 4 / NF4_DOUBLE_QUANT_BLOCK if double_quant else 4
        total += absmax / NF4_BLOCK
    return total


def linear_bytes(
    fmt: WeightFormat,
    in_features: int,
    out_features: int,
    double_quant: bool,
    group_size: int = GROUP_SIZE,
) -> float:
    """Stored bytes of one quantised ``in`` x ``out`` weight (``group_size`` 0: per channel)."""
    total = in_features * out_features * per_weight_bytes(fmt, double_quant, group_size)
    if not (fmt.fixed_group or group_size):
        total += fmt.group_bytes * out_features  # one group spanning every input
    return total + fmt.row_bytes * in_features + fmt.col_bytes * out_features


def _is_router(block: Block, in_features: int, out_features: int, copies: int) -> bool:
    moe = block.moe
    return moe is not None and copies == 1 and out_features == moe.num_experts


@dataclass(frozen=True)
class QuantisedWeights:
    """Quantised serving weights (bytes), parameters kept 16-bit, and dequantisation scratch."""

    quantised_bytes: float
    unquantised_parameters: int
    scratch_per_token: float  # bytes per prompt token (fp8 input, int8 product)
    scratch_fixed: float  # the dequantised copy of the largest fused linear


def quantised_weights(
    arch: Architecture,
    fmt: WeightFormat,
    double_quant: bool,
    prompt_tokens: int,
    compute: int,
    group_size: int = GROUP_SIZE,
    unquantized: tuple[str, ...] = (),
) -> QuantisedWeights:
    """Block linears in ``fmt``; everything else (each router, and linears under the
    ``unquantized`` module prefixes the checkpoint keeps 16-bit) in the compute dtype."""
    per_template: dict[int, tuple[float, int, float, float]] = {}
    quantised = 0.0
    linear_params = 0
    widest = 0.0
    per_token = 0.0
    for block, count in arch.block_groups:
        key = id(block.linears)
        if key not in per_template:
            stored = 0.0
            params = 0
            fused: dict[tuple[int, str], int] = {}
            for lin in block.linears:
                if _is_router(block, lin.in_features, lin.out_features, lin.copies):
                    continue
                if unquantized and lin.name.startswith(unquantized):
                    continue
                stored += lin.copies * linear_bytes(
                    fmt, lin.in_features, lin.out_features, double_quant, group_size
                )
                params += lin.copies * lin.in_features * lin.out_features
                part = (lin.in_features, lin.name.rpartition(".")[0])
                fused[part] = fused.get(part, 0) + lin.out_features
            # Linears of one module reading one input are one fused GEMM in the
            # engines (qkv_proj, gate_up_proj).
            big = max((i * o for (i, _), o in fused.items()), default=0)
            io = max((i + o for (i, _), o in fused.items()), default=0)
            per_template[key] = (stored, params, float(big), float(io))
        t_stored, t_params, t_big, t_io = per_template[key]
        quantised += t_stored * count
        linear_params += t_params * count
        widest = max(widest, t_big)
        per_token = max(per_token, t_io)
    unquantised = arch.total_parameters - linear_params
    fixed = widest * compute if fmt.dequantises and prompt_tokens >= DEQUANT_FROM_TOKENS else 0.0
    scratch_token = per_token * (4 if fmt.int32_output else 1 if fmt.name == "fp8" else 0)
    return QuantisedWeights(quantised, unquantised, scratch_token, fixed)
