"""CoPE: positions counted by content gates, not slots (Golovneva et al. 2024, arXiv:2405.18719)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pydantic import Field

from orderlab.encodings.encoding import EncodingParams, PositionalEncoding

if TYPE_CHECKING:
    import torch


class CopeParams(EncodingParams):
    npos_max: int = Field(64, ge=2, description="Position embeddings e[0..npos_max-1]; larger counts are clamped.")
    sigma: float = Field(1.0, gt=0, description="Std of the seeded N(0, sigma^2) position embeddings (untrained).")


class Cope(PositionalEncoding):
    """p_ij = sum of gates sigmoid(q_i.k_t) over t between j and i; bias = q_i . e[p_ij], e interpolated.

    The paper counts back from the query (causal); bidirectional stacks count the slots between i
    and j on either side, which the causal mask then cuts back to the paper's form.
    """

    name = "cope"
    kind = "bias"
    relative = True  # depends on the content between i and j, never on absolute slots
    shares_prefixes = True
    reference = "Golovneva et al. 2024, Contextual Position Encoding (arXiv:2405.18719); untrained here"
    Params = CopeParams

    def attention_bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        import torch

        (B, h, n, d_head), top = q.shape, self.params.npos_max - 1
        gates = torch.sigmoid(q @ k.transpose(-2, -1) / math.sqrt(d_head))  # (B, h, n, n): g[i, t]
        totals = gates.cumsum(-1)  # (B, h, n, n): sum of g[i, 0..t]
        slots = torch.arange(n, device=q.device)
        lo = torch.minimum(slots[:, None], slots[None, :]).expand(B, h, n, n)  # (B, h, n, n)
        hi = torch.maximum(slots[:, None], slots[None, :]).expand(B, h, n, n)
        counts = totals.gather(-1, hi) - totals.gather(-1, lo) + gates.gather(-1, lo)  # sum of g[i, lo..hi]
        counts = counts.clamp(max=top)  # (B, h, n, n), in (0, npos_max - 1]
        table = self.table(top + 1, d_head, sigma=self.params.sigma).to(q)  # (P, d_head)
        logits = q @ table.T / math.sqrt(d_head)  # (B, h, n, P): q_i . e[p]
        below = counts.floor().long()
        above = (below + 1).clamp(max=top)
        weight = counts - below  # (B, h, n, n), linear interpolation between e[floor] and e[floor + 1]
        return logits.gather(-1, below) * (1 - weight) + logits.gather(-1, above) * weight  # (B, h, n, n)
