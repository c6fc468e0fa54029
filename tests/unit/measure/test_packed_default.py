"""A causal LM's prefix walk packs its top depths by default on a GPU (measured faster there) and walks on the CPU,
whose committed baselines were measured walking (measure/adapters.packed_setting)."""

from __future__ import annotations

import torch

from orderlab.measure.adapters import packed_setting
from orderlab.plan.decisions import GPU_PACKED_TOKENS, packed_tokens


def test_a_gpu_packs_the_top_depths_unless_told_otherwise_and_the_cpu_walks(monkeypatch):
    monkeypatch.delenv("ORDERLAB_PACKED_TOKENS", raising=False)
    assert packed_tokens(packed_setting(torch.device("cuda"))) == GPU_PACKED_TOKENS > 0
    assert packed_tokens(packed_setting(torch.device("cpu"))) == 0  # no committed number moves
    monkeypatch.setenv("ORDERLAB_PACKED_TOKENS", "0")  # asked for: the walk, on a card too
    assert packed_tokens(packed_setting(torch.device("cuda"))) == 0
    monkeypatch.setenv("ORDERLAB_PACKED_TOKENS", "256")
    assert packed_tokens(packed_setting(torch.device("cpu"))) == 256
