"""Escalated orders of a causal LM walk shared prefixes in the finer precision (Adapter.finer), as the run's do: their
float32 values are the dense float32 pass's within the float32 round-off the run reports, and judged alike."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import orderlab.api as ol
from orderlab.models.pretrained import PretrainedAdapter
from orderlab.spec.extras import installed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]"),
]
SPEC = {
    "name": "walked",
    "seed": 0,
    "model": {"kind": "hf", "family": "gpt2", "d_model": 32, "n_heads": 2, "n_layers": 2,
              "position_embeddings": "zero", "dtype": "bfloat16"},
    "inputs": [{"sentence": "the dog bit man", "permutations": "all"}],
    "metrics": ["equivariance", "prefix_invariance", "lm_logprob"],
    "rows": "per_permutation",
}  # fmt: skip


def measured(tmp_path, name: str) -> tuple[pd.DataFrame, dict]:
    result = ol.run(SPEC, tmp_path / name, progress=False)
    manifest = json.loads((result.folder / "manifest.json").read_text())
    return pd.read_csv(result.folder / "metrics.csv"), manifest


def test_escalated_orders_walk_prefixes_to_the_dense_float32_values_and_verdicts(tmp_path, monkeypatch):
    walked, manifest = measured(tmp_path, "walk")
    condition = manifest["resolution"]["conditions"]["zero"]
    assert condition["remeasured"] > 0 and condition["remeasured_in"] == "float32"
    with monkeypatch.context() as patch:  # the round-off twin as the finer model: dense, as before issue 43
        patch.setattr(PretrainedAdapter, "finer", PretrainedAdapter.twin)
        dense, dense_manifest = measured(tmp_path, "dense")
    dense_condition = dense_manifest["resolution"]["conditions"]["zero"]
    assert dense_condition["remeasured"] == condition["remeasured"]  # the decision is the bfloat16 pass's, per order
    pd.testing.assert_frame_equal(walked.drop(columns="value"), dense.drop(columns="value"))  # verdicts included
    line = max(condition["widest_line"], dense_condition["widest_line"])  # float32's, which judged them
    assert (walked["value"] - dense["value"]).abs().max() <= line
    assert not walked["value"].equals(dense["value"])  # not the dense pass run twice
