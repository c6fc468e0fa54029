"""Pure functions of tensors that measure order sensitivity (definitions: docs/metrics.md).

Conventions: X is (n, d); a batch of B permutations `perms` is a (B, n) long tensor where the
permuted sentence holds at slot i the token from slot perms[b, i], so (P H)[b, i] = H[perms[b, i]].
Norms are Frobenius; relative errors divide by the norm of the reference (unpermuted) side.
"""

from __future__ import annotations

import torch


def ratio(numerator: torch.Tensor, denominator: torch.Tensor) -> torch.Tensor:
    """numerator / denominator, with 0/0 = 0 (both sides vanish: no difference to report).

    x/0 is inf and NaN stays NaN: a non-finite number is reported as such, never as 0.
    """
    both_zero = (numerator == 0) & (denominator == 0)
    return torch.where(both_zero, torch.zeros_like(numerator), numerator / denominator)


def permute_slots(h: torch.Tensor, perms: torch.Tensor) -> torch.Tensor:
    """P H for each permutation: (n, ...) and (B, n) -> (B, n, ...)."""
    return h[perms]


def equivariance_error(h_of_px: torch.Tensor, h_of_x: torch.Tensor, perms: torch.Tensor) -> torch.Tensor:
    """||H(PX) - P H(X)|| / ||H(X)||, per permutation: (B, n, d), (n, d), (B, n) -> (B,)."""
    difference = (h_of_px - permute_slots(h_of_x, perms)).flatten(1).norm(dim=1)
    return ratio(difference, h_of_x.norm().expand_as(difference))


def attention_equivariance_error(a_of_px: torch.Tensor, a_of_x: torch.Tensor, perms: torch.Tensor) -> torch.Tensor:
    """||A(PX) - P A(X) P^T|| / ||A(X)|| per permutation and head: (B, h, n, n), (h, n, n), (B, n) -> (B, h)."""
    rows = perms[:, None, :, None]  # (B, 1, n, 1)
    cols = perms[:, None, None, :]  # (B, 1, 1, n)
    heads = torch.arange(a_of_x.shape[0], device=a_of_x.device)[None, :, None, None]  # (1, h, 1, 1)
    expected = a_of_x[heads, rows, cols]  # (B, h, n, n): [b, h, i, j] = A[h, p_i, p_j]
    difference = (a_of_px - expected).flatten(2).norm(dim=-1)  # (B, h)
    return ratio(difference, a_of_x.flatten(1).norm(dim=-1).expand_as(difference))


def token_shift(h_of_px: torch.Tensor, h_of_x: torch.Tensor, matching: torch.Tensor) -> torch.Tensor:
    """Mean over slots i of ||H(PX)[i] - H(X)[m[i]]|| / ||H(X)[m[i]]||, m matching word occurrences.

    (B, n, d), (n, d), (B, n) -> (B,). With m = the permutation this is a per-token equivariance
    error; m differs where repeated words are matched by order of occurrence.
    """
    reference = h_of_x[matching]  # (B, n, d)
    return ratio((h_of_px - reference).norm(dim=-1), reference.norm(dim=-1)).mean(dim=-1)


def cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """1 - cos(a, b) over the last axis, computed as ||a/|a| - b/|b|||^2 / 2; 0 for identical directions.

    The two are equal in exact arithmetic, but 1 - cos cancels: cos rounds to within eps of 1, so an angle
    of 1e-3 rad (a distance of 5e-7) read 0 or noise in float32. The difference of unit vectors keeps its
    relative precision down to angles near eps. A zero or non-finite vector gives NaN.
    """
    return (unit_vectors(a) - unit_vectors(b)).square().sum(dim=-1).div(2)


def unit_vectors(a: torch.Tensor) -> torch.Tensor:
    """a / ||a|| over the last axis, scaled by its largest entry first: the norm's squares neither overflow
    (float32 past 1.8e19) nor underflow, which would turn every direction into 0 (a distance of 0, a false verdict)."""
    scaled = a / a.abs().amax(dim=-1, keepdim=True)
    return scaled.div(scaled.norm(dim=-1, keepdim=True))


def relative_l2(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """||b - a|| / ||a|| over the last axis."""
    return ratio((b - a).norm(dim=-1), a.norm(dim=-1))


def prefix_invariance_error(h_of_px: torch.Tensor, h_of_x: torch.Tensor) -> torch.Tensor:
    """||H(PX)[-1] - H(X)[-1]|| / ||H(X)[-1]||, for P that keep the last slot: (B, n, d), (n, d) -> (B,)."""
    reference = h_of_x[-1]  # (d,)
    difference = (h_of_px[:, -1] - reference).norm(dim=-1)  # (B,)
    return ratio(difference, reference.norm().expand_as(difference))


def repeated_word_distance(h: torch.Tensor, pairs: torch.Tensor, cosine: bool = False) -> torch.Tensor:
    """Mean over same-word slot pairs (i, j) of ||H[i] - H[j]|| / ||H[i]|| (or 1 - cos): (B, n, d), (B, m, 2) -> (B,).

    0 means the stack cannot tell the two occurrences of a word apart at this layer.
    """
    batch = torch.arange(h.shape[0], device=h.device)[:, None]  # (B, 1)
    first, second = h[batch, pairs[..., 0]], h[batch, pairs[..., 1]]  # (B, m, d)
    if cosine:
        return cosine_distance(first, second).mean(dim=-1)
    return relative_l2(first, second).mean(dim=-1)
