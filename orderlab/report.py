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


# --- sweeps, position probe and traces (issue 5) -------------------------------------------------


def sweep_subjects(summary: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Fold the swept columns into the subject ('dog bites man · n_layers=2 causal=true') for summary_table."""
    if not swept or summary.empty:
        return summary
    from orderlab.sweep import describe

    labels = [describe(dict(zip(swept, values, strict=True))) for values in summary[swept].itertuples(index=False)]
    return summary.assign(subject=summary["subject"] + " · " + pd.Series(labels, index=summary.index))


def decodability_table(metrics: pd.DataFrame, encodings: list[str], swept: list[str]) -> Table | None:
    """Held-out position-probe accuracy per (configuration, layer) and encoding; None if not measured."""
    rows = metrics[metrics["metric"] == "position_accuracy"]
    if rows.empty:
        return None
    chance = metrics.loc[metrics["metric"] == "position_chance", "value"].iloc[0]
    table = Table(
        title=f"position decodability: {rows['input'].iloc[0]}",
        caption=f"held-out accuracy of a linear slot probe; chance = {chance:.3f}; bold = above chance",
        title_justify="left",
    )
    for name in [*swept, "layer"]:
        table.add_column(name, justify="right")
    for name in encodings:
        table.add_column(name, justify="right")
    wide = rows.pivot_table(index=[*swept, "layer"], columns="encoding", values="value", aggfunc="first")
    verdict = rows.pivot_table(index=[*swept, "layer"], columns="encoding", values="verdict", aggfunc="first")
    for (key, values), (_, marks) in zip(wide.iterrows(), verdict.iterrows(), strict=True):
        key = key if isinstance(key, tuple) else (key,)
        cells = [Text(f"{values[n]:.3f}", style="bold" if marks[n] == "above chance" else "") for n in encodings]
        table.add_row(*[str(k).lower() if isinstance(k, bool) else str(k) for k in key], *cells)
    return table


def vector_text(values: list[float], decimals: int) -> str:
    """[1.0000, -0.5000] with a fixed number of decimals."""
    return "[" + ", ".join(f"{v:.{decimals}f}" for v in values) + "]"


def trace_tables(trace, decimals: int = 4) -> list[Table]:
    """Rich tables of a LayerTrace: per-token vectors, then per head Q/K/V and the score matrices."""
    words, n = trace.words, len(trace.words)
    vec = lambda t, i: vector_text(t[i].tolist(), decimals)  # noqa: E731
    title = f"layer {trace.layer}, encoding {trace.encoding}"
    tokens = Table(title=f"{title}: input per token", title_justify="left")
    columns = [("token vector", trace.tokens), ("+ position", trace.position), ("layer input x", trace.x),
               ("LayerNorm(x)", trace.normed)]  # fmt: skip
    if trace.layer > 1:
        columns = [("layer input x", trace.x), ("LayerNorm(x)", trace.normed)]
    columns = [(name, t) for name, t in columns if t is not None]
    for name in ["slot", "word", *[name for name, _ in columns]]:
        tokens.add_column(name, justify="right" if name == "slot" else "left")
    for i in range(n):
        tokens.add_row(str(i), words[i], *[vec(t, i) for _, t in columns])
    tables = [tokens]
    for head in range(trace.q.shape[0]):
        rotated = " (rotated by slot)" if trace.encoding.startswith("rope") else ""
        qkv = Table(title=f"{title}, head {head}: Q{rotated}, K{rotated}, V and head output", title_justify="left")
        for name in ("slot", "word", "Q", "K", "V", "weights @ V"):
            qkv.add_column(name, justify="right" if name == "slot" else "left")
        for i in range(n):
            qkv.add_row(str(i), words[i], *[vec(t[head], i) for t in (trace.q, trace.k, trace.v, trace.heads)])
        tables.append(qkv)
        for name, matrix in (("raw scores q·k", trace.raw), ("scaled scores", trace.scaled),
                             ("softmax weights", trace.weights)):  # fmt: skip
            grid = Table(title=f"head {head}: {name}", caption="row: query, column: key", title_justify="left")
            grid.add_column("query", justify="left")
            for j in range(n):
                grid.add_column(f"{j} {words[j]}", justify="right")
            for i in range(n):
                grid.add_row(f"{i} {words[i]}", *[f"{v:.{decimals}f}" for v in matrix[head, i].tolist()])
            tables.append(grid)
    out = Table(title=f"{title}: output per token", title_justify="left")
    for name in ("slot", "word", "attention output (heads @ W_O)", "layer output"):
        out.add_column(name, justify="right" if name == "slot" else "left")
    for i in range(n):
        out.add_row(str(i), words[i], vec(trace.attended, i), vec(trace.output, i))
    tables.append(out)
    return tables
