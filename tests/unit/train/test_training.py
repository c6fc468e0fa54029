"""Trained stacks (issue 14): deterministic training, a loss that falls, checkpoints that reload, one-line errors."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from orderlab.cli import app
from orderlab.spec.load import load_spec
from orderlab.train.train import train_stack

TRAINED = """\
name: tiny_trained
model: {d_model: 16, n_heads: 2, n_layers: 1, dtype: float64}
encodings: [none, sinusoidal]
inputs:
  - sentence: word1 word2 word3
    permutations: all
metrics: [equivariance, invariance]
train: {task: first_word, train_lengths: [3, 4], test_lengths: [3, 5], vocabulary: 8, steps: STEPS, batch: 32}
"""


def tiny(write_spec, steps: int = 20, name: str = "spec.yaml"):
    return load_spec(write_spec(TRAINED.replace("STEPS", str(steps)), name)).spec


def test_training_twice_gives_the_same_losses_and_weights(write_spec):
    spec = tiny(write_spec)
    first, second = (train_stack(spec, spec.encodings[1]) for _ in range(2))
    assert first.losses == second.losses
    assert all(torch.equal(a.w_q, b.w_q) and torch.equal(a.w_out, b.w_out)
               for a, b in zip(first.weights, second.weights, strict=True))  # fmt: skip


def test_training_changes_the_weights_it_started_from(write_spec):
    spec = tiny(write_spec, steps=5)
    untouched = train_stack(spec.model_copy(update={"train": spec.train.model_copy(update={"lr": 1e-12})}),
                            spec.encodings[1])  # fmt: skip
    trained = train_stack(spec, spec.encodings[1])
    assert not torch.allclose(untouched.weights[0].w_q, trained.weights[0].w_q)


def test_loss_falls_when_the_encoding_can_solve_the_task(write_spec):
    losses = train_stack(spec := tiny(write_spec, steps=150), spec.encodings[1]).losses  # sinusoidal
    assert sum(losses[-20:]) / 20 < 0.5 * sum(losses[:20]) / 20


def test_run_writes_trained_beside_untrained_and_accuracy_by_length(cli, write_spec, tmp_path):
    result = cli.invoke(app, ["run", str(write_spec(TRAINED.replace("STEPS", "150"))), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "tiny_trained" / "metrics.csv")
    assert set(metrics["weights"]) == {"trained", "untrained"}
    accuracy = metrics[metrics["metric"] == "task_accuracy"].set_index(["encoding", "input"])["value"]
    assert len(accuracy) == 2 * 3  # two encodings x lengths 3, 4, 5
    # first_word is read from the mean over slots: with no encoding a bidirectional stack cannot tell the first word
    assert accuracy["sinusoidal"].min() > accuracy["none"].max()
    assert (tmp_path / "tiny_trained" / "checkpoints" / "sinusoidal.safetensors").is_file()


def test_a_checkpoint_reloads_to_the_same_metrics(cli, write_spec, tmp_path):
    cli.invoke(app, ["run", str(write_spec(TRAINED.replace("STEPS", "10"))), "--out", str(tmp_path), "-q"])
    checkpoint = tmp_path / "tiny_trained" / "checkpoints" / "sinusoidal.safetensors"
    reload = f"""\
name: reloaded
model: {{kind: checkpoint, path: {checkpoint}}}
inputs:
  - sentence: word1 word2 word3
    permutations: all
