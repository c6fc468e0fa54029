"""Replacement position-embedding tables, applied in memory to a loaded model (never to files on disk).

trained: the table as shipped. zero: all zeros, so the model sees a bag of tokens and its outputs
are permutation-equivariant (mean pooling: invariant). shuffled: the trained rows in a seeded
random order (distinct codes, scrambled geometry). sinusoidal: Vaswani et al.'s codes scaled to
the trained table's mean row norm, so the ablation changes the pattern, not the magnitude. torch is imported inside
the function (orderlab/families is torch-free at import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orderlab.encodings import EncodingContext, build_encoding

if TYPE_CHECKING:
    import torch


def position_table(ablation: str, trained: torch.Tensor, seed: int) -> torch.Tensor:
    """The (max_positions, d) table for `ablation`, derived from the trained one (never modified)."""
    import torch

    slots, width = trained.shape
    if ablation == "trained":
        return trained.clone()
    if ablation == "zero":
        return torch.zeros_like(trained)
    if ablation == "shuffled":
        order = torch.randperm(slots, generator=torch.Generator().manual_seed(seed))  # (P,)
        return trained[order.to(trained.device)].clone()
    if ablation == "sinusoidal":
        context = EncodingContext(d_model=width, n_heads=1, causal=False, seed=seed, dtype="float64", max_len=slots)
        codes = build_encoding("sinusoidal", context).input_offsets(slots)  # (P, d)
        assert codes is not None
        scale: torch.Tensor = trained.double().norm(dim=1).mean() / codes.norm(dim=1).mean()
        return (codes * scale).to(trained)
    raise ValueError(f"unknown position ablation {ablation!r}")
