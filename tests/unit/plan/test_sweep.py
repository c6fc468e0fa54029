"""Sweeps: list-valued model fields expand into their product, and every row names its combination."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.errors import SpecError
from orderlab.measure.run_options import RunOptions
from orderlab.measure.sweep_measure import run_sweep
from orderlab.spec.load import load_spec
from orderlab.spec.sweep import plan
from orderlab.vocabulary.columns import COLUMNS, KEY_COLUMNS

SWEEP = """
model: {d_model: 8, n_heads: 2, n_layers: [1, 2, 3], causal: [false, true], residual: [true, false]}
encodings: [none]
inputs:
  - sentence: a b c
    permutations: reverse
metrics: [equivariance]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(text)
    return path


def test_plan_is_the_product_of_the_lists_in_declaration_order(tmp_path):
    configurations = plan(load_spec(write(tmp_path, SWEEP)).spec)
    assert len(configurations) == 3 * 2 * 2
    assert configurations[0].columns == {"n_layers": 1, "residual": True, "causal": False}
    assert {(c.spec.model.n_layers, c.spec.model.causal, c.spec.model.residual) for c in configurations} == {
        (n, c, r) for n in (1, 2, 3) for c in (False, True) for r in (True, False)
    }


def test_sweep_rows_lead_with_the_swept_columns_and_are_sorted_by_them(tmp_path):
    table = run_sweep(load_spec(write(tmp_path, SWEEP)).spec).metrics
    assert list(table.columns) == ["n_layers", "residual", "causal", *COLUMNS]
    keys = ["n_layers", "residual", "causal", *KEY_COLUMNS]
    assert table.equals(table.sort_values(keys, kind="mergesort", na_position="first", ignore_index=True))
    # one reversal per configuration, one equivariance row per layer 0..n_layers
    assert len(table) == 2 * 2 * sum(n + 1 for n in (1, 2, 3))
    assert table.groupby(["n_layers", "residual", "causal"]).size().to_dict()[(3, True, False)] == 4


def test_spec_without_lists_keeps_its_columns(tmp_path):
    table = run_sweep(load_spec(write(tmp_path, SWEEP.replace("[1, 2, 3]", "2").replace("[false, true]", "false")
                                    .replace("[true, false]", "true"))).spec).metrics  # fmt: skip
    assert list(table.columns) == COLUMNS


def test_a_bad_combination_names_the_field_and_the_combination(tmp_path):
    path = write(tmp_path, "model: {d_model: 12, n_heads: [2, 5]}\ninputs: [{sentence: a b}]\n")
    with pytest.raises(SpecError) as error:
        load_spec(path)
    assert str(error.value) == (
        f"{path}:1: model.d_model: 12 is not divisible by n_heads=5; expected a multiple "
        "(in the sweep combination n_heads=5)"
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("{n_layers: [1, 0]}", "model.n_layers[1]: got 0; expected greater than or equal to 1"),
        ("{n_layers: []}", "model.n_layers: List should have at least 1 item"),
        ("{causal: [true, true]}", "model.causal: True is listed twice; expected distinct values"),
        ("{norm: [pre, psot]}", "model.norm[1]: got 'psot'; expected 'pre', 'post' or 'none'"),
    ],
)
def test_bad_sweep_values_are_one_line_errors(tmp_path, model, expected):
    result = CliRunner().invoke(
        app, ["validate", str(write(tmp_path, f"model: {model}\ninputs: [{{sentence: a b}}]\n"))]
    )
    assert result.exit_code == 2
    assert expected in result.output
    assert "Traceback" not in result.output


def test_progress_counts_every_combination_once_and_never_goes_back(tmp_path):
    seen: list[tuple[int, int]] = []
    run_sweep(
        load_spec(write(tmp_path, SWEEP)).spec, RunOptions(progress=lambda done, total: seen.append((done, total)))
    )
    done = [d for d, _ in seen]
    assert done == sorted(done) and {total for _, total in seen} == {12}  # 12 combinations x 1 reversal
    assert done[-1] == 12
