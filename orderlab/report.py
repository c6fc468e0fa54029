"""Everything the terminal shows: rich tables and progress bars. The only module that imports rich."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import pandas as pd
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
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


# A run must last this long before its progress bar appears (quick runs print no bar at all).
PROGRESS_DELAY_SECONDS = 1.0


class RateColumn(ProgressColumn):
    """Sequences per second, from rich's running estimate."""

    def render(self, task: Task) -> Text:
        return Text(f"{task.speed:,.0f} seq/s" if task.speed else "", style="progress.data.speed")


@contextlib.contextmanager
def progress_bar(description: str, quiet: bool) -> Iterator:
    """Yield a (done, total) callback drawing a bar with rate and ETA on a terminal.

    The bar appears only once a run has lasted PROGRESS_DELAY_SECONDS, so quick runs print nothing
    extra; it is silent with --quiet or when stderr is not a terminal (pipes, files, CI).
    """
    console = stderr_console()
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(), TimeElapsedColumn(),
        TextColumn("eta"), TimeRemainingColumn(), console=console, transient=True,
        disable=quiet or not console.is_terminal,
    )  # fmt: skip
    task = bar.add_task(description, total=None)
    started = time.monotonic()

    def advance(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)
        if not bar.live.is_started and time.monotonic() - started >= PROGRESS_DELAY_SECONDS:
            bar.start()

    try:
        yield advance
    finally:
        bar.stop()
