"""Batches padded to whole matmul row tiles, so a sequence's numbers do not depend on its batch.

Used by the streaming runner and the pretrained backend: with it, chunked results equal unchunked
ones bit for bit, and the identity permutation matches its reference pass exactly, at any thread count.
And how many sequences a chunk holds (auto_chunk_size), which an adapter answers for the measuring loop.
"""

from __future__ import annotations

import math

import torch

from orderlab.models.attention_stack import StackConfig
from orderlab.plan.estimate import (
    CPU_CHUNK_BYTES,
    GPU_CHUNK_BYTES,
    ROW_ALIGNMENT,
    available_memory,
    sequence_values,
    sequences_per_chunk,
)


def aligned_batch(x: torch.Tensor) -> torch.Tensor:
    """x (B, n, ...) with copies of x[0] appended so that B * n is a multiple of ROW_ALIGNMENT."""
    B, n = x.shape[:2]
    pad = -B % (ROW_ALIGNMENT // math.gcd(n, ROW_ALIGNMENT))
    return torch.cat([x, x[:1].expand(pad, *x.shape[1:])]) if pad else x


def auto_chunk_size(config: StackConfig, n: int, attention_maps: bool, device: torch.device) -> int:
    """Sequences per chunk such that one chunk's activations fit the budget for `device`."""
    itemsize = torch.finfo(getattr(torch, config.dtype)).bits // 8
    values = sequence_values(n, config.d_model, config.ffn_mult, config.n_layers, config.n_heads, attention_maps)
    return sequences_per_chunk(values, itemsize, memory_budget(device, CPU_CHUNK_BYTES, GPU_CHUNK_BYTES))


def memory_budget(device: torch.device, cpu_bytes: int, gpu_bytes: int) -> int:
    """A chunk's bytes on `device`: its cap there, and no more than a quarter of the memory free now."""
    if device.type == "cuda":
        return min(gpu_bytes, torch.cuda.mem_get_info(device)[0] // 4)
    return min(cpu_bytes, available_memory() // 4)
