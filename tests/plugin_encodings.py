"""Encodings a user might write: one that fits the protocol and several that do not (loaded by tests as plugins)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from orderlab.encodings.encoding import PositionalEncoding, torch_dtype


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

        slots = torch.arange(q.shape[-2], dtype=q.dtype, device=q.device)
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


# --- encodings that misbehave only when used: each must end in one line naming the class, exit 2 ---------


class RaisesInInit(SquaredDistance):
    def __init__(self, context, params=None):
        super().__init__(context, params)
        self.scale = 1 / 0


class RaisesInCheck(SquaredDistance):
    @classmethod
    def validate(cls, context, params):
        raise TypeError("check got confused")


class ExitsInInit(SquaredDistance):
    def __init__(self, context, params=None):
        raise SystemExit(3)


class RaisesAtRunTime(SquaredDistance):
    """Fine on the three slots it is tried on before a run, broken on longer sentences."""

    def attention_bias(self, q, k):
        if q.shape[-2] > 3:
            raise RuntimeError("only three slots")
        return super().attention_bias(q, k)


class RaisesPastSixteenSlots(SquaredDistance):
    """Like an untrained table of 16 rows: measured at N = 16 slots it works, at 2N it cannot."""

    def attention_bias(self, q, k):
        if q.shape[-2] > 16:
            raise IndexError("no row past slot 15")
        return super().attention_bias(q, k)


class ExitsAtRunTime(SquaredDistance):
    def rotate(self, q, k):
        if q.shape[-2] > 3:
            raise SystemExit(4)
        return q, k


class WrongShapeAtRunTime(SquaredDistance):
    """Offsets of three slots whatever the length: right for the check, wrong for a longer sentence."""

    kind = "additive"

    def input_offsets(self, n):
        import torch

        return torch.zeros(3, self.context.d_model, dtype=torch_dtype(self.context))


class ReturnsAList(SquaredDistance):
    def attention_bias(self, q, k):
        return super().attention_bias(q, k).tolist()


class ReturnsComplex(SquaredDistance):
    def attention_bias(self, q, k):
        return super().attention_bias(q, k) * 1j


class ReturnsOneRotation(SquaredDistance):
    kind = "rotary"

    def rotate(self, q, k):
        return q


class WrongDevice(SquaredDistance):
    def attention_bias(self, q, k):
        return super().attention_bias(q, k).to("meta")


class Float64Bias(SquaredDistance):
    """A float64 bias whatever the run's dtype: cast to q's dtype, it must work in a float32 run."""

    def attention_bias(self, q, k):
        return super().attention_bias(q, k).double()
