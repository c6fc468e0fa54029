"""A pretrained model's run in shards, merged: the same bytes as the whole run (MiniLM, two position ablations)."""

from __future__ import annotations

import pytest
from minilm import needs_minilm
from sharding import assert_same_files, merged, run_shards, run_whole

pytestmark = pytest.mark.slow

SPEC = """
name: minilm_shards
seed: 0
model: {kind: pretrained, name: minilm, position_embeddings: [trained, zero], dtype: float32}
inputs:
  - sentence: dog bites man
    permutations: all
probes:
  - [dog bites man, man bites dog]
metrics: [equivariance, invariance, token_shift, pair_distance]
"""


def test_minilm_shards_merged_are_byte_identical_to_the_whole_run(cli, write_spec, tmp_path):
    needs_minilm()
    spec = write_spec(SPEC)
    whole = run_whole(cli, spec, tmp_path / "whole")
    shards = run_shards(cli, spec, 2, tmp_path / "shards")  # 2 ablations x 6 orders + 2 probes: the cut falls
    assert_same_files(merged(cli, shards, tmp_path / "merged"), whole)  # inside the zero ablation's orders
