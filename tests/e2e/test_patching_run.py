"""A spec's patching: block in a run (issue 41): `orderlab run` writes patching.csv beside metrics.csv through the one
writer, the same rows api.patch returns, `plot` draws its heat map, and what cannot hold it (a shard, a corpus) is
refused in one line."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml
from command_line import assert_refused, invoke

from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra [hf]"),
]

SPEC = {"name": "patched", "metrics": ["equivariance"], "patching": {"layers": [1], "slots": [[0], [0, 1, 2, 3]]},
        "model": {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2,
                  "position_embeddings": ["zero"]},
        "inputs": [{"sentence": "the dog saw a", "permutations": [[1, 0, 2, 3]]}]}  # fmt: skip


def test_a_run_writes_patching_csv_as_api_patch_measures_it_and_plot_draws_it(tmp_path):
    import orderlab.api as ol

    path = tmp_path / "patched.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    assert invoke("run", path, "--out", tmp_path, "--quiet").exit_code == 0
    written = pd.read_csv(tmp_path / "patched" / "patching.csv", keep_default_na=False)
    measured = ol.patch(path).shares
    assert list(written.columns) == list(measured.columns)
    assert written["slots"].tolist() == ["0", "0+1+2+3"] and written["verdict"].tolist()[1] == "recovers all"
    assert written["share"].tolist() == pytest.approx(measured["share"].tolist(), abs=1e-6)
    loaded = ol.load(tmp_path / "patched").patching  # read back, held to its columns
    assert loaded is not None and loaded["slots"].tolist() == ["0", "0+1+2+3"]
    assert invoke("plot", tmp_path / "patched").exit_code == 0
    assert (tmp_path / "patched" / "figures" / "patching.png").is_file()


def test_a_shard_or_a_corpus_is_refused_in_one_line(tmp_path):
    path = tmp_path / "patched.yaml"
    path.write_text(yaml.safe_dump(SPEC))
    sharded = invoke("run", path, "--out", tmp_path, "--shard", "1/2")
    assert_refused(sharded, "patching: a shard holds some orders of a run")
    (tmp_path / "lines.txt").write_text("the dog saw a\n")
    path.write_text(yaml.safe_dump({**SPEC, "inputs": {"file": "lines.txt"}, "metrics": ["invariance"]}))
    assert_refused(invoke("validate", path), "patching: a corpus's lines are measured in batched passes, never patched")


def test_a_pattern_that_the_family_forms_in_attention_code_of_its_own_is_refused_in_one_line(tmp_path):
    path = tmp_path / "patched.yaml"
    model = {**SPEC["model"], "family": "bloom"}
    path.write_text(yaml.safe_dump({**SPEC, "model": model, "patching": {"points": ["pattern"], "layers": [1]}}))
    assert_refused(invoke("run", path, "--out", tmp_path), "patching: points: '1.pattern' is formed inside attention "
                   "code of the family's own (not transformers' AttentionInterface): read only on bloom")  # fmt: skip
    assert not (tmp_path / "patched").exists()
