"""From allocated bytes to what nvidia-smi shows.

``torch.cuda.max_memory_allocated`` counts live tensors only. The caching
allocator reserves more (segments it keeps for reuse, fragmented by
odd-sized transient blocks): ``max_memory_reserved``. nvidia-smi adds the
CUDA context (driver state and loaded kernels: 0.3-1.4 GB depending on the
card, the CUDA version and lazy module loading) and, with several GPUs,
the communication library's buffers.
"""

from __future__ import annotations

from typing import Final

NCCL_BYTES: Final = 1_500_000_000


def context_bytes(card_context: int, gpus: int) -> int:
    """Bytes outside PyTorch's allocator: CUDA context, plus NCCL's buffers with several GPUs."""
    return card_context + (NCCL_BYTES if gpus > 1 else 0)
