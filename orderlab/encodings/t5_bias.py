"""T5 relative bias: a scalar per (head, distance bucket) added to the scores (Raffel et al. 2020, arXiv:1910.10683)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from pydantic import Field

from orderlab.encodings.encoding import EncodingContext, EncodingParams, PositionalEncoding

if TYPE_CHECKING:
    import torch


class T5Params(EncodingParams):
    num_buckets: int = Field(32, ge=4, description="Distance buckets (halved per direction when bidirectional).")
    max_distance: int = Field(128, ge=2, description="Distances from here on share the last bucket.")
    sigma: float = Field(1.0, gt=0, description="Std of the seeded N(0, sigma^2) bias table (untrained).")


def relative_buckets(offset: torch.Tensor, bidirectional: bool, num_buckets: int, max_distance: int) -> torch.Tensor:
    """Bucket of each query-minus-key offset i - j: exact for small distances, log-spaced up to max_distance.

    Bidirectional: the upper half of the buckets is for keys after the query (i - j < 0).
    Causal: keys after the query all fall in bucket 0 (they are masked anyway).
    """
    import torch

    if bidirectional:
        num_buckets //= 2
        side = (offset < 0).long() * num_buckets
        distance = offset.abs()
    else:
        side = torch.zeros_like(offset)
        distance = offset.clamp(min=0)
    exact = num_buckets // 2
    scaled = torch.log(distance.clamp(min=1).double() / exact) / math.log(max_distance / exact)
    far = (exact + (scaled * (num_buckets - exact)).long()).clamp(max=num_buckets - 1)
    return side + torch.where(distance < exact, distance, far)


class T5Bias(PositionalEncoding):
    """bias[h, i, j] = table[h, bucket(i - j)], the table seeded N(0, sigma^2) (untrained)."""

    name = "t5"
    kind = "bias"
    relative = True
    shares_prefixes = True
    reference = "Raffel et al. 2020, T5 (arXiv:1910.10683); untrained table here"
    Params = T5Params

    @classmethod
    def validate(cls, context: EncodingContext, params: dict[str, Any]) -> None:
        parsed = cls.parse_params(params)
        exact = (parsed.num_buckets // (1 if context.causal else 2)) // 2
        if parsed.max_distance <= exact:
            raise ValueError(f"t5: max_distance={parsed.max_distance} must exceed the {exact} exact buckets")

    def attention_bias(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        import torch

        p, n = self.params, q.shape[-2]
        slots = torch.arange(n, device=q.device)
        offset = slots[:, None] - slots[None, :]  # (n, n): i - j
        buckets = relative_buckets(offset, not self.context.causal, p.num_buckets, p.max_distance)  # (n, n)
        table = self.table(q.shape[1], p.num_buckets, sigma=p.sigma)  # (h, buckets)
        return table.to(q)[:, buckets]  # (h, n, n)
