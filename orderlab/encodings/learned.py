"""Learned absolute positions: one vector per slot added to the input (Devlin et al. 2019, BERT, arXiv:1810.04805).

Untrained here: the table is seeded N(0, sigma^2), so it shows what a learned table can encode
before training (unique codes, no smoothness, nothing past max_len), not what training makes of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from orderlab.encodings.encoding import EncodingContext, EncodingParams, PositionalEncoding

if TYPE_CHECKING:
    import torch


class LearnedParams(EncodingParams):
    max_len: int = Field(512, ge=1, description="Rows in the table; longer sentences are an error.")
    sigma: float = Field(1.0, gt=0, description="Std of the seeded N(0, sigma^2) entries (untrained).")


class Learned(PositionalEncoding):
    """Untrained (seeded N(0, sigma^2)) table of max_len slot vectors added to the tokens."""

    name = "learned"
    kind = "additive"
    relative = False
    shares_prefixes = True
    reference = "Devlin et al. 2019, BERT (arXiv:1810.04805); untrained here"
    Params = LearnedParams

    @classmethod
    def validate(cls, context: EncodingContext, params: dict[str, Any]) -> None:
        parsed = cls.parse_params(params)
        if context.max_len > parsed.max_len:
            raise ValueError(too_long(context.max_len, parsed.max_len))

    def input_offsets(self, n: int) -> torch.Tensor:
        if n > self.params.max_len:
            raise ValueError(too_long(n, self.params.max_len))
        p = self.params
        table = self.table(p.max_len, self.context.d_model, sigma=p.sigma)  # (max_len, d)
        return table[:n]  # (n, d_model)


def too_long(n: int, max_len: int) -> str:
    return f"learned: a sentence of {n} tokens is longer than max_len={max_len}; expected max_len >= {n}"
