"""Sinusoidal absolute encoding added to the input (Vaswani et al., 2017, "Attention Is All You Need")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from orderlab.encodings.encoding import EncodingParams, PositionalEncoding, torch_dtype

if TYPE_CHECKING:
    import torch


class SinusoidalParams(EncodingParams):
    base: float = Field(10000.0, gt=1, description="Wavelength base: the slowest pair has period 2*pi*base.")


class Sinusoidal(PositionalEncoding):
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(pos / base^(2i/d))."""

    name = "sinusoidal"
    kind = "additive"
    relative = False
    shares_prefixes = True
    reference = "Vaswani et al. 2017, Attention Is All You Need"
    Params = SinusoidalParams

    def input_offsets(self, n: int) -> torch.Tensor:
        import torch

        d = self.context.d_model
        slots = torch.arange(n, dtype=torch.float64)[:, None]  # (n, 1)
        pair = torch.arange(0, d, 2, dtype=torch.float64)  # (ceil(d/2),) = 2i
        angles = slots / self.params.base ** (pair / d)  # (n, ceil(d/2))
        table = torch.stack([angles.sin(), angles.cos()], dim=-1).reshape(n, -1)[:, :d]  # interleave sin, cos
        return table.to(torch_dtype(self.context))
