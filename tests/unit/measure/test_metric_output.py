"""A metric's output is input from a stranger (issue 42): a plug-in metric that returns the wrong number of values,
a list, strings or integers is one line naming the metric (exit 2), never a traceback from the row collectors or
rows paired with the wrong permutations; non-finite values are rows whose verdict is non-finite (exit 1), as for
non-finite states."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.metrics import BOTH, METRIC_FAMILIES, METRICS, family, row_metric

RETURNS = {  # what the plug-in returns for a chunk of B reorderings
    "one too many": lambda b: torch.zeros(b + 1),
    "a list of strings": lambda b: ["fine"] * b,
    "integers": lambda b: torch.zeros(b, dtype=torch.int64),
    "a column": lambda b: torch.zeros(b, 1),
    "NaN": lambda b: torch.full((b,), float("nan")),
}


@pytest.fixture
def plugin():
    """A metric registered as a plug-in would: one decorated function; `plugin.returns` picks what it returns."""

    class Returns:
        returns = "NaN"

    def value(c, layer, pooling):
        return RETURNS[Returns.returns](c.slots.shape[0])

    row_metric("wobbly", family("wobbles", "a plug-in's family"), BOTH, "permutation × layer", "doc")(value)
    yield Returns
    METRICS.unregister("wobbly")
    METRIC_FAMILIES.unregister("wobbles")


def run(write_spec, tmp_path):
    spec = write_spec(
        "name: wobbly\nmodel: {d_model: 8, n_heads: 2, n_layers: 1}\nencodings: [none]\n"
        "inputs: [{sentence: the cat sat, permutations: all}]\nmetrics: [wobbles]\n"
    )
    return CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path / "out"), "-q"])


@pytest.mark.parametrize(
    "returns, got",
    [
        ("one too many", "values shaped (2,) for 1 reordering"),
        ("a list of strings", "a list"),
        ("integers", "a torch.int64 tensor"),
        ("a column", "values shaped (1, 1) for 1 reordering"),
    ],
)
def test_a_metric_returning_what_rows_cannot_take_is_one_line_naming_it(returns, got, plugin, write_spec, tmp_path):
    plugin.returns = returns
    ran = run(write_spec, tmp_path)
    assert ran.exit_code == 2, ran.output
    assert ran.output == (
        f"error: metric 'wobbly' at layer 0 returned {got}; expected a floating-point torch tensor shaped (1,)\n"
    )
    assert not (tmp_path / "out" / "wobbly" / "metrics.csv").exists()


def test_a_metric_returning_non_finite_values_writes_rows_whose_verdict_is_non_finite(plugin, write_spec, tmp_path):
    ran = run(write_spec, tmp_path)
    assert ran.exit_code == 1, ran.output  # as for non-finite states: the rows written, the run's exit code 1
    assert ran.output.startswith("error: 12 value(s) came out NaN or inf: written as nan/inf with verdict non-finite")
    rows = pd.read_csv(tmp_path / "out" / "wobbly" / "metrics.csv", keep_default_na=False)
    wobbly = rows[rows["metric"] == "wobbly"]
    assert len(wobbly) == 6 * 2 and set(wobbly["verdict"]) == {"non-finite"}
