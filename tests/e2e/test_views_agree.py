"""Every view of a summary row reads the same number: the terminal (at 80 columns), summary.csv, the figure's bars,
the HTML report and a notebook's Result. Run through the CLI on the shipped minimal-pair spec (a causal LM's rates,
ranks, means and verdicts), and on a spec of probes alone."""

from __future__ import annotations

import html
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import orderlab.api as ol
from orderlab.cli import app
from orderlab.metrics import RATE_COUNT, RATE_TIES, reduction_of
from orderlab.report.figures import drawings, read_results
from orderlab.report.html import read_folder
from orderlab.report.shown import first_layer_text, share_text, verdict_text

pytest.importorskip("transformers")
ROOT = Path(__file__).resolve().parents[2]
CONDITIONS = ["seeded", "zero"]


def expected_cell(row: pd.Series, name: str) -> str | None:
    """What every view must show of one condition's cell (None: a rank, drawn '1 of 2', checked elsewhere)."""
    value, reduction = float(row[name]), reduction_of(row["metric"])
    if reduction == "rate":
        split = f"{name} {RATE_COUNT}" in row.index  # each condition's own count and ties, where theirs differ
        count, ties = (row[f"{name} {column}" if split else column] for column in (RATE_COUNT, RATE_TIES))
        return share_text(value, None if pd.isna(count) else int(count), None if pd.isna(ties) else int(ties))
    return None if reduction == "rank" else verdict_text(value, row[f"{name} verdict"] or "")


