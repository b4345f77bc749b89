"""An engine's start-up decision: ``EngineVerdict``, what ``plan --json`` prints as ``serving.engine``.

Every byte figure is per GPU. ``error`` is the engine's own message, worded
as the modelled version words it, so a user can search for it; it is None
exactly when ``starts`` is true.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GIB = 2**30
DISPLAY = {"vllm": "vLLM", "sglang": "SGLang", "tgi": "TGI", "transformers": "transformers"}


@dataclass(frozen=True)
class EngineVerdict:
    """One engine start-up, bytes per GPU; ``error``: the engine's message, None iff it starts."""

    name: str
    version_modelled: str
    card: str
    total_memory_bytes: int
    tensor_parallel: int
    settings: tuple[tuple[str, Any], ...]
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    reserved_bytes: int
    kv_cache_bytes: int
    kv_cache_tokens: int
    max_model_len: int
    max_concurrency: float | None
    starts: bool
    error: str | None
    max_model_len_that_starts: int
    assumptions: tuple[str, ...]
    sources: tuple[str, ...]

    def summary(self) -> str:
        """One or two lines for the terminal: starts or not, and the KV cache it would hold."""
        head = f"{DISPLAY.get(self.name, self.name)} ({self.version_modelled}) on {self.card}"
        if self.tensor_parallel > 1:
            head += f" x{self.tensor_parallel} (tensor parallel)"
        if self.starts:
            conc = "" if self.max_concurrency is None else f", {self.max_concurrency:.2f}x"
            return (
                f"{head}: starts; KV cache {self.kv_cache_bytes / GIB:.2f} GiB per GPU = "
                f"{self.kv_cache_tokens:,} tokens{conc} at max_model_len {self.max_model_len:,}"
            )
        fix = (
            f"largest that starts: {self.max_model_len_that_starts:,}"
            if self.max_model_len_that_starts
            else "no max_model_len starts on this card"
        )
        return (
            f"{head}: does not start at max_model_len {self.max_model_len:,} "
            f"(KV cache {self.kv_cache_tokens:,} tokens; {fix})\n  {self.error}"
        )