metrics: [equivariance, invariance]
"""
    result = cli.invoke(app, ["run", str(write_spec(reload, "reload.yaml")), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    trained = pd.read_csv(tmp_path / "tiny_trained" / "metrics.csv")
    trained = trained[(trained["weights"] == "trained") & (trained["encoding"] == "sinusoidal")]
    trained = trained[trained["case"] != "task"].drop(columns=["weights", "length", "slot", "chance"])
    trained = trained.reset_index(drop=True)  # length, slot, chance: task and probe rows' only
    reloaded = pd.read_csv(tmp_path / "reloaded" / "metrics.csv")
    pd.testing.assert_frame_equal(reloaded, trained)


@pytest.mark.parametrize(
    ("change", "where", "expected"),
    [
        (("first_word", "first_wrd"), "train.task:", "Did you mean: first_word?"),
        (("steps: STEPS", "steps: 0"), "train.steps:", "greater than 0"),
        (("encodings: [none, sinusoidal]", "encodings: [none, {name: learned, max_len: 4}]"),
         "train.test_lengths:", "max_len"),
        (("train_lengths: [3, 4]", "train_lengths: [1, 4]"), "train.train_lengths:", "at least 2 words"),
        (("first_word", "next_token"), "train.task:", "model.causal: true"),
    ],
)  # fmt: skip
def test_bad_train_fields_get_one_line_and_exit_2(cli, write_spec, change, where, expected):
    result = cli.invoke(app, ["validate", str(write_spec(TRAINED.replace(*change).replace("STEPS", "5")))])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and where in lines[0] and expected in lines[0], result.output


@pytest.mark.parametrize(
    ("model", "inputs", "expected"),
    [
        ("{kind: pretrained, name: minilm}", "[{sentence: dog bites man}]", "model.kind pretrained brings its own"),
        ("{kind: pretrained, name: minilm}", "{file: corpus.txt, shuffles: 2}", "model.kind pretrained brings its own"),
        ("{kind: hf, family: bert}", "[{sentence: dog bites man}]", "model.kind hf brings its own weights"),
        ("{d_model: 16, n_heads: 2}", "{file: corpus.txt, shuffles: 2}", "corpus inputs are for pretrained models"),
    ],
)  # fmt: skip
def test_train_is_refused_where_nothing_would_train(cli, write_spec, model, inputs, expected):
    """train: beside a pretrained model or corpus inputs was silently ignored (or an AssertionError at run)."""
    write_spec("the dog bites the man\n", "corpus.txt")
    spec = write_spec(f"model: {model}\ninputs: {inputs}\ntrain: {{task: first_word}}\n")
    result = cli.invoke(app, ["validate", str(spec)])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1, result.output
    assert ":3: train: " in lines[0] and expected in lines[0] and "expected no train:" in lines[0], result.output


def test_task_rows_carry_their_length_and_chance_and_the_probe_its_slots(cli, write_spec, tmp_path):
    """issue 24: task_accuracy rows name their length and the task's chance in columns; the position probe
    reports each slot, here on the task's own sentences (decodability.from_task)."""
    spec = TRAINED.replace("STEPS", "5").replace("[equivariance, invariance]", "[equivariance, decodability]")
    spec += "decodability: {sentences: 64, length: 5, from_task: true}\n"
    result = cli.invoke(app, ["run", str(write_spec(spec)), "--out", str(tmp_path), "-q"])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "tiny_trained" / "metrics.csv")
    accuracy = metrics[metrics["metric"] == "task_accuracy"]
    assert sorted(set(accuracy["length"])) == [3, 4, 5]
    chance = accuracy.groupby("length")["chance"].unique()
    assert all(len(levels) == 1 for levels in chance)  # one chance per length, whatever the encoding
    assert chance[3][0] > chance[4][0] > chance[5][0] > 1 / 8  # E[max count] / n over 8 words, not 1/8
    slots = metrics[metrics["metric"] == "position_slot_accuracy"]
    assert len(slots) == 2 * 2 * 2 * 5  # weights x encodings x layers 0..1 x slots
    assert set(slots["input"]) == {"64 first_word sentences of 5 words"} and set(slots["chance"]) == {0.2}
    overall = metrics[metrics["metric"] == "position_accuracy"].set_index(["weights", "encoding", "layer"])["value"]
    by_slot = slots.groupby(["weights", "encoding", "layer"])["value"].mean()
    pd.testing.assert_series_equal(by_slot.sort_index(), overall.sort_index(), check_names=False)
    assert metrics.loc[metrics["case"] == "invariance", ["length", "slot", "chance"]].isna().all().all()


def test_the_probe_on_task_sentences_differs_from_random_ones(cli, write_spec, tmp_path):
    spec = TRAINED.replace("STEPS", "5").replace("[equivariance, invariance]", "[decodability]")
    spec += "decodability: {sentences: 64, length: 5, from_task: FROM}\n"
    for source in ("true", "false"):
        written = write_spec(spec.replace("FROM", source).replace("tiny_trained", f"tiny_{source}"))
        assert cli.invoke(app, ["run", str(written), "--out", str(tmp_path), "-q"]).exit_code == 0
    task, random = (pd.read_csv(tmp_path / f"tiny_{s}" / "metrics.csv") for s in ("true", "false"))
    assert set(random["input"].dropna()) >= {"64 random sentences of 5 words"}
    slots = [frame.loc[frame["metric"] == "position_slot_accuracy", "value"].to_numpy() for frame in (task, random)]
    assert (slots[0] != slots[1]).any()


@pytest.mark.parametrize(
    ("decodability", "task", "expected"),
    [
        ("{from_task: true}", None, "decodability.from_task: there is no train: task"),
        ("{from_task: true, length: 2}", "agent", "decodability.length: 2: task agent needs sentences of at least 3"),
    ],
)
def test_a_probe_on_task_sentences_needs_a_task_that_fits(cli, write_spec, decodability, task, expected):
    spec = TRAINED.replace("STEPS", "5") + f"decodability: {decodability}\n"
    spec = spec.replace("first_word", task) if task else spec.replace(spec[spec.index("train:") :].split("\n")[0], "")
    result = cli.invoke(app, ["validate", str(write_spec(spec))])
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and expected in lines[0], result.output