def run(tmp_path: Path, spec: Path) -> tuple[str, Path, pd.DataFrame]:
    shutil.copy(spec, tmp_path / spec.name)
    result = CliRunner().invoke(app, ["run", str(tmp_path / spec.name), "--out", str(tmp_path)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    folder = tmp_path / spec.stem
    counts = [RATE_COUNT, RATE_TIES, *(f"{name} {column}" for name in CONDITIONS for column in (RATE_COUNT, RATE_TIES))]
    kinds = dict.fromkeys(counts, "Int64") | {f"{name} verdict": str for name in CONDITIONS}
    summary = pd.read_csv(folder / "summary.csv", dtype=kinds, keep_default_na=False, na_values=[""])
    summary = summary.astype(dict.fromkeys(CONDITIONS, float))  # 'nan' too: a rate without a decided answer
    return result.output, folder, summary.fillna({f"{name} verdict": "" for name in CONDITIONS})


def terminal_rows(output: str, metric: str) -> list[tuple[str, ...]]:
    """The cells of every terminal line of `metric`: (condition cells..., first layers)."""
    rows = [line.split("│")[1:-1] for line in output.splitlines() if line.startswith(f"│   {metric} ")]
    return [tuple(cell.strip() for cell in cells[1:]) for cells in rows]


def assert_views_agree(output: str, folder: Path, summary: pd.DataFrame) -> None:
    firsts = [f"{name} first layer" for name in CONDITIONS]
    for metric, rows in summary.groupby("metric"):
        if reduction_of(str(metric)) == "rank":
            continue
        expected = [
            (*(expected_cell(row, name) for name in CONDITIONS), "/".join(first_layer_text(row[f]) for f in firsts))
            for _, row in rows.iterrows()
        ]
        assert sorted(terminal_rows(output, str(metric))) == sorted(expected), metric  # terminal = summary.csv
    page = {table.name: table for table in read_folder(folder, "run").tables}["summary.csv"]
    notebook = ol.load(folder)._repr_html_()
    for (_, row), cells in zip(summary.iterrows(), page.rows, strict=True):
        shown = dict(zip(page.columns, (cell.text for cell in cells), strict=True))
        for name in CONDITIONS:
            if (text := expected_cell(row, name)) is not None:
                assert shown[name] == text, (row["subject"], name)  # the HTML report = summary.csv
                assert f">{html.escape(text)}<" in notebook, (row["subject"], name)  # and the notebook
    assert_bars_agree(folder, summary)


def assert_bars_agree(folder: Path, summary: pd.DataFrame) -> None:
    """A bar per condition and family: its height and its label are the summary row's rate (the probes' row over all
    pairs, or the one sentence's over its reorderings)."""
    (figure,) = [d.figure for d in drawings(folder, read_results(folder)) if d.kind == "metrics"]
    figure.draw_without_rendering()
    panels = {ax.get_title().split("\n")[0]: ax for ax in figure.axes if ax.get_visible()}
    for metric, ax in panels.items():
        if reduction_of(metric) != "rate":
            continue
        rows = summary[(summary["metric"] == metric) & summary["case"].isin(["probes", "permutation"])]
        labels = [text.get_text() for text in ax.texts]
        for tick, bar, label in zip(ax.get_xticklabels(), ax.patches, labels, strict=True):
            condition, *family = tick.get_text().split(" · family=")
            row = rows[rows["family"] == family[0]] if family else rows
            (value,) = row[condition]
            drawn = value if math.isfinite(value) else 0.0  # no rate (every answer a tie): its label at the axis
            assert bar.get_height() == pytest.approx(drawn), (metric, tick.get_text())
            assert label == expected_cell(row.iloc[0], condition), (metric, tick.get_text())


@pytest.mark.slow
def test_every_view_of_the_minimal_pair_spec_reads_summary_csv(tmp_path):
    output, folder, summary = run(tmp_path, ROOT / "experiments" / "zoo_minimal_pairs.yaml")
    assert "≈0 =" not in output  # a minimal pair's answer is a rate, never a pair's 'not told apart'
    assert "nan" not in output and "share of the probe pairs" in " ".join(output.split())
    assert_views_agree(output, folder, summary)


PROBES_ONLY = """name: probes_only
seed: 0
model: {kind: hf, family: gpt2, d_model: 32, n_heads: 4, n_layers: 2, position_embeddings: [trained, zero],
        dtype: float64}
probes:
  - {pair: [the dog bites the man, the dog bite the man], relation: minimal_pair}
  - {pair: [the dog bites the man, dog the bites the man], relation: minimal_pair}
  - {pair: [the man sees the dog, the man the dog sees], relation: minimal_pair}
metrics: [minimal_pairs]
"""


@pytest.mark.slow
def test_a_spec_of_probes_alone_scores_its_minimal_pairs(tmp_path):
    spec = tmp_path / "spec" / "probes_only.yaml"
    spec.parent.mkdir()
    spec.write_text(PROBES_ONLY)  # validated, then ran into KeyError 'Column not found: count'
    output, folder, summary = run(tmp_path, spec)
    over_all = summary[summary["case"] == "probes"]
    assert list(over_all["subject"]) == ["all 3 probes"] and list(over_all[RATE_COUNT]) == [3]
    assert_views_agree(output, folder, summary)


@pytest.mark.slow
def test_a_rates_ties_read_alike_in_every_view(tmp_path):
    """In bfloat16 some minimal pairs' margins lie within their round-off: every view leaves them out of the rate
    and counts them beside it, the figure's bar label as summary.csv ('0.00 (0/2, 1 tie)'). With `rows: summary`,
    whose metrics.csv holds no count, so the bars read summary.csv's (they read '0.00': no count, no tie), and a
    sentence's rate beside the probes' (its one reordering a tie: a 0/0 mean that failed the run as non-finite)."""
    spec = tmp_path / "spec" / "probes_only.yaml"
    spec.parent.mkdir()
    spec.write_text(
        PROBES_ONLY.replace("dtype: float64", "dtype: bfloat16").replace("metrics: [", "metrics: [lm_logprob, ")
        + "inputs: [{sentence: the dog bites the man, permutations: reverse}]\nrows: summary\n"
    )
    output, folder, summary = run(tmp_path, spec)
    assert (summary["metric"] == "permutation_preferred").any()  # a sentence's rate beside the probes'
    over_all = summary[summary["case"] == "probes"]
    for name in CONDITIONS:  # each condition's answers: decided or tied
        assert (over_all[f"{name} {RATE_COUNT}"] + over_all[f"{name} {RATE_TIES}"] == 3).all()
    assert over_all[RATE_TIES].sum() > 0
    assert_views_agree(output, folder, summary)
