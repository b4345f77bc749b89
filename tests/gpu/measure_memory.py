"""Measure real peak GPU memory of training/serving steps, next to the estimate.

Usage:
    python tests/gpu/measure_memory.py --pairs pairs.json --out measured.csv
    python tests/gpu/measure_memory.py --cpu-dry-run --out dry.csv   # no GPU: tiny config on CPU

``pairs.json`` is a list of ``{"config": <config.json path or object>, "workload": {Workload
fields}}``. Each pair builds the model from its config with random weights (transformers,
no download), runs ``--steps`` optimizer steps (or one prefill for ``serve``) and records
``torch.cuda.max_memory_allocated`` / ``max_memory_reserved`` and the plan() estimate. LoRA
adapters are attached here (fp32 A/B with dropout on the frozen base, as PEFT does);
QLoRA needs bitsandbytes and is skipped without it. A row that runs out of memory is written
with status ``oom``.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from estimator import Workload, plan  # noqa: E402

COLUMNS = [
    "model",
    "method",
    "precision",
    "pure_16bit",
    "optimizer",
    "batch",
    "seq_len",
    "grad_checkpointing",
    "attention",
    "lora_rank",
    "lora_targets",
    "gpu",
    "torch",
    "date",
    "max_memory_allocated",
    "max_memory_reserved",
    "estimate_allocated",
    "estimate_reserved",
    "status",
]
TINY = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 128,
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=Path, help="JSON list of {config, workload}")
    parser.add_argument("--out", type=Path, required=True, help="CSV to write")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--cpu-dry-run", action="store_true", help="tiny config on CPU, no GPU")
    return parser.parse_args(argv)


def attach_lora(model: Any, w: Workload, leaves: set[str] | None = None) -> None:
    import torch
    from torch import nn

    class Adapter(nn.Module):
        def __init__(self, base: nn.Linear) -> None:
            super().__init__()
            self.base = base
            self.drop = nn.Dropout(w.lora_dropout) if w.lora_dropout > 0 else nn.Identity()
            self.a = nn.Linear(base.in_features, w.lora_rank, bias=False, device=base.weight.device)
            self.b = nn.Linear(
                w.lora_rank, base.out_features, bias=False, device=base.weight.device
            )
            nn.init.zeros_(self.b.weight)
            self.scale = w.lora_alpha / w.lora_rank

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out = self.base(x)
            return out + (self.b(self.a(self.drop(x.to(self.a.weight.dtype)))) * self.scale).to(
                out.dtype
            )

    for p in model.parameters():
        p.requires_grad_(False)
    # ``leaves``: the module names the estimator resolved role targets (qkv, mlp) to.
    targets = leaves if leaves is not None else (None if w.all_linear else set(w.lora_targets))
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if not isinstance(child, nn.Linear) or "lm_head" in full:
                continue
            if targets is None or child_name in targets:
                setattr(module, child_name, Adapter(child))


def _optimizer(params: list[Any], w: Workload) -> Any:
    import torch

    if w.optimizer == "sgd":
        return torch.optim.SGD(params, lr=1e-4)
    if w.optimizer == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=1e-4, relative_step=False, scale_parameter=False)
    if w.optimizer == "adamw8bit":
        import bitsandbytes as bnb

        return bnb.optim.AdamW8bit(params, lr=1e-4)
    return torch.optim.AdamW(
        params, lr=1e-4, foreach=w.adamw_impl == "foreach", fused=w.adamw_impl == "fused"
    )


def run_pair(config: dict[str, Any], w: Workload, device: str, steps: int) -> tuple[int, int, str]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(**config)
    cfg._attn_implementation = w.attention
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[w.precision]
    load_dtype = dtype if (w.pure_16bit or w.method in ("lora", "serve")) else torch.float32
    kwargs: dict[str, Any] = {"dtype": load_dtype}
    if w.method == "qlora":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=w.double_quant,
            bnb_4bit_compute_dtype=dtype,
        )
    model = AutoModelForCausalLM.from_config(cfg, **kwargs).to(device)
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    ids = torch.randint(0, cfg.vocab_size, (w.batch, w.seq_len), device=device)
    if w.method == "serve":
        with torch.no_grad():
            model(input_ids=ids, use_cache=True, logits_to_keep=1)
    else:
        if w.method in ("lora", "qlora"):
            from estimator.families import describe
            from estimator.memory.lora import resolve_targets

            resolved = resolve_targets(describe(config), w.lora_targets)
            attach_lora(model, w, None if resolved.names is None else set(resolved.modules))
        if w.grad_checkpointing:
            model.gradient_checkpointing_enable()
            model.enable_input_require_grads()
        model.train()
        opt = _optimizer([p for p in model.parameters() if p.requires_grad], w)
        autocast = dtype != torch.float32 and not w.pure_16bit
        for _ in range(steps):
            with torch.autocast(device, dtype=dtype, enabled=autocast):
                loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
        if not math.isfinite(float(loss)):
            return 0, 0, "non-finite loss"
    if device != "cuda":
        return 0, 0, "cpu-dry-run"
    return torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), "ok"


def measure(pairs: list[dict[str, Any]], out: Path, steps: int, device: str) -> None:
    import torch

    gpu = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    with out.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        for pair in pairs:
            config = pair["config"]
            if isinstance(config, str):
                config = json.loads(Path(config).read_text())
            w = Workload(
                **{
                    **pair.get("workload", {}),
                    "lora_targets": tuple(
                        pair.get("workload", {}).get("lora_targets", ("all-linear",))
                    ),
                }
            )
            estimate = plan(config, w).selected
            try:
                allocated, reserved, status = run_pair(config, w, device, steps)
            except torch.OutOfMemoryError:
                allocated, reserved, status = 0, 0, "oom"
            except ImportError as exc:
                allocated, reserved, status = 0, 0, f"skipped: {exc.name} missing"
            if device == "cuda":
                torch.cuda.empty_cache()
            writer.writerow(
                {
                    "model": config.get("_name_or_path") or config.get("model_type"),
                    "method": w.method,
                    "precision": w.precision,
                    "pure_16bit": w.pure_16bit,
                    "optimizer": w.optimizer,
                    "batch": w.batch,
                    "seq_len": w.seq_len,
                    "grad_checkpointing": w.grad_checkpointing,
                    "attention": w.attention,
                    "lora_rank": w.lora_rank,
                    "lora_targets": ",".join(w.lora_targets),
                    "gpu": gpu,
                    "torch": torch.__version__,
                    "date": dt.date.today().isoformat(),
                    "max_memory_allocated": allocated,
                    "max_memory_reserved": reserved,
                    "estimate_allocated": estimate.peak_allocated_bytes,
                    "estimate_reserved": estimate.reserved_bytes,
                    "status": status,
                }
            )
            handle.flush()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.cpu_dry_run:
        pairs = [
            {"config": TINY, "workload": {"method": m, "batch": 2, "seq_len": 16}}
            for m in ("full", "lora", "serve")
        ]
        measure(pairs, args.out, 1, "cpu")
        return 0
    import torch

    if not torch.cuda.is_available():
        print(
            "measure_memory: no CUDA device (use --cpu-dry-run to check the script)",
            file=sys.stderr,
        )
        return 2
    if args.pairs is None:
        print("measure_memory: --pairs is required on a GPU", file=sys.stderr)
        return 2
    measure(json.loads(args.pairs.read_text()), args.out, args.steps, "cuda")
    return 0


if __name__ == "__main__":
    sys.exit(main())
