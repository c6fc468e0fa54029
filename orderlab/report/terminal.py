"""What the terminal shows of a run, a comparison and a check: rich tables, progress bars and the console."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import itertools
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import pandas as pd
from rich import box
from rich import console as rich_console
from rich.cells import cell_len
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.segment import Segment
from rich.table import Table as Table  # re-exported (as is Console): the CLI reaches rich through here
from rich.text import Text

from orderlab.core import progress as work
from orderlab.core.minimal_pair_file import PAIR_GROUP_COLUMNS, PHENOMENON_COLUMN, UID_COLUMN
from orderlab.core.pair_relations import NO_WORD_MATCH, RELATION_COLUMN, RELATIONS
from orderlab.metrics import POSITION_ACCURACY, POSITION_CHANCE, metric_names, reduction_of
from orderlab.report.fitting import (
    COLUMN_CHROME,
    Column,
    LegendCaption,
    column_width,
    fitted_tables,
    fitting_groups,
)
from orderlab.report.shown import first_layer_text, rate_counts, share_of, share_text, tone, verdict_text
from orderlab.results.outcome import RunView
from orderlab.spec.sweep import describe
from orderlab.vocabulary.columns import (
    CHANCE,
    FIRST_LAYER,
    LOWER,
    TASK_CASE,
    UNTRAINED_LENGTH,
    UPPER,
    first_layer_column,
)
from orderlab.vocabulary.verdict_words import (
    DISTINGUISHABLE,
    INDISTINGUISHABLE,
    NON_FINITE,
    ORDER_SENSITIVE,
    UNRESOLVED,
)

if TYPE_CHECKING:
    from rich.console import ConsoleOptions, RenderableType

    from orderlab.results.baseline_diff import CsvComparison, DriftedRow, Row, SpecCheck

# Orderlab's own glyphs as ASCII of the same width, for a stream that cannot encode them (PYTHONIOENCODING=ascii).
ASCII_GLYPHS = str.maketrans({"≈": "~", "✓": "+", "✗": "x", "·": "."})
# Never drawn narrower: COLUMNS=0 drew nothing, and a narrower terminal still shows every line (wrapped).
MIN_WIDTH = 40
# Characters never sent to a terminal: C0 and C1 controls but the line break (an ESC starts a window title, a
# screen clear or a clipboard write), DEL, and the bidirectional overrides that reorder what a line seems to say.
NOT_SHOWN = dict.fromkeys([*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0), 0x061C, 0x200E, 0x200F,
                           *range(0x202A, 0x202F), *range(0x2066, 0x206A)])  # fmt: skip


def terminal_text(text: str, encoding: str) -> str:
    """`text` as it may reach a terminal writing `encoding`: without control characters (NOT_SHOWN), and with what
    the encoding cannot hold as ASCII of the same width (orderlab's glyphs by ASCII_GLYPHS, anything else as '?')."""
    text = text.translate(NOT_SHOWN)
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        text = text.translate(ASCII_GLYPHS)
        text = "".join(char if _encodes(char, encoding) else "?" * cell_len(char) for char in text)
    except LookupError:  # an encoding Python does not know: ASCII is safe everywhere
        return terminal_text(text, "ascii")
    return text


def _encodes(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


class Console(rich_console.Console):
    """rich's console for all orderlab shows: every text through `terminal_text` (a spec's sentence or description
    reaches the terminal as text, never as escape sequences; ≈/✓/✗ become ASCII where the stream cannot encode
    them), and never narrower than MIN_WIDTH."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]  # rich's own keyword arguments, passed through
        self.width = max(self.width, MIN_WIDTH)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterator[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:  # rich's own cursor moves and the like
                yield segment
            else:
                yield Segment(terminal_text(segment.text, self.encoding), segment.style)


# Caption of every table of verdicts: what the marks mean (the rule: orderlab/measure/verdicts.py, docs/metrics.md).
VERDICT_LEGEND = "✓ = within the run's measured round-off (shown ≈0), ✗ = order-sensitive, ! = NaN or inf"
STYLES = {
    "ok": "green",
    "bad": "red",
    "nonfinite": "bold red",
    "open": "yellow",
    "": "",
}  # by a verdict's tone (report/shown.py)


def verdict_cell(value: float, verdict: str) -> Text:
    """verdict_text's cell: '≈0 ✓' in green within round-off, '6.9e-02 ✗' in red when order-sensitive, '6.9e-02 ?' in
    yellow when unresolved (within a round-off line wider than the resolution), 'nan !' in bold red if non-finite."""
    return Text(verdict_text(value, verdict), style=STYLES[tone(verdict)])


def interval_cell(mean: float, lower: float, upper: float, verdict: str) -> Text:
    """A seed sweep's cell: '2.5e-01 [2.1e-01, 2.9e-01] ✗', the mean over seeds and its 95% t interval, marked as
    verdict_cell marks (the verdict is the worst of any seed); the mean alone where there is no interval (one seed)."""
    if verdict == ORDER_SENSITIVE and not (pd.isna(lower) or pd.isna(upper)):
        return Text(f"{mean:.1e} [{lower:.1e}, {upper:.1e}] ✗", style="red")
    return verdict_cell(mean, verdict)


def rate_cell(row: pd.Series, name: str) -> Text:
    """A rate's cell, unmarked (a share is a finding, not a round-off test): '0.42 (10/24)' with the count of
    permutations it decides and, where answers were left out as ties, how many: '0.50 (1/2, 1 tie)'; over seeds
    '0.42 [0.30, 0.55]', the mean rate and its interval; '- (1 tie)' where every answer was a tie; 'nan !' if
    non-finite."""
    rate, verdict = row[name], row[f"{name} verdict"]
    count, tied = rate_counts(row, name)
    ties = None if tied is None or pd.isna(tied) else int(tied)
    decided = None if count is None or pd.isna(count) else int(count)
    if pd.isna(rate) and ties and not decided and verdict != NON_FINITE:  # every answer a tie: no rate, nothing
        return Text(share_text(math.nan, decided, ties))  # non-finite
    if verdict == NON_FINITE or pd.isna(rate):
        return verdict_cell(rate, NON_FINITE)
    lower, upper = row.get(f"{name} {LOWER}"), row.get(f"{name} {UPPER}")
    if lower is not None and upper is not None and not (pd.isna(lower) or pd.isna(upper)):
        return Text(f"{rate:.2f} [{lower:.2f}, {upper:.2f}]")
    if count is None or pd.isna(count) or f"{name} {LOWER}" in row.index:  # a mean over seeds: no one count
        return Text(share_text(rate, None, ties))
    return Text(share_text(rate, int(count), ties))


def rank_cell(row: pd.Series, name: str) -> Text:
    """The original's rank among itself and its reorderings, '4 of 12' (1: scored above every reordering); a mean
    over seeds '3.7' alone; 'nan !' if non-finite."""
    rank, count = row[name], rate_counts(row, name)[0]
    if pd.isna(rank) or row[f"{name} verdict"] == NON_FINITE:
        return verdict_cell(rank, NON_FINITE)
    if count is None or pd.isna(count) or f"{name} {LOWER}" in row.index:
        return Text(f"{rank:.1f}")
    return Text(f"{int(rank)} of {int(count) + 1}")


def pair_cell(value: float, verdict: str) -> Text:
    """A pair of different words' cell, unmarked by order: '9.8e-02 ≠' told apart, '≈0 =' not, 'nan !'."""
    if verdict == NON_FINITE:
        return verdict_cell(value, verdict)
    return Text(verdict_text(value, DISTINGUISHABLE if verdict == DISTINGUISHABLE else INDISTINGUISHABLE))


def without_order(row: pd.Series) -> bool:
    """Whether a summary row is a pair's that is not a reordering (no order verdict)."""
    relation = row.get(RELATION_COLUMN)
    return isinstance(relation, str) and relation in RELATIONS and not RELATIONS.get(relation).reorders


def encoding_cell(row: pd.Series, name: str) -> Text:
    """One encoding's cell of a wide row, as the registry reduces its metric (a rate: rate_cell); with an interval
    when the row is a mean over seeds; a pair of different words' without an order mark (pair_cell). A rate or rank
    is one before a pair's relation is looked at: a minimal pair's answer is a rate, never '≈0 ='."""
    if reduction_of(str(row["metric"])) == "rank":
        return rank_cell(row, name)
    if reduction_of(str(row["metric"])) == "rate":
        return rate_cell(row, name)
    if without_order(row):
        return pair_cell(row[name], row[f"{name} verdict"])
    if f"{name} {LOWER}" in row.index:
        return interval_cell(row[name], row[f"{name} {LOWER}"], row[f"{name} {UPPER}"], row[f"{name} verdict"])
    return verdict_cell(row[name], row[f"{name} verdict"])


def over_seeds_note(table: pd.DataFrame, encodings: list[str]) -> str:
    """What a caption adds for a table of means over seeds; nothing otherwise."""
    bounds = [f"{name} {LOWER}" for name in encodings if f"{name} {LOWER}" in table.columns]
    if not bounds:
        return ""
    return "; mean over seeds [95% t interval]" if table[bounds].notna().any().any() else "; one seed: no interval"


def run_tables(view: RunView, width: int) -> list[Table]:
    """The console view of a run: summary tables that fit `width`, then the position probe if measured;
    a corpus run's table by sentence length."""
    if view.task_summary is not None:
        return task_prediction_tables(view.task_summary, view.encodings, view.title, width)
    if view.corpus_threshold is not None:
        shown = [] if view.summary.empty else corpus_tables(view.summary, view.encodings, view.title,
                                                            view.corpus_threshold, width)  # fmt: skip
        lm = [] if view.corpus_lm is None else corpus_lm_tables(view.corpus_lm, view.encodings, view.title, width)
        return shown + lm
    summary = by_group_only(sweep_subjects(view.summary, view.swept))
    tasks = summary["case"] == TASK_CASE if "case" in summary.columns else pd.Series(False, index=summary.index)
    tables = summary_tables(summary[~tasks], view.encodings, view.title, view.dtype, width, view.precision_note)
    if tasks.any():
        tables += task_tables(summary[tasks], view.encodings, width)
    if view.digest is not None:
        tables += decodability_tables(view.digest, view.encodings, view.swept, width)
    return tables


def by_group_only(summary: pd.DataFrame) -> pd.DataFrame:
    """Where minimal pairs come by phenomenon (a BLiMP-format file: thousands of pairs), the table shows the groups'
    rows and leaves each pair's to summary.csv."""
    if "case" not in summary.columns or not summary["case"].isin(PAIR_GROUP_COLUMNS).any():
        return summary
    return summary[summary["case"] != "probe"]


def summary_tables(
    summary: pd.DataFrame, encodings: list[str], title: str, dtype: str, width: int, precision_note: str = ""
) -> list[Table]:
    """Rows: metrics under a heading per input; columns: encodings, as many per table as fit `width` (each measured
    by its widest cell), so that no cell, metric name or caption is cropped. precision_note: what each condition
    resolved (escalation.reach_note), in the caption."""
    label = metric_column_width(summary)
    widths = encoding_widths(summary, encodings)
    firsts = any(first_layer_column(name) in summary.columns for name in encodings)
    # Each its share of `first layer`: a layer and its '/', and at least the heading's 'first' with one encoding.
    with_firsts = {name: wide + len(FIRST_LAYER.split()[0]) + 1 for name, wide in widths.items()}
    room = width - label - 1 - 3  # the table's left border; the first-layer column's padding and border
    # The first layer as a column where one encoding and its share fit; else summary.csv alone holds it.
    firsts = firsts and all(wide <= room for wide in with_firsts.values())
    groups = fitting_groups(with_firsts, room) if firsts else fitting_groups(widths, width - label - 1)
    note = precision_note
    return [
        summary_table(summary, group, title if index == 0 else "", dtype, index == len(groups) - 1, firsts, note)
        for index, group in enumerate(groups)
    ]


def encoding_widths(frame: pd.DataFrame, encodings: list[str]) -> dict[str, int]:
    """Each encoding column's width: its widest cell as encoding_cell draws it."""
    return {name: column_width(name, [encoding_cell(row, name) for _, row in frame.iterrows()]) for name in encodings}


def metric_column_width(summary: pd.DataFrame) -> int:
    """The metric column: its longest metric name, indented under its input, never broken."""
    names = [f"  {metric}" for metric in summary["metric"].unique()] if "metric" in summary.columns else []
    return column_width("metric", names)


def summary_table(
    summary: pd.DataFrame,
    encodings: list[str],
    title: str,
    dtype: str,
    caption: bool = True,
    shown_firsts: bool = True,
    precision_note: str = "",
) -> Table:
    """Cells: the worst value over permutations, layers and heads, with its verdict (over a seed sweep: its mean
    over seeds and interval); a mean or rate metric's mean over permutations instead (reductions_note)."""
    seeds = over_seeds_note(summary, encodings)
    notes = f"worst case over permutations, layers, heads ({dtype}){reductions_note(summary)}{seeds}; {VERDICT_LEGEND}"
    notes += pairs_note(summary) + (f"; {precision_note}" if precision_note else "")
    if summary["case"].isin(PAIR_GROUP_COLUMNS).any():
        notes += "; each minimal pair's row: summary.csv"
    verdicts = [f"{name} verdict" for name in encodings if f"{name} verdict" in summary.columns]
    if (summary[verdicts] == UNRESOLVED).to_numpy().any():
        notes += f"; ? = {UNRESOLVED}: within a round-off line wider than the resolution (value as measured)"
    firsts = [first_layer_column(name) for name in encodings if first_layer_column(name) in summary.columns]
    firsts = firsts if shown_firsts else []
    if firsts:
        notes += f"; {FIRST_LAYER}: where order first shows (0 = the input, - = at none), per encoding in column order"
    legend = cast(Text, LegendCaption(notes))  # rich draws any renderable as a caption (fitting.LegendCaption)
    table = Table(title=title or None, caption=legend if caption else None, title_justify="left")
    table.add_column("metric", min_width=metric_column_width(summary) - COLUMN_CHROME)  # an input's heading wraps
    for name in encodings:
        table.add_column(name, justify="right", no_wrap=True)
    if firsts:
        table.add_column(FIRST_LAYER.replace(" ", "\n"), justify="right", overflow="fold")
    rank = {m: i for i, m in enumerate(metric_names())}  # rows in the registry's order
    ordered = summary.sort_values(
        ["case", "subject", "metric"], key=lambda c: c.map(rank) if c.name == "metric" else c, kind="mergesort"
    )
    for subject, rows in ordered.groupby(["case", "subject"], sort=False):
        if table.row_count:
            table.add_section()
        relation = f" ({rows[RELATION_COLUMN].iloc[0]})" if without_order(rows.iloc[0]) else ""
        grouped = {PHENOMENON_COLUMN: "phenomenon ", UID_COLUMN: "UID "}.get(str(subject[0]), "")  # BLiMP groups
        table.add_row(Text(f"{grouped}{subject[1]}{relation}", style="bold"))
        for _, row in rows.iterrows():
            first = ["/".join(first_layer_text(row[column]) for column in firsts)] if firsts else []
            table.add_row("  " + row["metric"], *(encoding_cell(row, name) for name in encodings), *first)
    return table


def pairs_note(summary: pd.DataFrame) -> str:
    """What a caption adds when a pair of different words is shown: its marks, and why it has no token_shift."""
    pairs = (
        without_order(row) and reduction_of(str(row["metric"])) not in ("rate", "rank") for _, row in summary.iterrows()
    )
    if RELATION_COLUMN not in summary.columns or not any(pairs):
        return ""
    return f"; a pair of different words: ≠ told apart, = not (no order verdict); {NO_WORD_MATCH}"


def task_tables(rows: pd.DataFrame, encodings: list[str], width: int) -> list[Table]:
    """A trained spec's answer: each trained encoding's task accuracy per test length, beside the length's chance."""
    accuracy = [
        Column(name, [f"{row[name]:.2f}" + ("*" if row[f"{name} verdict"] == UNTRAINED_LENGTH else "")
                      for _, row in rows.iterrows()])
        for name in encodings
    ]  # fmt: skip
    keys = [
        Column("test sentences", [Text(str(subject)) for subject in rows["subject"]], justify="left", wrap=True),
        Column(CHANCE, [f"{float(chance):.2f}" for chance in rows[CHANCE]]),
    ]
    caption = "held-out sentences per length; chance: the task's best order-blind accuracy; * = a length not trained on"
    return fitted_tables("task accuracy of the trained stacks, against chance", caption, keys, accuracy, width)


def reductions_note(summary: pd.DataFrame) -> str:
    """What a caption adds for the rows not reduced to their worst value: '; logprob_change: mean over
    permutations; permutation_preferred: share of the distinct reorderings at 1 (how many of how many)'."""
    shown = list(dict.fromkeys(summary["metric"])) if "metric" in summary.columns else []
    means = [name for name in shown if reduction_of(name) == "mean"]
    rates = [name for name in shown if reduction_of(name) == "rate"]
    notes = [f"{', '.join(means)}: mean over the distinct reorderings"] if means else []
    for probes in (False, True):  # a minimal pair's answer is a share of probe pairs, not of reorderings
        over = [name for name in rates if _rate_over_probes(summary, name) == probes]
        notes += [f"{', '.join(over)}: share of the {share_of(probes)} at 1 (how many of how many)"] if over else []
    ranks = [name for name in shown if reduction_of(name) == "rank"]
    notes += [f"{', '.join(ranks)}: the original's rank by log P among itself and its reorderings"] if ranks else []
    return "".join(f"; {note}" for note in notes)


def _rate_over_probes(summary: pd.DataFrame, metric: str) -> bool:
    """Whether a rate's rows are probe pairs' (a minimal pair's answer) rather than a sentence's reorderings."""
    return bool(summary.loc[summary["metric"] == metric, "case"].isin(["probe", "probes", *PAIR_GROUP_COLUMNS]).all())


def stderr_console() -> Console:
    return Console(stderr=True)


def non_finite_line(count: int, folder: object) -> None:
    """One red line on stderr: how many values could not be measured, and where to find them."""
    stderr_console().print(
        f"error: {count:,} value(s) came out NaN or inf: written as nan/inf with verdict non-finite in {folder}/",
        style="bold red", markup=False, highlight=False, soft_wrap=True,
    )  # fmt: skip


# Work must last this long before its progress bar appears (quick work prints no bar at all).
PROGRESS_DELAY_SECONDS = 1.0


class RateColumn(ProgressColumn):
    """Units of work per second from rich's running estimate ('1,234 seq/s'), or seconds per unit when slower
    than one a second ('4.2 s/spec')."""

    def __init__(self, unit: str):
        super().__init__()
        self.unit = unit

    def render(self, task: Task) -> Text:
        return Text(rate_text(task.speed, self.unit), style="progress.data.speed")


def rate_text(speed: float | None, unit: str) -> str:
    if not speed:
        return ""
    return f"{speed:,.0f} {unit}/s" if speed >= 1 else f"{1 / speed:,.1f} s/{unit}"


@dataclass(frozen=True)
class ProgressBar:
    """A (done, total) callback, and `note` for a line after the description (a training loss)."""

    advance: work.Progress
    note: work.Note

    def __call__(self, done: int, total: int) -> None:
        self.advance(done, total)


@contextlib.contextmanager
def progress_bar(description: str, quiet: bool, unit: str | None = "seq") -> Iterator[ProgressBar]:
    """Yield a bar's (done, total) callback, drawing it with rate and ETA on a terminal, and its `note` line;
    `unit` names what done and total count (sequences; compare's specs); None draws a spinner with the time
    elapsed instead, for work that does not count itself (figures, a report).

    The bar appears only once the work has lasted PROGRESS_DELAY_SECONDS, so quick work prints nothing
    extra; it is silent with --quiet or when stderr is neither a terminal nor a notebook (pipes, files, CI).
    """
    console = stderr_console()
    described = TextColumn("{task.description}")
    columns = (
        [described, BarColumn(), MofNCompleteColumn(), RateColumn(unit), TimeElapsedColumn(), TextColumn("eta"),
         TimeRemainingColumn()]
        if unit is not None
        else [SpinnerColumn(), described, TimeElapsedColumn()]
    )  # fmt: skip
    bar = Progress(*columns, console=console, transient=True, disable=quiet or not drawable(console))
    task = bar.add_task(description, total=None)

    def advance(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    def note(text: str) -> None:
        bar.update(task, description=f"{description}: {text}")

    with shown_after(bar, PROGRESS_DELAY_SECONDS):
        yield ProgressBar(advance, note)


def drawable(console: Console) -> bool:
    """Whether a bar can be drawn live: on a terminal, or in a notebook with ipywidgets (rich's live display there;
    without ipywidgets rich would warn on every update, so a notebook without them gets no bar)."""
    if console.is_terminal:
        return True
    return console.is_jupyter and importlib.util.find_spec("ipywidgets") is not None


@contextlib.contextmanager
def shown_after(bar: Progress, delay: float) -> Iterator[None]:
    """Draw `bar` once the block has lasted `delay` seconds (at once when 0), whether or not the work has
    reported (loading a model reports nothing), and take it away when the block ends."""
    if bar.disable:  # --quiet, or stderr is not a terminal: no timer either
        yield
        return
    lock, ended = threading.Lock(), threading.Event()

    def show() -> None:
        with lock:  # never after the block has ended and stopped the bar
            if not ended.is_set():
                bar.start()

    timer = threading.Timer(delay, show)
    timer.daemon = True
    if delay > 0:
        timer.start()
    else:
        show()
    try:
        yield
    finally:
        timer.cancel()
        with lock:
            ended.set()
            bar.stop()


class PhaseBars:
    """A command's clock and its long phases, each drawn while it runs (progress_bar) and timed, so that the
    closing line gives the command's wall time and, when it had several phases, where that time went."""

    def __init__(self, quiet: bool, started: float | None = None):
        """started: time.perf_counter() when the command began (before its imports); now if None."""
        self.quiet = quiet
        self.started = time.perf_counter() if started is None else started
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str, description: str, unit: str | None = None) -> Iterator[ProgressBar]:
        """Draw the phase (a bar counting `unit`s, or a spinner) and add its time to `name`'s."""
        began = time.perf_counter()
        try:
            with progress_bar(description, self.quiet, unit) as bar:
                yield bar
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - began

    def took(self) -> str:
        """'in 54.0 s (measuring 9.4 s, figures 40.1 s)': the wall time since the command began, split by phase."""
        total = time.perf_counter() - self.started
        split = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.seconds.items())
        return f"in {total:.1f} s" + (f" ({split})" if len(self.seconds) > 1 else "")


# --- orderlab compare -------------------------------------------------------


def comparison_tables(
    table: pd.DataFrame, encodings: list[str], title: str, dtypes: list[str], width: int
) -> list[Table]:
    """One table that fits `width`: each input a heading, its metrics and layers beneath, an encoding a column; where
    the encodings side by side would not fit, stacked instead (a row per encoding, the `condition` column), so that a
    table is never cut into parts that each repeat every row."""
    label = metric_column_width(table)
    layer = column_width("layer", [str(value) for value in table["layer"]])
    widths = encoding_widths(table, encodings)
    side_by_side = label + layer + sum(widths.values()) + 1 <= width
    return [comparison_table(table, encodings, title, dtypes, stacked=not side_by_side)]


def comparison_table(
    table: pd.DataFrame, encodings: list[str], title: str, dtypes: list[str], stacked: bool = False
) -> Table:
    """Rows: spec input (a heading) x metric x layer; columns: encodings, or with `stacked` a row per encoding
    (`condition`, `value`); cells: worst value over permutations and heads."""
    notes = (
        f"worst case over permutations and heads ({', '.join(sorted(set(dtypes)))})"
        f"{over_seeds_note(table, encodings)}; {VERDICT_LEGEND}"
    )
    out = Table(title=title or None, caption=notes, title_justify="left")
    out.add_column("metric", min_width=metric_column_width(table) - COLUMN_CHROME)  # an input's heading wraps
    out.add_column("layer", justify="right", no_wrap=True)
    for name in ["condition", "value"] if stacked else encodings:
        out.add_column(name, justify="right", no_wrap=True)
    several = table["spec"].nunique() > 1
    previous, previous_metric = None, None
    for _, row in table.iterrows():
        subject = (f"{row['spec']}: " if several else "") + row["input"]
        if subject != previous:
            if previous is not None:
                out.add_section()
            out.add_row(Text(subject, style="bold"))
        metric = "  " + row["metric"] if subject != previous or row["metric"] != previous_metric else ""
        if stacked:
            for index, name in enumerate(encodings):
                shown = (metric, str(row["layer"])) if index == 0 else ("", "")
                out.add_row(*shown, name, encoding_cell(row, name))
        else:
            out.add_row(metric, str(row["layer"]), *(encoding_cell(row, name) for name in encodings))
        previous, previous_metric = subject, row["metric"]
    return out


# --- sweeps and the position probe -------------------------------------------------


def sweep_subjects(summary: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Fold the swept columns into the subject ('dog bites man · n_layers=2 causal=true') for summary_table;
    a seed sweep's summary has no seed column (its rows are means over seeds)."""
    swept = [name for name in swept if name in summary.columns]
    if not swept or summary.empty:
        return summary
    labels = [describe(dict(zip(swept, values, strict=True))) for values in summary[swept].itertuples(index=False)]
    return summary.assign(subject=summary["subject"] + " · " + pd.Series(labels, index=summary.index))


def decodability_tables(metrics: pd.DataFrame, encodings: list[str], swept: list[str], width: int) -> list[Table]:
    """Held-out position-probe accuracy per (configuration, layer) and encoding; none if not measured."""
    rows = metrics[metrics["metric"] == POSITION_ACCURACY]
    if rows.empty:
        return []
    chance = metrics.loc[metrics["metric"] == POSITION_CHANCE, "value"].iloc[0]
    wide = rows.pivot_table(index=[*swept, "layer"], columns="encoding", values="value", aggfunc="first")
    verdict = rows.pivot_table(index=[*swept, "layer"], columns="encoding", values="verdict", aggfunc="first")
    index = [key if isinstance(key, tuple) else (key,) for key in wide.index]
    keys = [
        Column(name, [str(key[at]).lower() if isinstance(key[at], bool) else str(key[at]) for key in index])
        for at, name in enumerate([*swept, "layer"])
    ]
    values = [
        Column(name, [Text(f"{value:.3f}", style="bold" if mark == "above chance" else "")
                      for value, mark in zip(wide[name], verdict[name], strict=True)])
        for name in encodings
    ]  # fmt: skip
    title = f"position decodability: {rows['input'].iloc[0]}"
    caption = f"held-out accuracy of a linear slot probe; chance = {chance:.3f}; bold = above chance"
    return fitted_tables(title, caption, keys, values, width)


# --- orderlab check --------------------------------------------------------------------------------

DRIFT_ROWS_SHOWN = 50  # a table longer than this is cut, with a count of the lines left out


def drift_table(comparison: CsvComparison, title: str, limit: int = DRIFT_ROWS_SHOWN) -> Table:
    """A CsvComparison's drift, one line per moved cell: the row's key, the column, baseline and new cell, diffs.

    A missing or extra row is one line with its compared cells; lines past `limit` are counted, not shown.
    """
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, caption_justify="left")
    table.add_column("row (key columns)", overflow="fold", ratio=1)
    table.add_column("column", overflow="fold")
    for column in ("baseline", "new"):
        table.add_column(column, justify="right", overflow="fold")
    for column in ("abs diff", "rel diff"):
        table.add_column(column, justify="right", no_wrap=True)
    lines, left_out = drift_lines(comparison, limit)
    for line in lines:
        whole_row = line.kind != "changed"  # missing or extra: the kind, in red, where the differences would be
        diffs = (Text(line.kind, style="red"), "") if whole_row else (line.abs_diff, line.rel_diff)
        table.add_row(line.key, line.column, line.baseline, line.new, *diffs)
    if left_out > 0:
        table.caption = f"... and {left_out:,} more drifted cells"
    return table


class DriftLine(NamedTuple):
    """One line of a drift report: a moved cell of a changed row, or a whole missing or extra row."""

    key: str  # the row's key, as drift_key writes it ('' on a changed row's later columns)
    column: str  # the moved column ('' for a whole row)
    baseline: str
    new: str
    abs_diff: str  # '1.00e-02' for a numeric column, else ''
    rel_diff: str
    kind: str  # changed, missing or extra


def drift_lines(comparison: CsvComparison, limit: int) -> tuple[list[DriftLine], int]:
    """The first `limit` lines of a comparison's drift, and how many more there are."""
    lines = (line for drift in comparison.drifted for line in _drift_lines(drift, comparison.key_columns))
    shown = list(itertools.islice(lines, limit))
    return shown, sum(len(drift.columns) or 1 for drift in comparison.drifted) - len(shown)


def _drift_lines(drift: DriftedRow, key_columns: list[str]) -> Iterator[DriftLine]:
    key = drift_key(drift.key, key_columns)
    if drift.kind != "changed":
        yield DriftLine(key, "", _row_cells(drift.baseline), _row_cells(drift.new), "", "", drift.kind)
        return
    assert drift.baseline is not None and drift.new is not None  # a changed row has both sides
    for index, column in enumerate(drift.columns):
        old, new = drift.baseline.cells[column] or "(empty)", drift.new.cells[column] or "(empty)"
        numeric = column in drift.baseline.numbers
        diffs = (f"{drift.abs_diff(column):.2e}", f"{drift.rel_diff(column):.2e}") if numeric else ("", "")
        yield DriftLine(key if index == 0 else "", column, old, new, *diffs, drift.kind)


STACK_KEY = ("case", "input", "encoding", "permutation", "permuted", "layer", "head", "metric")


def drift_key(key: tuple[str, ...], names: list[str]) -> str:
    """'dog bites man -> man bites dog [2 1 0]' over 'causal=true, rope, layer 1, head 0, attention_equivariance'.

    Tables without the stack's key columns (summaries, attention, corpus runs) read as 'name=value, ...'.
    """
    cells = dict(zip(names, key, strict=True))
    if not set(STACK_KEY) <= cells.keys():
        return ", ".join(f"{name}={value}" for name, value in cells.items() if value != "")
    swept = [f"{name}={value}" for name, value in cells.items() if name not in STACK_KEY]
    layer, head = f"layer {cells['layer']}", [f"head {cells['head']}"] if cells["head"] else []
    joiner = " vs " if cells["case"] == "probe" else " -> "
    where = ", ".join([*swept, cells["encoding"], layer, *head, cells["metric"]])
    return f"{cells['input']}{joiner}{cells['permuted']} [{cells['permutation']}]\n{where}"


def _row_cells(row: Row | None) -> str:
    return "-" if row is None else " ".join(cell or "(empty)" for cell in row.cells.values())


def log_console(min_width: int = 120) -> Console:
    """The stdout console, at least min_width wide when writing to a log rather than a terminal."""
    console = Console()
    return console if console.is_terminal else Console(width=max(console.width, min_width))


def spec_drift_table(outcome: SpecCheck, comparison: CsvComparison) -> Table:
    """drift_table titled with the spec and the file: its changed rows (--update) or drifted ones."""
    what = "changed rows" if outcome.status == "updated" else "drifted rows"
    return drift_table(comparison, f"{outcome.name}: {what} of {comparison.file} ({outcome.path})")


def check_line(outcome: SpecCheck) -> Text:
    """One summary line per spec, red when it failed."""
    style = {"clean": "green", "unchanged": "green", "created": "cyan", "updated": "cyan"}.get(outcome.status, "red")
    return Text(outcome.summary, style=style)


def plain_text(renderable: RenderableType, width: int = 160) -> str:
    """Render a table without colour, e.g. for a JUnit report."""
    text = io.StringIO()
    console = Console(width=width, file=text, color_system=None)
    console.print(renderable)
    return text.getvalue()


def _length_rows(summary: pd.DataFrame) -> tuple[list[tuple[Any, pd.DataFrame]], list[Column]]:
    """A corpus summary's sentence-length groups, and the key columns naming them: words, and sentences (n)."""
    groups = list(summary.groupby("length", sort=False))
    keys = [
        Column("words", [str(length) for length, _ in groups], justify="left"),
        Column("n", [str(rows["sentences"].iloc[0]) for _, rows in groups]),  # sentences
    ]
    return groups, keys


def corpus_tables(summary: pd.DataFrame, encodings: list[str], title: str, threshold: float, width: int) -> list[Table]:
    """Rows: sentence-length groups; columns: position ablations; cells: mean / median similarity, share above."""
    groups, keys = _length_rows(summary)
    values = []
    for name in encodings:
        shown = [rows[rows["encoding"] == name].iloc[0] for _, rows in groups]
        cells: list[Text | str] = [
            f"{row['mean_similarity']:.3f} / {row['median_similarity']:.3f}\n{row['share_above']:.0%} above"
            for row in shown
        ]
        values.append(Column(name, cells))
    caption = (
        f"cosine similarity of a sentence's mean-pooled vector with its word shuffles: mean / median, "
        f"and the share of shuffles above {threshold:g}; sentences.csv has every sentence"
    )
    sections = [at for at, (length, _) in enumerate(groups) if length == "all"]
    return fitted_tables(title, caption, keys, values, width, sections=sections)


def share_cell(rate: float, preferred: int, sentences: int, tied: int) -> str:
    """'67% (2/3)' over the lines decided and, where lines were left out as ties, how many: '50% (1/2, 1 tie)' (the
    form of every rate's count: shown.share_text)."""
    shown = "-" if pd.isna(rate) else f"{rate:.0%}"
    told = [f"{preferred}/{sentences - tied}"] + ([f"{tied} tie{'s' if tied > 1 else ''}"] if tied else [])
    return f"{shown} ({', '.join(told)})"


def task_prediction_tables(summary: pd.DataFrame, encodings: list[str], title: str, width: int) -> list[Table]:
    """A classifier on labelled examples: rows: each published metric overall, per gold label, per group and over
    groups; columns: position ablations; cells: the mean over examples [bootstrap 95% interval]."""
    first = summary[summary["encoding"] == encodings[0]]
    keys = [
        Column("metric", list(first["metric"]), justify="left"),
        Column(
            "over",
            [
                str(by) if by in ("all", "groups_mean") else f"{by} {key}"
                for by, key in zip(first["by"], first["key"], strict=True)
            ],
            justify="left",
        ),
        Column("n", [str(count) for count in first["examples"]]),
    ]
    values = []
    for name in encodings:
        rows = summary[summary["encoding"] == name]
        cells: list[Text | str] = [
            _mean_with_interval(float(value), float(lower), float(upper))
            for value, lower, upper in zip(rows["value"], rows["lower"], rows["upper"], strict=True)
        ]
        values.append(Column(name, cells))
    caption = "mean over examples [bootstrap 95% interval]; ties (margins within round-off) left out; metrics.csv has "
    caption += "every example and order"
    sections = [at for at, by in enumerate(first["by"]) if by == "all"]
    return fitted_tables(title, caption, keys, values, width, sections=sections)


def _mean_with_interval(value: float, lower: float, upper: float) -> str:
    """'0.500 [0.10, 0.90]'; '-' where no example had a value, the mean alone where no interval was drawn."""
    if value != value:  # NaN
        return "-"
    return f"{value:.3f}" + ("" if lower != lower else f" [{lower:.2f}, {upper:.2f}]")


def corpus_lm_tables(summary: pd.DataFrame, encodings: list[str], title: str, width: int) -> list[Table]:
    """A causal LM over a corpus: rows: sentence-length groups; columns: position ablations; cells: the share of
    lines whose original the model prefers to all its shuffles, and perplexity of originals / shuffles."""
    groups, keys = _length_rows(summary)
    values = []
    for name in encodings:
        shown = [rows[rows["encoding"] == name].iloc[0] for _, rows in groups]
        cells: list[Text | str] = [
            f"{share_cell(row['original_preferred_rate'], row['original_preferred'], row['sentences'], row['ties'])}\n"
            f"ppl {row['perplexity_original']:.4g} / {row['perplexity_shuffled']:.4g}"
            for row in shown
        ]
        values.append(Column(name, cells))
    caption = (
        "share of lines whose original the LM scores at least as high as every shuffle (count; a tie, within "
        "round-off, left out), and perplexity of the originals / of the shuffles; lm_sentences.csv has every line"
    )
    sections = [at for at, (length, _) in enumerate(groups) if length == "all"]
    return fitted_tables(title, caption, keys, values, width, sections=sections)
