"""Numbers in a spec that no field can hold: an integer past Python's int-parsing limit, a boolean where a number
belongs; each is one line, exit 2."""

from __future__ import annotations

import pytest

from orderlab.cli import app

DIGITS = "9" * 5000


@pytest.mark.parametrize(
    ("where", "field", "line"),
    [
        (f"seed: {DIGITS}\nmodel: {{d_model: 2, n_heads: 1}}\n", "seed", 2),
        (f"model: {{d_model: {DIGITS}, n_heads: 1}}\n", "model.d_model", 2),
        (f"model: {{d_model: 2, n_heads: 1}}\nembeddings: {{kind: explicit, vectors: {{a: [1, -{DIGITS}]}}}}\n",
         "embeddings.vectors.a[1]", 3),
        (f"model: {{d_model: 2, n_heads: 1}}\ninputs:\n  - sentence: a b\n    permutations: [[1, 0x{DIGITS}]]\n",
         "inputs[0].permutations[0][1]", 5),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_5000_digit_integer_is_one_line_naming_file_line_and_field(cli, write_spec, tmp_path, where, field, line,
                                                                     command):  # fmt: skip
    inputs = "" if "inputs:" in where else "inputs:\n  - sentence: a b\n"
    spec = write_spec(f"name: x\n{where}{inputs}")
    out = ["--out", str(tmp_path / "out")] if command == "run" else []
    result = cli.invoke(app, [command, str(spec), *out])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}:{line}: {field}: an integer of "), result.output
    assert lines[0].endswith("characters; expected at most 100") and len(lines[0]) < 300
    assert not (tmp_path / "out").exists()


def test_a_long_but_parseable_seed_is_still_an_ordinary_error(cli, write_spec):
    spec = write_spec("name: x\nseed: " + "9" * 90 + "\ninputs:\n  - sentence: a b\n")
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2 and "seed" in result.output and "characters" not in result.output, result.output


@pytest.mark.parametrize(
    ("where", "field", "line"),
    [
        ("model: {d_model: 8, n_heads: 2, n_layers: yes}\n", "model.n_layers", 2),
        ("model: {d_model: true, n_heads: 1}\n", "model.d_model", 2),
        ("seed: on\n", "seed", 2),
        ("model: {d_model: 8, n_heads: [2, yes]}\n", "model.n_heads[1]", 2),
        ("model: {d_model: 2, n_heads: 1}\nembeddings: {kind: explicit, vectors: {a: [1, false], b: [0, 1]}}\n",
         "embeddings.vectors.a[1]", 3),
        ("inputs:\n  - sentence: a b\n    permutations: [[true, 0]]\n", "inputs[0].permutations[0][0]", 4),
        ("encodings: [{name: alibi, max_bias: true}]\n", "encodings[0]", 2),
    ],
)  # fmt: skip
def test_a_boolean_is_never_read_as_a_number(cli, write_spec, where, field, line):
    """YAML 1.1 reads yes/no/on/off as booleans and pydantic's lax mode reads booleans as 1 and 0: `n_layers: yes`
    was a one-layer stack. A boolean where a number belongs is one line naming the file, line and field."""
    inputs = "" if "inputs:" in where else "inputs:\n  - sentence: a b\n"
    spec = write_spec(f"name: x\n{where}{inputs}")
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}:{line}: {field}: "), result.output
    assert "a boolean" in lines[0] and "where a number is expected" in lines[0]


def test_a_boolean_where_a_boolean_belongs_is_still_one(cli, write_spec):
    spec = write_spec(
        "name: x\nmodel: {d_model: 8, n_heads: 2, causal: yes, residual: false}\ninputs:\n  - sentence: a b\n"
    )
    assert cli.invoke(app, ["validate", str(spec)]).exit_code == 0
