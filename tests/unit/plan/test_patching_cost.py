"""The patching block priced beside the run (plan/patching_cost.py, validate --plan): its passes, sequences and rows
counted as measure/patching.py makes them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orderlab.plan.estimate import estimate
from orderlab.plan.patching_cost import patching_cost
from orderlab.spec.load import load_spec

GPT2 = {"kind": "hf", "family": "gpt2", "d_model": 16, "n_heads": 2, "n_layers": 2, "position_embeddings": ["zero"]}


def priced(tmp_path: Path, patching: dict | None, model: dict = GPT2, encodings: list[str] | None = None):
    orders = [[2, 0, 3, 1, 4], [1, 0, 2, 3, 4]]
    spec = {"name": "priced", "model": model, "metrics": ["equivariance"],
            "inputs": [{"sentence": "the dog saw a cat", "permutations": orders}]}  # fmt: skip
    if encodings is not None:
        spec["encodings"] = encodings
    if patching is not None:
        spec["patching"] = patching
    path = tmp_path / "priced.yaml"
    path.write_text(yaml.safe_dump(spec))
    loaded = load_spec(path).spec
    return patching_cost(loaded, path, estimate(loaded, path))


@pytest.mark.parametrize(
    ("patching", "groups", "layers"),
    [({}, 6, 2), ({"slots": "all", "layers": [2]}, 1, 1), ({"slots": [[0], [], [1, 2]], "points": ["output", "input"]},
                                                           3, 4)],
)  # fmt: skip
def test_passes_sequences_and_rows_are_counted_as_the_measurement_makes_them(tmp_path, patching, groups, layers):
    cost = priced(tmp_path, patching)
    pairs = 2  # one condition, two reorderings of one input
    assert cost is not None
    assert cost.rows == pairs * layers * groups
    assert cost.passes == 2 * pairs * (1 + layers)  # the twin's too: a recording pass, then one per point and layer
    assert cost.sequences == 2 * pairs * (2 + layers * groups)
    assert cost.seconds > 0


def test_the_stack_is_priced_per_encoding_and_layer(tmp_path):
    stack = {"d_model": 16, "n_heads": 2, "n_layers": 3}
    cost = priced(tmp_path, {"slots": "all"}, stack, ["none", "rope"])
    assert cost is not None
    assert cost.rows == 2 * 2 * 3  # two encodings' two reorderings, each layer's one group
    assert cost.passes == 2 * 2 * 2 * (1 + 3) and cost.seconds > 0


def test_a_spec_without_patching_prices_none(tmp_path):
    assert priced(tmp_path, None) is None


def test_validate_plan_shows_the_patching_line(tmp_path):
    from typer.testing import CliRunner

    from orderlab.cli import app

    priced(tmp_path, {})
    shown = CliRunner().invoke(app, ["validate", "--plan", str(tmp_path / "priced.yaml")])
    assert shown.exit_code == 0, shown.output
    assert "patching (api.patch): 56 sequences in 12 passes" in shown.output
