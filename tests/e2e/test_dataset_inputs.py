"""Dataset inputs through a seeded classifier, end to end (CLI and API): a sentence-pair file with labels and groups,
both sides shuffled; the published metrics in summary.csv checked against a hand computation over the predictions
metrics.csv holds, per label and per group; bad inputs refused in one line."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from command_line import ROOT, assert_refused, invoke

pytest.importorskip("transformers")

DATA = ROOT / "experiments" / "data" / "nli_tiny.jsonl"  # the shipped example file (zoo_task_head.yaml)
MODEL = ("{kind: hf, family: bert, head: classification, label_names: [entailment, neutral, contradiction], "
         "d_model: 32, n_heads: 2, n_layers: 2, position_embeddings: [trained, zero]}")  # fmt: skip
INPUTS = ("{dataset: nli_tiny.jsonl, text: premise, pair: hypothesis, label: label, group: genre, permute: both, "
          "permutations: {random: 4, distinct: up_to}, resamples: 200}")  # fmt: skip


def write_spec(root: Path, name: str = "nli", model: str = MODEL, inputs: str = INPUTS) -> Path:
    shutil.copy(DATA, root / DATA.name)
    spec = root / f"{name}.yaml"
    spec.write_text(f"name: {name}\nseed: 0\nmodel: {model}\ninputs: {inputs}\n")
    return spec


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nli")
    result = invoke("run", write_spec(root), "--out", root / "out")
    assert result.exit_code == 0, result.output
    assert "omega_max" in result.output and "groups_mean" in result.output
    return root / "out" / "nli"


def hand_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per encoding and example, the published metrics from the predicted labels alone (no ties in this run)."""
    predicted = metrics[metrics["metric"] == "predicted_label"]
    assert not (predicted["verdict"] == "tie").any()
    rows = []
    for (encoding, example), orders in predicted.groupby(["encoding", "example"], sort=False):
        names = orders["predicted"].tolist()
        gold, original, shuffled = orders["label"].iloc[0], names[0], names[1:]
        right = [name == gold for name in shuffled]
        share = sum(right) / len(right)
        rows.append({
            "encoding": encoding, "example": example, "label": gold, "group": orders["group"].iloc[0],
            "accuracy_original": float(original == gold), "omega_max": float(any(right)),
            "p_c": share if original == gold else np.nan, "p_f": share if original != gold else np.nan,
            "correct_surviving": float(all(right)) if original == gold else np.nan,
            "flip_rate": sum(name != original for name in shuffled) / len(shuffled),
        })  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_published_metrics_equal_a_hand_computation_per_label_and_group(cli_run: Path):
    metrics, summary = pd.read_csv(cli_run / "metrics.csv"), pd.read_csv(cli_run / "summary.csv", keep_default_na=False)
    hand = hand_metrics(metrics)
    published = ["accuracy_original", "omega_max", "p_c", "p_f", "correct_surviving", "flip_rate"]
    for encoding in ("seeded", "zero"):
        mine = hand[hand["encoding"] == encoding]
        rows = summary[summary["encoding"] == encoding]
        for metric in published:
            at = rows[rows["metric"] == metric].set_index(["by", "key"])["value"].replace("", np.nan).astype(float)
            assert np.isclose(at[("all", "")], mine[metric].mean(), equal_nan=True), (encoding, metric)
            for label, part in mine.groupby("label"):
                assert np.isclose(at[("label", label)], part[metric].mean(), equal_nan=True), (metric, label)
            groups = mine.groupby("group")[metric].mean()
            for group, value in groups.items():
                assert np.isclose(at[("group", group)], value, equal_nan=True), (metric, group)
            assert np.isclose(at[("groups_mean", "")], groups.mean(), equal_nan=True), metric
    # each example's own rows in metrics.csv say the same
    per_example = metrics[metrics["permutation"].isna() & (metrics["metric"] == "accuracy_original")]
    assert per_example["value"].tolist() == hand["accuracy_original"].tolist()


@pytest.mark.slow
def test_the_api_runs_the_same_spec_to_the_same_numbers(cli_run: Path, tmp_path: Path):
    from orderlab import api

    write_spec(tmp_path)
    result = api.run(tmp_path / "nli.yaml", out=tmp_path / "out", progress=False)
    expected = pd.read_csv(cli_run / "summary.csv")
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / "nli" / "summary.csv"), expected)
    assert set(result.summary["by"]) == {"all", "label", "group", "groups_mean"}
    assert result.manifest["labels"] == ["entailment", "neutral", "contradiction"]


@pytest.mark.slow
def test_a_model_object_with_a_classification_head_is_measured_through_its_head(tmp_path: Path):
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    from orderlab import api
    from orderlab.models.hf.loader import import_transformers, word_level_tokenizer

    words = tuple(sorted({w for line in DATA.read_text().splitlines() for w in line.replace('"', " ").split()}))
    tokenizer = word_level_tokenizer(import_transformers(), words, causal=False)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, num_labels=3,
                        id2label={0: "entailment", 1: "neutral", 2: "contradiction"})  # fmt: skip
    spec = write_spec(tmp_path, inputs=INPUTS.replace("permute: both", "permute: pair"))
    spec.write_text(spec.read_text().replace(f"model: {MODEL}\n", ""))
    result = api.run(spec, model=BertForSequenceClassification(config), tokenizer=tokenizer, progress=False)
    assert set(result.metrics["encoding"]) == {"given", "zero"}
    shuffled = result.metrics[(result.metrics["metric"] == "predicted_label") & (result.metrics["permutation"].notna())]
    assert (shuffled["permuted"] == shuffled["input"]).all()  # permute: pair leaves the premise as written


def test_validate_prices_a_dataset_run(tmp_path: Path):
    result = invoke("validate", write_spec(tmp_path), "--plan")
    assert result.exit_code == 0, result.output
    assert "metrics.csv" in result.output and "sequences" in result.output


@pytest.mark.parametrize(
    ("model", "data", "fragments"),
    [
        (MODEL, '{"premise": "a b", "hypothesis": "c d", "label": "maybe", "genre": "x"}\n',
         ["nli_tiny.jsonl:1: label 'maybe'", "entailment, neutral, contradiction"]),
        (MODEL, '{"premise": "a b", "hypothesis": "c d", "label": 0, "genre": "x"}\n{"premise": \n',
         ["nli_tiny.jsonl:2: not valid JSON"]),
        ("{d_model: 32, n_heads: 2, n_layers: 1}", '{"premise": "a b", "hypothesis": "c", "label": 0, "genre": "x"}\n',
         ["dataset inputs need a sequence-classification model"]),
        ("{kind: hf, family: bert, d_model: 32, n_heads: 2, n_layers: 1}",
         '{"premise": "a b", "hypothesis": "c", "label": 0, "genre": "x"}\n',
         ["expected model: {kind: hf, head: classification}"]),
    ],
)  # fmt: skip
def test_bad_dataset_inputs_are_one_line(tmp_path: Path, model: str, data: str, fragments: list[str]):
    spec = write_spec(tmp_path, model=model)
    (tmp_path / DATA.name).write_text(data)
    assert_refused(invoke("run", spec, "--out", tmp_path / "out"), *fragments)
