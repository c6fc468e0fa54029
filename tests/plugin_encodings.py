"""Encodings a user might write: one that fits the protocol and several that do not (loaded by tests as plugins)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from orderlab.encodings.base import PositionalEncoding


class SquaredDistanceParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    width: float = Field(2.0, gt=0, description="Slots at which the penalty reaches 1/2.")


class SquaredDistance(PositionalEncoding):
    """bias[i, j] = -(i - j)^2 / (2 width^2): a Gaussian window, shared by all heads."""

    name = "squared_distance"
    kind = "bias"
    relative = True
    reference = "test plugin"
    Params = SquaredDistanceParams

    def attention_bias(self, q, k):
        import torch

        slots = torch.arange(q.shape[-2], dtype=q.dtype)
        return -((slots[:, None] - slots[None, :]) ** 2) / (2 * self.params.width**2)  # (n, n)


class NotAnEncoding:
    """Has the right names but is not a PositionalEncoding."""

    name, kind, relative, reference = "not", "bias", True, "-"


class WrongKind(SquaredDistance):
    kind = "sideways"


class NoDefaultParams(BaseModel):
    width: float


class NoDefault(SquaredDistance):
    Params = NoDefaultParams


class WrongShape(SquaredDistance):
    """Returns one bias entry too many per side."""

    def attention_bias(self, q, k):
        import torch

        n = q.shape[-2] + 1
        return torch.zeros(n, n, dtype=q.dtype)
