"""xPos: RoPE whose q.k decays with distance (Sun et al. 2023, arXiv:2212.10554)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from orderlab.encodings.encoding import EncodingContext, EncodingParams, PositionalEncoding
from orderlab.encodings.rope import Rotary, rotary_angles, rotate_pairs

if TYPE_CHECKING:
    import torch


class XposParams(EncodingParams):
    base: float = Field(10000.0, gt=1, description="Rotation frequency base, as in rope.")
    gamma: float = Field(0.4, gt=0, description="Pair i decays by zeta_i = (2i/d_head + gamma)/(1 + gamma).")
    scale_base: float = Field(512.0, gt=0, description="Slots over which pair i's scale changes by a factor zeta_i.")


class Xpos(PositionalEncoding):
    """q_m -> R_m q_m * zeta^(m/B), k_n -> R_n k_n * zeta^(-n/B): q.k depends on m - n, decaying with it."""

    name = "xpos"
    kind = "rotary"
    relative = True
    shares_prefixes = True
    reference = "Sun et al. 2023, A Length-Extrapolatable Transformer (arXiv:2212.10554)"
    Params = XposParams

    @classmethod
    def validate(cls, context: EncodingContext, params: dict[str, Any]) -> None:
        cls.parse_params(params)
        Rotary.validate(context, {})

    def rotate(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        p, (n, d_head) = self.params, q.shape[-2:]
        angles = rotary_angles(n, d_head, p.base, q.dtype, q.device)  # (n, d_head/2)
        pairs = torch.arange(0, d_head, 2, dtype=torch.float64)  # (d_head/2,) = 2i
        zeta = (pairs / d_head + p.gamma) / (1 + p.gamma)  # (d_head/2,), each in (0, 1]
        power = torch.arange(n, dtype=torch.float64)[:, None] / p.scale_base  # (n, 1)
        scale = (zeta**power).repeat_interleave(2, dim=-1).to(q)  # (n, d_head): one factor per pair, both halves
        return rotate_pairs(q, angles) * scale, rotate_pairs(k, angles) / scale
