"""Batches padded to whole matmul row tiles, so a sequence's numbers do not depend on its batch; and how an adapter is
told its chunk sizes.

Used by the streaming runner and the pretrained backend: with it, chunked results equal unchunked
ones bit for bit, and the identity permutation matches its reference pass exactly, at any thread count.
The row alignment and the rule that sizes a chunk are the plan's (plan/chunks.py): the models receive them as a
Batching (orderlab/measure/chunking.py binds the rule to a device) and import no cost model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch

from orderlab.families.family import ModelShape
from orderlab.metrics import Model


class ChunkSizer(Protocol):
    def __call__(
        self, model: Model, shape: ModelShape, tokens: int, attention: bool, shared: bool, itemsize: int
    ) -> int:
        """Orders of an n-token sentence per forward pass of a model of `shape` in a dtype of `itemsize` bytes;
        shared: the pass walks a causal LM's prefixes through its KV cache (models/kv_prefix.py)."""
        ...


@dataclass(frozen=True)
class Batching:
    """How an adapter cuts and pads its passes on its device."""

    row_alignment: int  # rows of every matmul padded to a multiple of this (1: unpadded)
    chunk_size: ChunkSizer
    # A causal LM's prefix walk runs its top depths as one packed call while they hold at most this many tokens
    # (models/kv_prefix.py, top_pass): fewer, larger calls for a GPU. 0: a call per depth, as every committed result.
    packed_tokens: int = 0
    # A causal LM's prefix walk runs each depth's call through torch.compile with this backend, its rows padded to
    # static shape buckets (models/hf/capture.py). "": eager, as every committed result.
    capture: str = ""


def aligned_batch(x: torch.Tensor, alignment: int) -> torch.Tensor:
    """x (B, n, ...) with copies of x[0] appended so that B * n is a multiple of `alignment`."""
    B, n = x.shape[:2]
    pad = -B % (alignment // math.gcd(n, alignment))
    return torch.cat([x, x[:1].expand(pad, *x.shape[1:])]) if pad else x


def pad_to_tiles(rows: torch.Tensor, alignment: int) -> torch.Tensor:
    """rows (U,) with copies of rows[0] appended up to a multiple of `alignment` (row-tile determinism)."""
    return padded_to(rows, len(rows) + -len(rows) % alignment)


def padded_to(rows: torch.Tensor, size: int) -> torch.Tensor:
    """rows (U,) with copies of rows[0] appended up to `size`."""
    pad = size - len(rows)
    return torch.cat([rows, rows[:1].expand(pad)]) if pad else rows
