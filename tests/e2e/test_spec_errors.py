"""Bad specs: each gives exit code 2 and ONE line naming file, line, field and what was expected."""

from __future__ import annotations

import pytest

from orderlab.cli import app

GOOD = """\
name: t
model:
  d_model: 8
  n_heads: 2
  n_layers: 1
encodings: [none, rope]
inputs:
  - sentence: dog bites man
    permutations: all
"""

BAD_SPECS = {
    "wrong type": (GOOD.replace("n_layers: 1", "n_layers: two"), ":5: model.n_layers:", "integer"),
    "unknown key": (
        GOOD.replace("n_layers: 1", "n_layer: 1"),
        ":5: model.n_layer: unknown key",
        "Did you mean: n_layers?",
    ),
    "unknown top-level key": (GOOD + "metric: [equivariance]\n", ":10: metric: unknown key", "Did you mean: metrics?"),
    "duplicate key": (
        GOOD.replace("  n_layers: 1", "  n_layers: 1\n  n_layers: 2"),
        ":6: model: duplicate key",
        "line 5",
    ),
    "empty sentence": (
        GOOD.replace("dog bites man", "'  '"),
        ":8: inputs[0].sentence: empty sentence",
        "at least one word",
    ),
    "d_model not divisible": (
        GOOD.replace("d_model: 8", "d_model: 9"),
        ":3: model.d_model: 9 is not divisible",
        "n_heads=2",
    ),
    "rope with an odd head size": (GOOD.replace("d_model: 8", "d_model: 6"), ":6: encodings[1]:", "even head size"),
    "not a permutation": (
        GOOD.replace("permutations: all", "permutations: [[0, 0, 1]]"),
        ":9: inputs[0].permutations:",
        "exactly once",
    ),
    "permutation of the wrong length": (
        GOOD.replace("permutations: all", "permutations: [[1, 0]]"),
        "inputs[0].permutations:",
        "0..2",
    ),
    "unknown encoding": (
        GOOD.replace("[none, rope]", "[none, rpoe]"),
        ":6: encodings[1]: Unknown encoding 'rpoe'",
        "Did you mean: rope?",
    ),
    "unknown permutation rule": (
        GOOD.replace("permutations: all", "permutations: reversed"),
        ":9: inputs[0].permutations:",
        "Did you mean: reverse?",
    ),
    "'all' past the limit": (
        GOOD.replace("dog bites man", "a b c d e f g h i j"),
        ":9: inputs[0].permutations: 'all' would be 10!",
        "{random: K}",
    ),
    "too many random permutations": (
        GOOD.replace("permutations: all", "permutations: {random: 9}"),
        "inputs[0].permutations: random: 9",
        "at most 5",
    ),
    "wrong dtype": (
        GOOD.replace("n_layers: 1", "n_layers: 1\n  dtype: float8"),
        ":6: model.dtype:",
        "'float32' or 'float64'",
    ),
    "explicit vector of the wrong length": (
        GOOD + "embeddings:\n  kind: explicit\n  vectors: {dog: [1, 2], bites: [1], man: [1]}\n",
        ":12: embeddings.vectors.dog: vector of length 2",
        "d_model=8",
    ),
    "explicit vectors missing a word": (
        GOOD.replace("d_model: 8", "d_model: 2").replace("n_heads: 2", "n_heads: 1").replace("[none, rope]", "[none]")
        + "embeddings:\n  kind: explicit\n  vectors: {dog: [1, 2], bites: [1, 0]}\n",
        ":8: inputs[0].sentence: no vector for 'man'",
        "embeddings.vectors",
    ),
    "unknown embeddings kind": (GOOD + "embeddings: {kind: glove}\n", ":10: embeddings:", "'random', 'explicit'"),
    "nothing to measure": ("name: t\n", "inputs: nothing to measure", "at least one entry"),
    "not a mapping": ("- just\n- a list\n", ":1:", "expected a YAML mapping"),
    "not YAML": ("name: [unclosed\n", "not valid YAML", ":2"),
    "empty file": ("", "the file is empty", "YAML mapping"),
    "unknown key inside a list item": (
        GOOD.replace("- sentence:", "- sentenc:"),
        ":8: inputs[0].sentenc: unknown key",
        "Did you mean: sentence?",
    ),
    "unknown encoding parameter": (
        GOOD.replace("[none, rope]", "[none, {name: rope, bse: 3}]"),
        ":6: encodings[1]: rope: unknown parameter 'bse'",
        "Did you mean: base?",
    ),
    "zero random permutations": (
        GOOD.replace("permutations: all", "permutations: {random: 0}"),
        ":9: inputs[0].permutations.random: got 0",
        "greater than or equal to 1",
    ),
    "random without a count": (
        GOOD.replace("permutations: all", "permutations: random"),
        ":9: inputs[0].permutations:",
        "'random' needs a count of orderings to draw; expected {random: K}",
    ),
    "a metrics.csv row named as a metrics entry": (
        GOOD + "metrics: [pair_cosine]\n",
        ":10: metrics[0]: 'pair_cosine' is a row of metrics.csv, written by the `pair_distance` entry",
        "expected metrics: [pair_distance]",
    ),
    "misspelt metrics entry": (
        GOOD + "metrics: [equivarance]\n",
        ":10: metrics[0]: unknown metrics entry 'equivarance'. Did you mean: equivariance?",
    ),
    "bad weights shape": (
        GOOD.replace("n_layers: 1", "n_layers: 1\n  weights: {W_Q: [[1]], W_K: [[1]], W_V: [[1]]}"),
        ":6: model.weights.W_Q: expected a 8 x 8 matrix",
    ),
}


