"""Terminal rendering: tables rendered into an 80-column text console and read as text."""

from __future__ import annotations

import io

import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.measure.rows import summarize
from orderlab.metrics import RATE_COUNT
from orderlab.report.terminal import rate_text, summary_tables
from orderlab.spec.extras import installed

ENCODINGS = ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope"]


def render(tables, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    for table in tables:
        console.print(table)
    return console.file.getvalue()


def fake_summary() -> pd.DataFrame:
    row = {"case": "permutation", "subject": "the dog bites the man", "metric": "equivariance"}
    for index, name in enumerate(ENCODINGS):
        row[name] = 0.0 if index == 0 else 0.1 * index
        row[f"{name} verdict"] = "equivariant" if index == 0 else "order-sensitive"
    return pd.DataFrame([row])


def test_many_encodings_split_into_tables_that_fit_without_truncation():
    text = render(summary_tables(fake_summary(), ENCODINGS, "tour", "float64", width=80))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    for name in ENCODINGS:
        assert name in text
    assert "≈0 ✓" in text and "7.0e-01 ✗" in text
    assert text.count("the dog bites the man") == 2  # one heading per table


def test_a_wide_console_gets_one_table():
    tables = summary_tables(fake_summary(), ENCODINGS, "tour", "float64", width=200)
    assert len(tables) == 1


# --- reductions: a 0/1 flag reads as a rate with its count, a typical size as its mean ---------------------


def lm_worst_rows() -> pd.DataFrame:
    """Max rows as finish_summary hands them to summarize: each with its `mean` and `count` over 24 permutations."""
    rows = []
    for encoding, (accepted, change) in {"trained": (10, 0.08), "zero": (6, 0.04)}.items():
        common = {"case": "permutation", "input": "the dog bit the man", "permuted": "", "encoding": encoding,
                  "layer": 2, "count": 24, "verdict": "order-sensitive"}  # fmt: skip
        rows.append(common | {"metric": "permutation_preferred", "value": 1.0, "mean": accepted / 24})
        rows.append(common | {"metric": "logprob_change", "value": 0.4, "mean": change})
    return pd.DataFrame(rows)


def test_a_flag_reads_as_its_rate_with_the_count_and_logprob_change_as_its_mean():
    summary = summarize(lm_worst_rows(), ["trained", "zero"])
    text = render(summary_tables(summary, ["trained", "zero"], "lm", "float32", width=80))
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "0.42 (10/24)" in text and "0.25 (6/24)" in text
    assert "8.0e-02 ✗" in text and "4.0e-02 ✗" in text  # the means, marked by the worst value's verdict
    assert "1.0e+00" not in text and "4.0e-01" not in text  # neither worst value is what a reader wants
    assert "permutation_preferred: share of permutations at 1" in " ".join(text.split())
    assert "logprob_change: mean over permutations" in " ".join(text.split())
    counts = summary.set_index("metric")[RATE_COUNT]
    assert counts["permutation_preferred"] == 24 and pd.isna(counts["logprob_change"])


def test_a_summary_without_a_rate_keeps_its_columns():
    rows = lm_worst_rows()
    summary = summarize(rows[rows["metric"] == "logprob_change"], ["trained", "zero"])
    assert RATE_COUNT not in summary.columns


@pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
def test_run_of_a_causal_lm_shows_its_acceptance_rate(tmp_path):
    spec = tmp_path / "lm.yaml"
    spec.write_text(
        "name: lm\nmodel: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 2, dtype: float64}\n"
        "inputs: [{sentence: the dog bites the man, permutations: prefixes}]\nmetrics: [lm_logprob]\n"
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    metrics = pd.read_csv(tmp_path / "lm" / "metrics.csv").query("encoding == 'seeded'")  # seeded weights
    summary = pd.read_csv(tmp_path / "lm" / "summary.csv").set_index("metric")
    flags = metrics.loc[metrics["metric"] == "permutation_preferred", "value"]
    assert len(flags) == 24 and summary.loc["permutation_preferred", RATE_COUNT] == 24
    assert summary.loc["permutation_preferred", "seeded"] == pytest.approx(flags.mean(), abs=1e-6)
    changes = metrics.loc[metrics["metric"] == "logprob_change", "value"]
    assert summary.loc["logprob_change", "seeded"] == pytest.approx(changes.mean(), rel=1e-5)
    assert f"{flags.mean():.2f} ({int(flags.sum())}/24)" in result.output


def test_a_bar_s_rate_names_its_unit_and_turns_to_seconds_per_unit_when_slow():
    assert rate_text(1234.4, "seq") == "1,234 seq/s"
    assert rate_text(0.25, "spec") == "4.0 s/spec"  # compare's bar counted specs and showed '0 seq/s'
    assert rate_text(None, "spec") == "" and rate_text(0.0, "seq") == ""


# --- tables that fit: at 60, 80 and 120 columns nothing is cropped ---------------------------------------------

BOX_EDGES = set("│┃┏┓┗┛┡┩└┘├┤┣┫╇┳┻┼╋━─┯┷╈")


def assert_nothing_cropped(text: str, width: int) -> None:
    """Every line fits, and every line of a table's box closes with its right border (a cropped table's do not)."""
    for line in text.splitlines():
        assert len(line.rstrip()) <= width, line
        body = line.strip()
        if body and body[0] in BOX_EDGES:
            assert body[-1] in BOX_EDGES, f"cropped at {width}: {line!r}"
    assert "…" not in text


FOUR_ABLATIONS = """\
name: four_ablations
description: Does a tiny GPT-2 tell word orders apart with and without its position table, and with others in its place?
model: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 1,
        position_embeddings: [trained, zero, shuffled, sinusoidal]}
inputs: [{sentence: the dog bit the man, permutations: prefixes}]
metrics: [prefix_invariance, lm_logprob, invariance]
"""
FOUR_ENCODINGS_OVER_SEEDS = """\
name: four_encodings
description: Four encodings over three seeds, each cell a mean with its interval, and a caption that says so at length
seed: [0, 1, 2]
model: {d_model: 8, n_heads: 2, n_layers: 1}
encodings: [none, sinusoidal, rope, alibi]
inputs: [{sentence: dog bites man, permutations: all}]
metrics: [equivariance, invariance]
"""


@pytest.mark.parametrize("spec", ["four_ablations", "four_encodings_over_seeds"])
def test_a_runs_tables_fit_60_80_and_120_columns_whole(spec, tmp_path):
    from orderlab.commands.run import write_experiment
    from orderlab.plan.load import load_spec
    from orderlab.report.terminal import VERDICT_LEGEND, run_tables

    if spec == "four_ablations" and not installed("transformers"):
        pytest.skip("the hf extra is not installed")
    path = tmp_path / f"{spec}.yaml"
    path.write_text(FOUR_ABLATIONS if spec == "four_ablations" else FOUR_ENCODINGS_OVER_SEEDS)
    outcome = write_experiment(load_spec(path), tmp_path / "results" / spec)
    metrics = list(dict.fromkeys(outcome.view.summary["metric"]))
    for width in (60, 80, 120):
        text = render(run_tables(outcome.view, width), width)
        assert_nothing_cropped(text, width)
        for name in [*metrics, *outcome.view.encodings]:
            assert f" {name} " in text, (width, name)  # whole, never broken across lines
        words = " ".join(text.split())
        assert VERDICT_LEGEND in words and outcome.view.title in words  # caption and title whole, wrapped
    if spec == "four_ablations":
        assert len(run_tables(outcome.view, 120)) == 1  # wide enough: one table


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_encodings_listing_fits_and_keeps_references_whole(width):
    result = CliRunner().invoke(app, ["encodings"], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    assert_nothing_cropped(result.output, width)
    for reference in ("arXiv:2104.09864", "arXiv:1810.04805", "arXiv:2108.12409", "arXiv:1910.10683"):
        assert reference in result.output, (width, reference)


def test_compare_of_every_encoding_fits_80_columns(tmp_path):
    spec = tmp_path / "tiny.yaml"
    spec.write_text("name: tiny\nmodel: {d_model: 8, n_heads: 2, n_layers: 1}\ninputs: [{sentence: a b c}]\n")
    args = ["compare", "-e", "all", str(spec), "-m", "equivariance", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert_nothing_cropped(result.output, 80)
    for name in ENCODINGS:
        assert f" {name} " in result.output, name
