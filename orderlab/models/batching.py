"""Batches padded to whole matmul row tiles, so a sequence's numbers do not depend on its batch.

Used by the streaming runner and the pretrained backend: with it, chunked results equal unchunked
ones bit for bit, and the identity permutation matches its reference pass exactly, at any thread count.
"""

from __future__ import annotations

import math

import torch

# Rows of every matmul are padded to a multiple of this: CPU GEMM kernels work on row tiles, and a
# last, partial tile takes another code path whose results can differ in the last bit (measured:
# float64 rows differ unless the row count is a multiple of 4). In full tiles a sequence's numbers
# are the same whatever else is in its chunk.
ROW_ALIGNMENT = 16


def aligned_batch(x: torch.Tensor) -> torch.Tensor:
    """x (B, n, ...) with copies of x[0] appended so that B * n is a multiple of ROW_ALIGNMENT."""
    B, n = x.shape[:2]
    pad = -B % (ROW_ALIGNMENT // math.gcd(n, ROW_ALIGNMENT))
    return torch.cat([x, x[:1].expand(pad, *x.shape[1:])]) if pad else x