@pytest.mark.parametrize("case", list(BAD_SPECS), ids=list(BAD_SPECS))
def test_bad_spec_gives_one_line_and_exit_2(case, cli, write_spec):
    text, *fragments = BAD_SPECS[case]
    path = write_spec(text)
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}"), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output


def test_missing_file_is_named(cli, tmp_path):
    result = cli.invoke(app, ["validate", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {tmp_path / 'nope.yaml'}: file not found"


def test_run_refuses_a_bad_spec_with_the_same_line(cli, write_spec, tmp_path):
    path = write_spec(GOOD.replace("n_layers: 1", "n_layers: 0"))
    result = cli.invoke(app, ["run", str(path), "--out", str(tmp_path / "out"), "--quiet"])
    assert result.exit_code == 2
    assert ":5: model.n_layers:" in result.output and "greater than or equal to 1" in result.output
    assert not (tmp_path / "out").exists()


def test_good_spec_validates(cli, write_spec):
    result = cli.invoke(app, ["validate", str(write_spec(GOOD))])
    assert result.exit_code == 0 and "ok (t)" in result.output


def test_alias_bomb_is_refused(cli, write_spec):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]"
        for i in range(1, 9)
    ]
    result = cli.invoke(app, ["validate", str(write_spec("\n".join(lines) + "\n"))])
    assert result.exit_code == 2 and "through YAML aliases" in result.output


# Specs with several problems: every one is listed, one line each, in the file's order, and the exit code is 2.
SEVERAL_PROBLEMS = {
    "unknown key and unknown encoding": (
        GOOD.replace("n_layers: 1", "n_layer: 1").replace("[none, rope]", "[none, ropee]"),
        [":5: model.n_layer: unknown key 'n_layer'. Did you mean: n_layers?",
         ":6: encodings[1]: Unknown encoding 'ropee'. Did you mean: rope?"],
    ),
    "two fields of the wrong type": (
        GOOD.replace("n_layers: 1", "n_layers: two").replace("d_model: 8", "d_model: wide"),
        [":3: model.d_model:", ":5: model.n_layers:"],
    ),
    "two relations": (
        GOOD.replace("d_model: 8", "d_model: 9").replace("permutations: all", "permutations: [[0, 0, 1]]"),
        [":3: model.d_model: 9 is not divisible by n_heads=2", ":9: inputs[0].permutations:"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(SEVERAL_PROBLEMS), ids=list(SEVERAL_PROBLEMS))
def test_every_problem_of_a_spec_in_one_listing(case, cli, write_spec):
    text, expected = SEVERAL_PROBLEMS[case]
    path = write_spec(text)
    result = cli.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == len(expected), result.output
    for line, fragment in zip(lines, expected, strict=True):
        assert line.startswith(f"error: {path}:") and fragment in line, line
    assert "Traceback" not in result.output
