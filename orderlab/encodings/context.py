"""What an encoding may depend on, and nothing else: the stack's shape, the seed and where tensors live.

A plain dataclass, torch-free, so that the spec layer can build one when it validates an encoding's parameters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EncodingContext:
    """What an encoding may depend on: the stack's shape, the seed and where tensors live."""

    d_model: int
    n_heads: int
    causal: bool
    seed: int
    dtype: str = "float64"
    max_len: int = 512
    device: str = "cpu"

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads
