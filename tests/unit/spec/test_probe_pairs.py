"""A probe pair is what it claims: a reordering of a's words, or declared otherwise and never given an order verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from orderlab.cli import app
from orderlab.core.pair_relations import DIFFERENT_WORDS, NO_WORD_MATCH, RELATION_COLUMN, relation_problem
from orderlab.vocabulary.verdict_words import DISTINGUISHABLE, INDISTINGUISHABLE, NON_FINITE

STACK = """name: pairs
model: {d_model: 16, n_heads: 2, n_layers: 2, dtype: float64}
encodings: [none, rope]
"""


def test_a_pair_of_other_words_is_refused_in_one_line(cli, write_spec):
    path = write_spec(STACK + "probes:\n  - [the cat chased the dog, a dog chased the cat]\n")
    for arguments in (["validate", str(path)], ["run", str(path), "--out", str(path.parent / "out")]):
        result = cli.invoke(app, arguments)
        assert result.exit_code == 2, result.output
        assert result.output.count("\n") == 1 and "Traceback" not in result.output
        assert f"{path}:5: probes[0]: 'a dog chased the cat' is not a reordering of 'the cat chased the dog'" in (
            result.output
        )
        assert "relation: different_words" in result.output  # what to write instead
    assert not (path.parent / "out").exists()


@pytest.mark.parametrize(
    ("relation", "a", "b", "problem"),
    [
        ("reordering", "the cat chased the dog", "the dog chased the cat", None),
        ("reordering", "the cat", "the cat cat", "words that differ: cat"),
        ("different_words", "the cat chased the dog", "a dog chased the cat", None),
        ("different_words", "dog bites man", "man bites dog", "is a reordering of"),
    ],
)
def test_a_relation_is_checked_against_the_words(relation, a, b, problem):
    found = relation_problem(relation, a.split(), b.split())
    assert (found is None) if problem is None else (problem in str(found))


def test_a_declared_pair_of_other_words_is_labelled_everywhere_and_never_judged_by_order(cli, write_spec, tmp_path):
    path = write_spec(
        STACK
        + "inputs: [{sentence: dog bites man, permutations: reverse}]\n"
        + "probes:\n  - [the cat chased the dog, the dog chased the cat]\n"
        + f"  - {{pair: [the cat chased the dog, a dog chased the cat], relation: {DIFFERENT_WORDS}}}\n"
    )
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path / "out")], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    folder = tmp_path / "out" / "pairs"
    metrics = pd.read_csv(folder / "metrics.csv", keep_default_na=False)
    other = metrics[metrics[RELATION_COLUMN] == DIFFERENT_WORDS]
    assert len(other) and set(other["permuted"]) == {"a dog chased the cat"}
    assert set(other["verdict"]) <= {DISTINGUISHABLE, INDISTINGUISHABLE, NON_FINITE}
    assert "token_shift" not in set(other["metric"])  # nothing to match: dropped, and the caption says why
    reordered = metrics[(metrics["case"] == "probe") & (metrics[RELATION_COLUMN] == "reordering")]
    assert {"token_shift", "pair_cosine"} <= set(reordered["metric"]) and "order-sensitive" in set(reordered.verdict)
    assert set(metrics.loc[metrics["case"] == "permutation", RELATION_COLUMN]) == {""}
    summary = pd.read_csv(folder / "summary.csv", keep_default_na=False)
    row = summary[summary["subject"] == "the cat chased the dog vs a dog chased the cat"]
    assert set(row[RELATION_COLUMN]) == {DIFFERENT_WORDS}
    assert set(row["rope verdict"]) == {DISTINGUISHABLE}
    assert "the cat chased the dog vs a dog chased the cat (different_words)" in result.output
    assert " ≠ " in result.output and NO_WORD_MATCH.split(":")[0] in " ".join(result.output.split())


def test_specs_of_reorderings_only_keep_their_columns(cli, write_spec, tmp_path):
    path = write_spec(STACK + "probes:\n  - [dog bites man, man bites dog]\n")
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert RELATION_COLUMN not in pd.read_csv(tmp_path / "out" / "pairs" / "metrics.csv").columns


def test_shards_of_pairs_sharing_a_first_sentence_merge_into_the_whole_run(cli, write_spec, tmp_path):
    """merge checks each summary row against metrics.csv by its key: two probes of one first sentence are two rows."""
    path = write_spec(
        STACK
        + "inputs: [{sentence: dog bites man, permutations: all}]\n"
        + "probes:\n  - [dog bites man, man bites dog]\n"
        + f"  - {{pair: [dog bites man, dog bites woman], relation: {DIFFERENT_WORDS}}}\n"
    )
    whole, shards = tmp_path / "whole", tmp_path / "shards"
    assert cli.invoke(app, ["run", str(path), "--out", str(whole), "--quiet"]).exit_code == 0
    for k in (1, 2):
        result = cli.invoke(app, ["run", str(path), "--out", str(shards), "--shard", f"{k}/2", "--quiet"])
        assert result.exit_code == 0, result.output
    parts = [str(folder) for folder in sorted(shards.glob("pairs.shard-*"))]
    result = cli.invoke(app, ["merge", *parts, "--out", str(shards), "--quiet"])
    assert result.exit_code == 0, result.output
    for name in ("metrics.csv", "summary.csv"):
        assert (shards / "pairs" / name).read_bytes() == (whole / "pairs" / name).read_bytes()
