"""An LM-only run (lm_logprob, minimal pairs) through `orderlab run` writes the same files, byte for byte, whether its
causal LMs' prefix walks stop one depth early (as they do) or run the full depth (as they did): learned positions,
RoPE and ALiBi here; every causal family's passes in tests/unit/models/test_lm_only_prefix_walk.py."""

from __future__ import annotations

import pytest

from orderlab.cli import app
from orderlab.spec.extras import installed

pytestmark = pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
SPEC = """
name: lm_only
seed: 3
model: {kind: hf, family: [gpt2, llama, bloom], d_model: 32, n_heads: 4, n_layers: 2, dtype: float32,
        position_embeddings: [trained, zero]}
inputs:
  - {sentence: the old dog chased a, permutations: all}
  - {sentence: a dog bit the man today, permutations: {random: 17}}
probes:
  - {pair: [the dog bites the man, the dog bite the man], relation: minimal_pair}
metrics: [lm_logprob, minimal_pairs]
rows: per_permutation
"""


@pytest.mark.slow
def test_an_lm_only_run_writes_the_full_depth_runs_bytes(cli, write_spec, tmp_path, monkeypatch):
    spec = write_spec(SPEC)
    early = tmp_path / "early"
    assert cli.invoke(app, ["run", str(spec), "--out", str(early), "--quiet"]).exit_code == 0
    monkeypatch.setattr("orderlab.models.pretrained.reads_states", lambda *_: True)  # every depth, as before
    full = tmp_path / "full"
    assert cli.invoke(app, ["run", str(spec), "--out", str(full), "--quiet"]).exit_code == 0
    for name in ("metrics.csv", "summary.csv"):
        assert (early / "lm_only" / name).read_bytes() == (full / "lm_only" / name).read_bytes(), name
