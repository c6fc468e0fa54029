"""ALiBi: a per-head linear distance penalty on the scores (Press et al. 2022, arXiv:2108.12409)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import Field

from orderlab.encodings.encoding import EncodingParams, PositionalEncoding

if TYPE_CHECKING:
    import torch


class AlibiParams(EncodingParams):
    max_bias: float = Field(8.0, gt=0, description="Slopes are 2^(-max_bias*k/h), k = 1..h (8 in the paper).")


def alibi_slopes(n_heads: int, max_bias: float = 8.0) -> list[float]:
    """Geometric slopes 2^(-max_bias*k/h), k = 1..h, for h a power of two.

    Otherwise (as in the paper's code) the slopes of the largest power of two h' < h, followed by
    every other slope of 2h' until there are h.
    """
    if n_heads & (n_heads - 1) == 0:
        return [2 ** (-max_bias * k / n_heads) for k in range(1, n_heads + 1)]
    lower = 2 ** math.floor(math.log2(n_heads))
    return alibi_slopes(lower, max_bias) + alibi_slopes(2 * lower, max_bias)[0::2][: n_heads - lower]


class Alibi(PositionalEncoding):
    """bias[h, i, j] = -slope_h * |i - j| (bidirectional) or -slope_h * (i - j) for j <= i (causal)."""

    name = "alibi"
    kind = "bias"
    relative = True
    shares_prefixes = True
    reference = "Press et al. 2022, Train Short, Test Long (arXiv:2108.12409)"
    Params = AlibiParams

    def attention_bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        import torch

        n = q.shape[-2]
        slots = torch.arange(n, device=q.device)
        offset = slots[:, None] - slots[None, :]  # (n, n): i - j
        distance = offset.clamp(min=0) if self.context.causal else offset.abs()  # future slots are masked anyway
        slopes = torch.tensor(alibi_slopes(q.shape[1], self.params.max_bias), dtype=q.dtype, device=q.device)
        return -slopes[:, None, None] * distance.to(q.dtype)  # (h, n, n)
