"""MiniLM's verdicts in float32 and float64 agree wherever float32 can resolve the effect.

With a flat line of 1000 float32 epsilons (1.2e-4), real layer-0 effects of ~2e-5 read "invariant";
the measured round-off line resolves them.
"""

from __future__ import annotations

from conftest import needs_minilm
from precision import assert_precisions_agree, judged_run

MINILM = """
name: minilm_precision
model: {kind: pretrained, name: minilm, position_embeddings: [trained, zero, shuffled]}
inputs:
  - sentence: the grumpy postman outperformed the dog
    permutations: {random: 6}
probes:
  - [dog bites man, man bites dog]
metrics: [equivariance, invariance, token_shift, pair_distance]
"""


def test_minilm_verdicts_agree_in_float32_and_float64(tmp_path, monkeypatch):
    needs_minilm()
    single = judged_run(MINILM, "float32", tmp_path, monkeypatch)
    double = judged_run(MINILM, "float64", tmp_path, monkeypatch)
    gained = assert_precisions_agree(single, double)
    assert gained > 0, "no effect below 1.2e-4 was resolved in float32"
