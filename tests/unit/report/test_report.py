"""Terminal rendering: tables rendered into an 80-column text console and read as text."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from terminaltext import assert_nothing_cropped, render
from typer.testing import CliRunner

from orderlab.cli import app
from orderlab.measure.summaries import summarize
from orderlab.metrics import RATE_COUNT
from orderlab.report.fitting import legend_lines
from orderlab.report.terminal import rate_text, summary_tables
from orderlab.spec.extras import installed

ENCODINGS = ["none", "sinusoidal", "learned", "rope", "alibi", "t5", "xpos", "cope"]


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
    assert "permutation_preferred: share of the distinct reorderings at 1" in " ".join(text.split())
    assert "logprob_change: mean over the distinct reorderings" in " ".join(text.split())
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
    # "the dog bites the" has 24 orders but 12 sentences; the identity (the first) is never in the rate's denominator
    moved = metrics[metrics["permuted"] != "the dog bites the man"]
    flags = moved.loc[moved["metric"] == "permutation_preferred", "value"]
    assert len(metrics[metrics["metric"] == "permutation_preferred"]) == 12
    assert len(flags) == 11 and summary.loc["permutation_preferred", RATE_COUNT] == 11
    assert summary.loc["permutation_preferred", "seeded"] == pytest.approx(flags.mean(), abs=1e-6)
    changes = moved.loc[moved["metric"] == "logprob_change", "value"]
    assert summary.loc["logprob_change", "seeded"] == pytest.approx(changes.mean(), rel=1e-5)
    assert f"{flags.mean():.2f} ({int(flags.sum())}/11)" in result.output


@pytest.mark.skipif(not installed("transformers"), reason="needs the optional extra: orderlab[hf]")
def test_lm_scores_are_written_in_full_and_the_rate_is_over_the_distinct_reorderings(tmp_path):
    """'the cat chased the dog' under `all`: 120 orders of slots, 60 sentences; the acceptance rate was 0.75 (90/120)
    with the identity and the sentence-identical orders in its denominator. Now 59 reorderings, and log P per row."""
    spec = tmp_path / "lm.yaml"
    spec.write_text(
        "name: lm\nmodel: {kind: hf, family: gpt2, d_model: 16, n_heads: 2, n_layers: 2, dtype: float64,\n"
        "  position_embeddings: [trained]}\n"
        "inputs: [{sentence: the cat chased the dog, permutations: all}]\nmetrics: [lm_logprob]\n"
    )
    result = CliRunner().invoke(app, ["run", str(spec), "--out", str(tmp_path)], env={"COLUMNS": "120"})
    assert result.exit_code == 0, result.output
    rows = pd.read_csv(tmp_path / "lm" / "metrics.csv", keep_default_na=False)
    wide = rows.pivot(index="permutation", columns="metric", values="value")
    assert len(wide) == 60 and rows.groupby("metric")["permuted"].nunique().eq(60).all()
    assert wide["logprob_reference"].nunique() == 1 and (wide["logprob"] < 0).all()
    written = (wide["logprob"] - wide["logprob_reference"]).to_numpy()  # each to 7 digits (%.6e)
    assert wide["logprob_delta"].to_numpy() == pytest.approx(written, abs=1e-5)
    assert (wide["permutation_preferred"] == (wide["logprob_delta"] > 0)).all()
    flags = rows[rows["metric"] == "permutation_preferred"]
    assert set(flags["verdict"]) <= {"preferred", "not preferred", "tie"}  # a flag is never 'invariant'
    assert flags.loc[flags["permutation"] == "0 1 2 3 4", "verdict"].tolist() == ["tie"]  # X against itself
    assert set(rows.loc[rows["metric"].isin(["logprob", "logprob_reference", "logprob_delta"]), "verdict"]) == {""}
    summary = pd.read_csv(tmp_path / "lm" / "summary.csv").set_index("metric")
    moved = wide.drop(index="0 1 2 3 4")  # the identity is never in the rate's denominator
    preferred = int((moved["logprob_delta"] > 0).sum())
    assert summary.loc["permutation_preferred", RATE_COUNT] == 59
    assert summary.loc["permutation_preferred", "seeded"] == pytest.approx(preferred / 59)
    assert pd.isna(summary.loc["permutation_preferred", "seeded verdict"])  # a share is no one answer's 'preferred'
    assert summary.loc["original_rank", "seeded"] == 1 + preferred  # ranked by log P among the 60 sentences
    assert f"{preferred / 59:.2f} ({preferred}/59)" in result.output and f"{1 + preferred} of 60" in result.output
    assert "logprob_delta" not in result.output.split("wrote")[0]  # per-row values: in metrics.csv, not the summary


def test_a_bar_s_rate_names_its_unit_and_turns_to_seconds_per_unit_when_slow():
    assert rate_text(1234.4, "seq") == "1,234 seq/s"
    assert rate_text(0.25, "spec") == "4.0 s/spec"  # compare's bar counted specs and showed '0 seq/s'
    assert rate_text(None, "spec") == "" and rate_text(0.0, "seq") == ""


# --- tables that fit: at 60, 80 and 120 columns nothing is cropped ---------------------------------------------

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
    from orderlab.report.terminal import VERDICT_LEGEND, run_tables
    from orderlab.spec.load import load_spec

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


# --- the caption: wrapped at the table's width, a mark never cut from its meaning ----------------------------


@pytest.mark.parametrize("width", [60, 80, 120])
def test_the_caption_never_cuts_a_mark_from_its_meaning(width):
    summary = fake_summary()
    summary["rope first layer"] = 1
    text = render(summary_tables(summary, ["rope"], "one", "float64", width=width), width=width)
    caption = [line.strip() for line in text.split("┘", 1)[1].splitlines() if line.strip()]
    assert caption and not any(line.endswith((" =", "✓", "✗", "!", "(0")) or line.startswith("=") for line in caption)
    assert "✗ = order-sensitive" in " ".join(caption) and "(0 = the input" in " ".join(caption)
    assert max(len(line) for line in text.splitlines()) <= width


WORDS = st.sampled_from(["✗", "order-sensitive,", "a", "longer-word", "(0", "x;"])


@given(words=st.lists(st.one_of(WORDS, st.just("=")), min_size=1, max_size=30).filter(
    lambda words: words[0] != "=" and words[-1] != "="), width=st.integers(8, 40))  # fmt: skip
def test_legend_lines_keep_each_equation_whole_and_every_word(words, width):
    text = " ".join(words)
    lines = legend_lines(text, width)
    assert " ".join(lines) == text  # every word, in order
    for index, line in enumerate(lines):
        assert not line.endswith(" =") and (index == 0 or not line.startswith("= "))
        tokens = line.split(" ")
        breaks = [i for i in range(len(tokens) - 1) if "=" not in (tokens[i], tokens[i + 1])]
        assert cell_len(line) <= width or not breaks  # too wide only where nothing could break
