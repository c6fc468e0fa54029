"""The fused attention path (no maps) agrees with the explicit path to round-off."""

from __future__ import annotations

import pytest
import torch
from stacks import make_stack


@pytest.mark.parametrize("encoding", ["none", "sinusoidal", "rope"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", ["sqrt", "none"])
@pytest.mark.parametrize(("dtype", "tolerance"), [("float64", 1e-12), ("float32", 2e-5)])
def test_fused_attention_matches_explicit_attention(encoding, causal, scale, dtype, tolerance):
    stack = make_stack(encoding, d_model=32, n_heads=4, n_layers=3, causal=causal, scale=scale, dtype=dtype)
    x = torch.randn(6, 7, 32, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    with torch.inference_mode():
        explicit, fused = stack(x), stack(x, attention_maps=False)
    assert len(explicit.attention) == 3 and fused.attention == []
    for h_explicit, h_fused in zip(explicit.hidden, fused.hidden, strict=True):
        torch.testing.assert_close(h_fused, h_explicit, rtol=tolerance, atol=tolerance)
