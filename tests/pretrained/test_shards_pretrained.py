"""A pretrained model's run in shards, merged: the same bytes as the whole run (MiniLM, two position ablations)."""

from __future__ import annotations

from conftest import needs_minilm

from orderlab.cli import app

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
    assert cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "whole"), "-q"]).exit_code == 0
    for index in (1, 2):  # 2 ablations x 6 orders + 2 probes: the cut falls inside the zero ablation's orders
        result = cli.invoke(app, ["run", str(spec), "--out", str(tmp_path / "shards"), "--shard", f"{index}/2", "-q"])
        assert result.exit_code == 0, result.output
    shards = [str(tmp_path / "shards" / f"minilm_shards.shard-{k}-of-2") for k in (1, 2)]
    result = cli.invoke(app, ["merge", *shards, "--out", str(tmp_path / "merged"), "-q"])
    assert result.exit_code == 0, result.output
    whole, merged = tmp_path / "whole" / "minilm_shards", tmp_path / "merged" / "minilm_shards"
    assert sorted(p.name for p in merged.iterdir()) == sorted(p.name for p in whole.iterdir())
    for path in whole.iterdir():
        assert (merged / path.name).read_bytes() == path.read_bytes(), path.name
