"""Encodings whose hooks return NaN or inf (loaded by tests as plugins): their runs must say so, never judge."""

from __future__ import annotations

from orderlab.encodings.base import PositionalEncoding


class NanOffsets(PositionalEncoding):
    """Adds NaN at slot 1: every hidden state that attends to slot 1 becomes NaN."""

    name = "nan_offsets"
    kind = "additive"
    relative = False
    reference = "test plugin"

    def input_offsets(self, n):
        import torch

        offsets = torch.zeros(n, self.context.d_model, dtype=self.context.torch_dtype)
        offsets[1] = float("nan")
        return offsets


class InfBias(PositionalEncoding):
    """A +inf attention bias on the diagonal: softmax of inf - inf is NaN."""

    name = "inf_bias"
    kind = "bias"
    relative = True
    reference = "test plugin"

    def attention_bias(self, q, k):
        import torch

        n = q.shape[-2]
        return torch.diag(torch.full((n,), float("inf"), dtype=q.dtype))  # (n, n)
