"""Everything the terminal shows: rich tables and progress bars. The only module that imports rich."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pandas as pd
from rich import box
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


# --- orderlab check --------------------------------------------------------------------------------

DRIFT_ROWS_SHOWN = 50  # a table longer than this is cut, with a count of the rows left out


def drift_table(comparison, title: str, limit: int = DRIFT_ROWS_SHOWN) -> Table:
    """Drifted rows of a check.Comparison: the key, the baseline and new cells, abs and rel difference."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, caption_justify="left")
    table.add_column("row (key columns)", overflow="fold", ratio=1)
    for column in ("baseline", "new", "abs diff", "rel diff"):
        table.add_column(column, justify="right", no_wrap=True)
    for drift in comparison.drifted[:limit]:
        verdict_changed = drift.kind == "changed" and drift.baseline.verdict != drift.new.verdict
        cells = [_drift_cell(drift.baseline, verdict_changed), _drift_cell(drift.new, verdict_changed)]
        if drift.kind == "changed":
            cells += [f"{drift.abs_diff:.2e}", f"{drift.rel_diff:.2e}"]
        else:
            cells += [Text(drift.kind, style="red"), ""]
        table.add_row(drift_key(drift.key), *cells)
    left_out = len(comparison.drifted) - limit
    if left_out > 0:
        table.caption = f"... and {left_out:,} more drifted rows"
    return table


def drift_key(key: tuple[str, ...]) -> str:
    """'dog bites man -> man bites dog [2 1 0]' over 'rope, layer 1, head 0, attention_equivariance'."""
    case, sentence, encoding, permutation, permuted, layer, head, metric = key
    joiner = " vs " if case == "probe" else " -> "
    where = ", ".join([encoding, f"layer {layer}", *([f"head {head}"] if head else []), metric])
    return f"{sentence}{joiner}{permuted} [{permutation}]\n{where}"


def _drift_cell(row, with_verdict: bool) -> str:
    if row is None:
        return "-"
    return f"{row.text} {row.verdict}" if with_verdict else row.text


def log_console(min_width: int = 120) -> Console:
    """The stdout console, at least min_width wide when writing to a log rather than a terminal."""
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, min_width))


def check_line(outcome) -> Text:
    """One summary line per spec, red when it failed."""
    style = {"clean": "green", "unchanged": "green", "created": "cyan", "updated": "cyan"}.get(outcome.status, "red")
    return Text(outcome.summary, style=style)


def plain_text(renderable, width: int = 160) -> str:
    """Render a table without colour, e.g. for a JUnit report."""
    import io

    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()
