"""Rotary position embedding: rotates q and k by slot (Su et al., 2021, "RoFormer", arXiv:2104.09864)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from orderlab.encodings.encoding import EncodingContext, EncodingParams, PositionalEncoding

if TYPE_CHECKING:
    import torch


class RotaryParams(EncodingParams):
    base: float = Field(10000.0, gt=1, description="Frequency base: pair i turns by pos * base^(-2i/d_head).")
    style: Literal["interleaved", "half"] = Field(
        "interleaved",
        description="Which coordinates pair up: (2i, 2i+1) as RoFormer (interleaved), or (i, i + d_head/2) as "
        "Llama and GPT-NeoX (half, transformers' rotate_half).",
    )


def rotate_pairs(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each (x[2i], x[2i+1]) pair of x (..., n, d) by angles (n, d/2)."""
    import torch

    even, odd = x[..., 0::2], x[..., 1::2]
    cos, sin = angles.cos(), angles.sin()
    return torch.stack([even * cos - odd * sin, even * sin + odd * cos], dim=-1).flatten(-2)


def rotate_halves(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each (x[i], x[i + d/2]) pair of x (..., n, d) by angles (n, d/2): Llama's pairing."""
    import torch

    first, second = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    cos, sin = angles.cos(), angles.sin()
    return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)


def rotary_angles(n: int, d_head: int, base: float, dtype: Any, device: Any) -> torch.Tensor:
    """(n, d_head/2) angles pos * base^(-2i/d_head), computed in float64 then cast."""
    import torch

    slots = torch.arange(n, dtype=torch.float64)[:, None]
    frequencies = base ** (-torch.arange(0, d_head, 2, dtype=torch.float64) / d_head)
    return (slots * frequencies).to(dtype=dtype, device=device)


class Rotary(PositionalEncoding):
    """q_m . k_n after rotation depends on the content and on the offset m - n only."""

    name = "rope"
    kind = "rotary"
    relative = True
    shares_prefixes = True
    reference = "Su et al. 2021, RoFormer (arXiv:2104.09864)"
    Params = RotaryParams

    @classmethod
    def validate(cls, context: EncodingContext, params: dict[str, Any]) -> None:
        super().validate(context, params)
        if context.d_head % 2:
            raise ValueError(
                f"rope needs an even head size, got d_model / n_heads = {context.d_head}; "
                "expected d_model / n_heads to be even"
            )

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        angles = rotary_angles(q.shape[-2], q.shape[-1], self.params.base, q.dtype, q.device)
        rotate = rotate_pairs if self.params.style == "interleaved" else rotate_halves
        return rotate(q, angles), rotate(k, angles)
