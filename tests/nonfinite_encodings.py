"""Encodings whose hooks return NaN or inf (loaded by tests as plugins): their runs must say so, never judge."""

from __future__ import annotations

from orderlab.encodings.encoding import PositionalEncoding, torch_dtype


class NanOffsets(PositionalEncoding):
    """Adds NaN at slot 1: every hidden state that attends to slot 1 becomes NaN."""

    name = "nan_offsets"
    kind = "additive"
    relative = False
    reference = "test plugin"

    def input_offsets(self, n):
        import torch

        offsets = torch.zeros(n, self.context.d_model, dtype=torch_dtype(self.context))
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


class NanRotation(PositionalEncoding):
    """Rotates q into NaN at the last slot."""

    name = "nan_rotation"
    kind = "rotary"
    relative = False
    reference = "test plugin"

    def rotate(self, q, k):
        q = q.clone()
        q[..., -1, :] = float("nan")
        return q, k


class WindowMask(PositionalEncoding):
    """A -inf bias on keys more than one slot away: a mask, which a bias may hold (its run is finite)."""

    name = "window_mask"
    kind = "bias"
    relative = True
    reference = "test plugin"

    def attention_bias(self, q, k):
        import torch

        slots = torch.arange(q.shape[-2], device=q.device)
        far = (slots[:, None] - slots[None, :]).abs() > 1
        return torch.zeros(far.shape, dtype=q.dtype, device=q.device).masked_fill(far, float("-inf"))
