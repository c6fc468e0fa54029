"""The plan prices an LM-only run's prefix walk without its deepest depth (models/kv_prefix.py): one call and the last
word's states fewer per chunk, as the run does; and the LM head only where the run reads its logits."""

from __future__ import annotations

import math

import pytest

from orderlab.plan import estimate, pretrained_cost
from orderlab.spec.schema import Spec


def causal_spec(metrics: list[str], words: int = 7, vocab: int | None = None) -> Spec:
    return Spec.model_validate({
        "model": {"kind": "hf", "family": "gpt2", "d_model": 768, "n_heads": 12, "n_layers": 12,
                  **({"vocab_size": vocab} if vocab else {})},
        "inputs": [{"sentence": " ".join(f"w{i}" for i in range(words)), "permutations": "all"}],
        "metrics": metrics,
    })  # fmt: skip


def forward_seconds(spec: Spec) -> float:
    (planned,) = estimate.estimate(spec, "spec.yaml")
    return next(cost.amount for cost in planned.seconds if cost.what == "the forward passes")


@pytest.mark.parametrize(("metrics", "depths"), [(["lm_logprob"], 6), (["minimal_pairs"], 6),
                                                 (["lm_logprob", "invariance"], 7)])  # fmt: skip
def test_an_lm_only_walk_runs_one_depth_fewer(metrics, depths):
    assert pretrained_cost.walked_depths(causal_spec(metrics), 7) == depths


def test_an_lm_only_run_is_priced_without_its_last_words_pass(monkeypatch):
    spec = causal_spec(["lm_logprob"])
    early = forward_seconds(spec)
    monkeypatch.setattr(pretrained_cost, "reads_states", lambda *_: True)  # as a run that reads states walks
    full = forward_seconds(spec)
    states = [pretrained_cost.shared_token_states(7, math.factorial(7) + 1, 1024, "all", depths) for depths in (6, 7)]
    assert early < full
    assert states[0] < 0.75 * states[1]  # the deepest depth holds the most prefixes: 7! of 7! + ... + 7


def test_a_run_that_reads_no_log_probability_is_priced_without_the_lm_head():
    states_only, both = (forward_seconds(causal_spec(metrics, vocab=50257))
                         for metrics in (["invariance"], ["invariance", "lm_logprob"]))  # fmt: skip
    assert states_only < 0.9 * both  # GPT-2's head is 31% of a token's matmuls, run on every depth but the deepest
    word_level = [forward_seconds(causal_spec(metrics)) for metrics in (["invariance"], ["invariance", "lm_logprob"])]
    assert word_level[0] == pytest.approx(word_level[1], rel=0.05)  # a seeded word-level head costs next to nothing


def test_a_walk_with_states_is_priced_without_the_head_on_its_deepest_depth(monkeypatch):
    spec = causal_spec(["invariance", "lm_logprob"], vocab=50257)
    headless = forward_seconds(spec)
    monkeypatch.setattr(pretrained_cost, "headless_states", lambda *_: 0.0)  # as if the full orders ran the head
    assert headless < 0.95 * forward_seconds(spec)
