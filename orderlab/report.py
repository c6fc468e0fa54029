"""Everything the terminal shows: rich tables and progress bars. The only module that imports rich."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from orderlab.verdicts import ORDER_SENSITIVE, tolerance

METRIC_ORDER = [
    "equivariance", "invariance_mean", "invariance_max", "invariance_first", "invariance_last",
    "attention_equivariance", "token_shift", "pair_cosine", "pair_l2",
]  # fmt: skip


def verdict_cell(value: float, verdict: str) -> Text:
    """'3.5e-16 ✓' in green when within tolerance, '6.9e-02 ✗' in red when order-sensitive."""
    if verdict == ORDER_SENSITIVE:
        return Text(f"{value:.1e} ✗", style="red")
    return Text(f"{value:.1e} ✓", style="green")


def summary_table(summary: pd.DataFrame, encodings: list[str], title: str, dtype: str) -> Table:
    """Rows: subject x metric; columns: encodings; cells: worst value over permutations, layers and heads."""
    table = Table(
        title=title,
        caption=f"worst case over permutations, layers, heads; ✓ = within {tolerance(dtype):.1e} ({dtype}), "
        "✗ = order-sensitive",
        title_justify="left",
    )
    table.add_column("input", overflow="fold", max_width=30)
    table.add_column("metric", no_wrap=True)
    for name in encodings:
        table.add_column(name, justify="right", no_wrap=True)
    rank = {m: i for i, m in enumerate(METRIC_ORDER)}
    ordered = summary.sort_values(
        ["case", "subject", "metric"], key=lambda c: c.map(rank) if c.name == "metric" else c, kind="mergesort"
    )
    previous = None
    for _, row in ordered.iterrows():
        subject = row["subject"] if row["subject"] != previous else ""
        if previous is not None and subject:
            table.add_section()
        previous = row["subject"]
        cells = [verdict_cell(row[name], row[f"{name} verdict"]) for name in encodings]
        table.add_row(subject, row["metric"], *cells)
    return table


def stderr_console() -> Console:
    return Console(stderr=True)


@contextlib.contextmanager
def progress_bar(description: str, quiet: bool) -> Iterator:
    """Yield a (done, total) callback drawing a bar with rate and ETA on a terminal; silent otherwise."""
    console = stderr_console()
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True,
        disable=quiet or not console.is_terminal,
    )  # fmt: skip
    with bar:
        task = bar.add_task(description, total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


def corpus_table(summary: pd.DataFrame, encodings: list[str], title: str, threshold: float) -> Table:
    """Rows: sentence-length groups; columns: position ablations; cells: mean / median similarity, share above."""
    table = Table(
        title=title,
        caption=f"cosine similarity of a sentence's mean-pooled vector with its word shuffles: mean / median, "
        f"and the share of shuffles above {threshold:g}; sentences.csv has every sentence",
        title_justify="left",
    )
    table.add_column("words", no_wrap=True)
    table.add_column("n", justify="right")  # sentences
    for name in encodings:
        table.add_column(name, justify="right", no_wrap=True)
    for length, rows in summary.groupby("length", sort=False):
        if length == "all":
            table.add_section()
        cells = []
        for name in encodings:
            row = rows[rows["encoding"] == name].iloc[0]
            cells.append(
                f"{row['mean_similarity']:.3f} / {row['median_similarity']:.3f}\n{row['share_above']:.0%} above"
            )
        table.add_row(str(length), str(rows["sentences"].iloc[0]), *cells)
    return table
