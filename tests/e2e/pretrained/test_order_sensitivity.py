"""All-MiniLM-L6-v2 through `orderlab run`: zeroed position embeddings make mean pooling blind to word order.

The numbers are measured by the tool (metrics.csv) and asserted here: with the table zeroed, a
sentence and its word permutations agree to float32 tolerance; with the trained table they do not.
"""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.families.position_tables import position_table
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE

pytestmark = pytest.mark.slow

SPEC = """
name: order
model: {kind: pretrained, name: minilm, position_embeddings: [trained, zero]}
inputs:
  - sentence: dog bites man
    permutations: all
  - sentence: the grumpy postman outperformed the dog
    permutations: {random: 12}
probes:
  - [dog bites man, man bites dog]
metrics: [equivariance, invariance, token_shift, pair_distance]
"""


@pytest.fixture(scope="module")
def measured(tmp_path_factory, minilm_folder) -> pd.DataFrame:
    folder = tmp_path_factory.mktemp("order")
    (folder / "order.yaml").write_text(SPEC)
    result = CliRunner().invoke(app, ["run", str(folder / "order.yaml"), "--out", str(folder), "--quiet"])
    assert result.exit_code == 0, result.output
    return pd.read_csv(folder / "order" / "metrics.csv")


def non_identity(table: pd.DataFrame, encoding: str, metric: str) -> pd.Series:
    rows = table[(table["encoding"] == encoding) & (table["metric"] == metric)]
    return rows[rows["permuted"] != rows["input"]]["value"]


def assert_round_off(table: pd.DataFrame, encoding: str, metric: str) -> None:
    """Every reordering within the run's measured round-off: written as 0, with a passing verdict."""
    rows = table[(table["encoding"] == encoding) & (table["metric"] == metric) & (table["permuted"] != table["input"])]
    assert len(rows) > 0 and (rows["value"] == 0).all() and (rows["verdict"] != ORDER_SENSITIVE).all(), metric


def test_zeroed_position_embeddings_make_mean_pooling_order_invariant(measured):
    for metric in ("invariance_mean", "cosine_mean", "pair_cosine"):
        assert_round_off(measured, "zero", metric)


def test_zeroed_position_embeddings_make_word_states_permute_along(measured):
    assert_round_off(measured, "zero", "equivariance")


def test_trained_position_embeddings_tell_dog_bites_man_from_man_bites_dog(measured):
    last = measured["layer"] == measured["layer"].max()
    for metric in ("invariance_mean", "pair_cosine"):
        values = non_identity(measured[last], "trained", metric)
        assert values.min() > 1e-2, metric  # far above float32 round-off (~1e-7)


def test_every_row_names_its_position_ablation(measured):
    assert set(measured["encoding"]) == {"trained", "zero"}


def test_ablations_never_touch_the_model_files_or_the_loaded_weights(minilm_folder, backend):
    weights = minilm_folder / "model.safetensors"
    before = hashlib.sha256(weights.read_bytes()).hexdigest()
    loaded = {name: tensor.clone() for name, tensor in backend.model.state_dict().items()}
    ids = torch.tensor([backend.word_tokens(["dog", "bites", "man"]).ids])
    with torch.inference_mode():
        outputs = {}
        for ablation in ("zero", "shuffled", "sinusoidal", "trained"):
            backend.set_positions(ablation, seed=0)
            outputs[ablation] = backend.forward(ids).hidden[0]
    assert hashlib.sha256(weights.read_bytes()).hexdigest() == before
    for name, tensor in backend.model.state_dict().items():
        assert torch.equal(tensor, loaded[name]), name
    assert not torch.equal(outputs["zero"], outputs["trained"])  # the ablations did act, on the pass only


def test_shuffled_table_reorders_trained_rows_and_sinusoidal_keeps_their_scale(backend):
    trained = backend.model.embeddings.position_embeddings.weight.detach()
    shuffled = position_table("shuffled", trained, seed=0)
    assert not torch.equal(shuffled, trained)
    assert torch.equal(shuffled.sort(dim=0).values, trained.sort(dim=0).values)  # same rows, new slots
    sinusoidal = position_table("sinusoidal", trained, seed=0)
    assert torch.isclose(sinusoidal.norm(dim=1).mean(), trained.norm(dim=1).mean(), rtol=1e-5)


def test_attention_maps_permute_along_only_without_position_embeddings(write_spec, tmp_path, minilm_folder):
    spec = write_spec(
        "name: att\nmodel: {kind: pretrained, name: minilm, position_embeddings: [trained, zero]}\n"
        "inputs: [{sentence: the postman outperformed the dog, permutations: reverse}]\nmetrics: [attention]\n"
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "att" / "metrics.csv")
    assert table["head"].nunique() == 12
    assert_round_off(table, "zero", "attention_equivariance")
    assert non_identity(table, "trained", "attention_equivariance").max() > 1e-2
