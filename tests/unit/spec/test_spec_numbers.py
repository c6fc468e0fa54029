"""Numbers in a spec that no field can hold: an integer past Python's int-parsing limit, a boolean where a number
belongs; each is one line, exit 2."""

from __future__ import annotations

import pytest

from orderlab.cli import app

DIGITS = "9" * 5000


BOOLEAN = "a boolean (true or false) where a number is expected; write the number"
WORD = "expected a valid integer"


@pytest.mark.parametrize(
    ("where", "field", "line", "expected"),
    [
        ("model: {d_model: 8, n_heads: 2, n_layers: yes}\n", "model.n_layers", 2, f"got 'yes'; {WORD}"),
        ("model: {d_model: true, n_heads: 1}\n", "model.d_model", 2, BOOLEAN),
        ("seed: on\n", "seed", 2, f"got 'on'; {WORD}"),
        ("model: {d_model: 8, n_heads: [2, TRUE]}\n", "model.n_heads[1]", 2, BOOLEAN),
        ("model: {d_model: 2, n_heads: 1}\nembeddings: {kind: explicit, vectors: {a: [1, false], b: [0, 1]}}\n",
         "embeddings.vectors.a[1]", 3, BOOLEAN),
        ("inputs:\n  - sentence: a b\n    permutations: [[true, 0]]\n", "inputs[0].permutations[0][0]", 4, BOOLEAN),
        ("encodings: [{name: alibi, max_bias: true}]\n", "encodings[0]", 2, BOOLEAN),
    ],
)  # fmt: skip
def test_a_boolean_is_never_read_as_a_number(cli, write_spec, where, field, line, expected):
    """Pydantic's lax mode reads booleans as 1 and 0 (and YAML 1.1 read yes/no/on/off as booleans: `n_layers: yes`
    was a one-layer stack). A boolean, or a word, where a number belongs is one line naming the file, line and
    field; yes, no, on and off are words (YAML 1.2)."""
    inputs = "" if "inputs:" in where else "inputs:\n  - sentence: a b\n"
    spec = write_spec(f"name: x\n{where}{inputs}")
    result = cli.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {spec}:{line}: {field}: "), result.output
    assert expected in lines[0]


def test_a_boolean_where_a_boolean_belongs_is_still_one(cli, write_spec):
    spec = write_spec(
        "name: x\nmodel: {d_model: 8, n_heads: 2, causal: yes, residual: false}\ninputs:\n  - sentence: a b\n"
    )
    assert cli.invoke(app, ["validate", str(spec)]).exit_code == 0
