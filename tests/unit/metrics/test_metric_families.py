"""A pretrained model writes, for each `metrics:` family, exactly the row metrics the registry gives it."""

from __future__ import annotations

import pandas as pd
import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.metrics import LM_LOGPROB_FAMILY, MINIMAL_PAIRS_FAMILY, family_names, metrics_of

pytestmark = pytest.mark.slow

MINILM = "model: {kind: pretrained, name: minilm, position_embeddings: [trained]}\n"
CAUSAL_LM = "model: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 1, position_embeddings: [trained]}\n"
SPEC = """
decodability: {sentences: 32, length: 4, vocabulary: 16}
inputs: [{sentence: the cat saw the dog, permutations: swaps}]
probes: [[the cat saw the dog, the dog saw the cat]]
"""
PRETRAINED_FAMILIES = [family for family in family_names() if metrics_of(family, "pretrained")]


def test_every_family_applies_to_pretrained_models_through_the_one_loop():
    assert family_names() == PRETRAINED_FAMILIES


@pytest.mark.parametrize("family", PRETRAINED_FAMILIES)
def test_a_pretrained_run_of_one_family_writes_exactly_its_registered_metrics(
    family, write_spec, tmp_path, minilm_folder
):
    causal = family in (LM_LOGPROB_FAMILY, MINIMAL_PAIRS_FAMILY)
    model = CAUSAL_LM if causal else MINILM  # MiniLM is an encoder: no LM head
    spec = write_spec(f"name: only_{family}\n{model}{SPEC}metrics: [{family}]\n")
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    written = pd.read_csv(tmp_path / f"only_{family}" / "metrics.csv")["metric"]
    summary_only = {m.name for m in metrics_of(family, "pretrained") if m.reduction == "rank"}  # the original's rank
    assert set(written) == {m.name for m in metrics_of(family, "pretrained")} - summary_only
