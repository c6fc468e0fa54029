"""Everything the terminal shows: rich tables and progress bars. The only module that imports rich."""

from __future__ import annotations

import contextlib
import io
import itertools
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

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
from orderlab.measure.intervals import LOWER, UPPER
from orderlab.measure.verdicts import NON_FINITE, ORDER_SENSITIVE
from orderlab.metrics import POSITION_ACCURACY, POSITION_CHANCE, RATE_COUNT, metric_names, reduction_of
from orderlab.models.hf.zoo import ZooEntry
from orderlab.plan.sweep import describe
from orderlab.results.outcome import RunView

if TYPE_CHECKING:
    import torch
    from rich.console import ConsoleOptions, RenderableType

    from orderlab.encodings.listing import EncodingEntry
    from orderlab.measure.trace import LayerTrace
    from orderlab.results.baseline_diff import Comparison, DriftedRow, Row, SpecCheck

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


def verdict_cell(value: float, verdict: str) -> Text:
    """'≈0 ✓' in green within round-off, '6.9e-02 ✗' in red when order-sensitive, 'nan !' in bold red if non-finite."""
    if verdict == NON_FINITE:
        return Text(f"{value} !", style="bold red")
    if verdict == ORDER_SENSITIVE:
        return Text(f"{value:.1e} ✗", style="red")
    return Text("≈0 ✓", style="green")


def interval_cell(mean: float, lower: float, upper: float, verdict: str) -> Text:
    """A seed sweep's cell: '2.5e-01 [2.1e-01, 2.9e-01] ✗', the mean over seeds and its 95% t interval, marked as
    verdict_cell marks (the verdict is the worst of any seed); the mean alone where there is no interval (one seed)."""
    if verdict == ORDER_SENSITIVE and not (pd.isna(lower) or pd.isna(upper)):
        return Text(f"{mean:.1e} [{lower:.1e}, {upper:.1e}] ✗", style="red")
    return verdict_cell(mean, verdict)


def rate_cell(row: pd.Series, name: str) -> Text:
    """A rate's cell, unmarked (a share is a finding, not a round-off test): '0.42 (10/24)' with the count of
    permutations; over seeds '0.42 [0.30, 0.55]', the mean rate and its interval; 'nan !' if non-finite."""
    rate, verdict = row[name], row[f"{name} verdict"]
    if verdict == NON_FINITE or pd.isna(rate):
        return verdict_cell(rate, NON_FINITE)
    lower, upper = row.get(f"{name} {LOWER}"), row.get(f"{name} {UPPER}")
    if lower is not None and upper is not None and not (pd.isna(lower) or pd.isna(upper)):
        return Text(f"{rate:.2f} [{lower:.2f}, {upper:.2f}]")
    count = row.get(RATE_COUNT)
    if count is None or pd.isna(count) or f"{name} {LOWER}" in row.index:  # a mean over seeds: no one count
        return Text(share_text(rate))
    return Text(share_text(rate, int(count)))


def share_text(rate: float, count: int | None = None) -> str:
    """A rate as a person reads it, '0.42 (10/24)': how many of how many; '0.42' without a count."""
    return f"{rate:.2f}" if count is None else f"{rate:.2f} ({round(rate * count)}/{count})"


def encoding_cell(row: pd.Series, name: str) -> Text:
    """One encoding's cell of a wide row, as the registry reduces its metric (a rate: rate_cell); with an interval
    when the row is a mean over seeds."""
    if reduction_of(str(row["metric"])) == "rate":
        return rate_cell(row, name)
    if f"{name} {LOWER}" in row.index:
        return interval_cell(row[name], row[f"{name} {LOWER}"], row[f"{name} {UPPER}"], row[f"{name} verdict"])
    return verdict_cell(row[name], row[f"{name} verdict"])


def over_seeds_note(table: pd.DataFrame, encodings: list[str]) -> str:
    """What a caption adds for a table of means over seeds; nothing otherwise."""
    bounds = [f"{name} {LOWER}" for name in encodings if f"{name} {LOWER}" in table.columns]
    if not bounds:
        return ""
    return "; mean over seeds [95% t interval]" if table[bounds].notna().any().any() else "; one seed: no interval"


# What a table's column takes beyond its widest cell: a space of padding either side and one border line.
COLUMN_CHROME = 3


def column_width(header: str, cells: Sequence[Text | str]) -> int:
    """The console columns a no-wrap column needs: its widest cell or header, padding and border."""
    texts = [cell if isinstance(cell, Text) else Text(cell) for cell in cells]
    return max([Text(header).cell_len, *(text.cell_len for text in texts)]) + COLUMN_CHROME


def fitting_groups(widths: dict[str, int], room: int) -> list[list[str]]:
    """The columns in order, cut into consecutive groups whose widths add up to at most `room` (one column a group
    at least): each group is one table of a width that fits, so no column is cropped. As few groups as fit, as
    even as they go (two tables of two columns rather than three and one)."""
    fewest = len(_groups_within(widths, room))
    even = -(-sum(widths.values()) // fewest)  # the total split evenly, rounded up
    for target in range(min(even, room), room + 1):
        groups = _groups_within(widths, target)
        if len(groups) == fewest:
            return groups
    return _groups_within(widths, room)


def _groups_within(widths: dict[str, int], room: int) -> list[list[str]]:
    groups: list[list[str]] = []
    used = room + 1
    for name, needed in widths.items():
        if groups and used + needed <= room:
            groups[-1].append(name)
            used += needed
        else:
            groups.append([name])
            used = needed
    return groups


def run_tables(view: RunView, width: int) -> list[Table]:
    """The console view of a run: summary tables that fit `width`, then the position probe if measured;
    a corpus run's table by sentence length."""
    if view.corpus_threshold is not None:
        return [corpus_table(view.summary, view.encodings, view.title, view.corpus_threshold)]
    summary = sweep_subjects(view.summary, view.swept)
    tables = summary_tables(summary, view.encodings, view.title, view.dtype, width)
    probe = None if view.digest is None else decodability_table(view.digest, view.encodings, view.swept)
    return tables if probe is None else [*tables, probe]


def summary_tables(summary: pd.DataFrame, encodings: list[str], title: str, dtype: str, width: int) -> list[Table]:
    """Rows: metrics under a heading per input; columns: encodings, as many per table as fit `width` (each measured
    by its widest cell), so that no cell, metric name or caption is cropped."""
    label = metric_column_width(summary)
    groups = fitting_groups(encoding_widths(summary, encodings), width - label - 1)  # the table's left border
    return [
        summary_table(summary, group, title if index == 0 else "", dtype, caption=index == len(groups) - 1)
        for index, group in enumerate(groups)
    ]


def encoding_widths(frame: pd.DataFrame, encodings: list[str]) -> dict[str, int]:
    """Each encoding column's width: its widest cell as encoding_cell draws it."""
    return {name: column_width(name, [encoding_cell(row, name) for _, row in frame.iterrows()]) for name in encodings}


def metric_column_width(summary: pd.DataFrame) -> int:
    """The metric column: its longest metric name, indented under its input, never broken."""
    names = [f"  {metric}" for metric in summary["metric"].unique()] if "metric" in summary.columns else []
    return column_width("metric", names)


def summary_table(summary: pd.DataFrame, encodings: list[str], title: str, dtype: str, caption: bool = True) -> Table:
    """Cells: the worst value over permutations, layers and heads, with its verdict (over a seed sweep: its mean
    over seeds and interval); a mean or rate metric's mean over permutations instead (reductions_note)."""
    seeds = over_seeds_note(summary, encodings)
    notes = f"worst case over permutations, layers, heads ({dtype}){reductions_note(summary)}{seeds}; {VERDICT_LEGEND}"
    table = Table(title=title or None, caption=notes if caption else None, title_justify="left")
    table.add_column("metric", min_width=metric_column_width(summary) - COLUMN_CHROME)  # an input's heading wraps
    for name in encodings:
        table.add_column(name, justify="right", no_wrap=True)
    rank = {m: i for i, m in enumerate(metric_names())}  # rows in the registry's order
    ordered = summary.sort_values(
        ["case", "subject", "metric"], key=lambda c: c.map(rank) if c.name == "metric" else c, kind="mergesort"
    )
    for subject, rows in ordered.groupby(["case", "subject"], sort=False):
        if table.row_count:
            table.add_section()
        table.add_row(Text(str(subject[1]), style="bold"))
        for _, row in rows.iterrows():
            table.add_row("  " + row["metric"], *(encoding_cell(row, name) for name in encodings))
    return table


def reductions_note(summary: pd.DataFrame) -> str:
    """What a caption adds for the rows not reduced to their worst value: '; logprob_change: mean over
    permutations; permutation_preferred: share of permutations at 1 (how many of how many)'."""
    shown = list(dict.fromkeys(summary["metric"])) if "metric" in summary.columns else []
    means = [name for name in shown if reduction_of(name) == "mean"]
    rates = [name for name in shown if reduction_of(name) == "rate"]
    notes = [f"{', '.join(means)}: mean over permutations"] if means else []
    notes += [f"{', '.join(rates)}: share of permutations at 1 (how many of how many)"] if rates else []
    return "".join(f"; {note}" for note in notes)


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
    extra; it is silent with --quiet or when stderr is not a terminal (pipes, files, CI).
    """
    console = stderr_console()
    described = TextColumn("{task.description}")
    columns = (
        [described, BarColumn(), MofNCompleteColumn(), RateColumn(unit), TimeElapsedColumn(), TextColumn("eta"),
         TimeRemainingColumn()]
        if unit is not None
        else [SpinnerColumn(), described, TimeElapsedColumn()]
    )  # fmt: skip
    bar = Progress(*columns, console=console, transient=True, disable=quiet or not console.is_terminal)
    task = bar.add_task(description, total=None)

    def advance(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    def note(text: str) -> None:
        bar.update(task, description=f"{description}: {text}")

    with shown_after(bar, PROGRESS_DELAY_SECONDS):
        yield ProgressBar(advance, note)


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


class Phases:
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


# --- orderlab compare, properties, encodings -------------------------------------------------------


def comparison_tables(
    table: pd.DataFrame, encodings: list[str], title: str, dtypes: list[str], width: int
) -> list[Table]:
    """comparison_table with as many encodings per table as fit `width` (each measured by its widest cell)."""
    widths = encoding_widths(table, encodings)
    fixed = COMPARE_INPUT_WIDTH + column_width("metric", list(table["metric"])) + column_width("layer", ["999"]) + 1
    groups = fitting_groups(widths, width - fixed)
    return [
        comparison_table(table, group, title if index == 0 else "", dtypes, caption=index == len(groups) - 1)
        for index, group in enumerate(groups)
    ]


COMPARE_INPUT_WIDTH = 30 + COLUMN_CHROME  # the input column wraps past 30 characters


def comparison_table(
    table: pd.DataFrame, encodings: list[str], title: str, dtypes: list[str], caption: bool = True
) -> Table:
    """Rows: spec input x metric x layer; columns: encodings; cells: worst value over permutations and heads."""
    notes = (
        f"worst case over permutations and heads ({', '.join(sorted(set(dtypes)))})"
        f"{over_seeds_note(table, encodings)}; {VERDICT_LEGEND}"
    )
    out = Table(title=title or None, caption=notes if caption else None, title_justify="left")
    out.add_column("input", max_width=COMPARE_INPUT_WIDTH - COLUMN_CHROME)
    out.add_column("metric", no_wrap=True)
    out.add_column("layer", justify="right")
    for name in encodings:
        out.add_column(name, justify="right", no_wrap=True)
    several = table["spec"].nunique() > 1
    previous, previous_metric = None, None
    for _, row in table.iterrows():
        subject = (f"{row['spec']}: " if several else "") + row["input"]
        if previous is not None and subject != previous:
            out.add_section()
        new_metric = subject != previous or row["metric"] != previous_metric
        cells = [encoding_cell(row, name) for name in encodings]
        shown = Text(subject if subject != previous else "")
        out.add_row(shown, row["metric"] if new_metric else "", str(row["layer"]), *cells)
        previous, previous_metric = subject, row["metric"]
    return out


PROPERTY_PASS = "pass"
PROPERTY_HEADERS = {
    "deterministic": "deter-\nministic",
    "generalises": "gener-\nalises",
    "relative-aware": "relative-\naware",
}


def short_number(x: float) -> str:
    """Two significant digits, as short as they go: 0.23, 93, 3e-16."""
    return f"{x:.0e}" if 0 < abs(x) < 1e-3 else f"{x:.2g}"


def property_cell(figure: float, verdict: str, note: str) -> Text:
    """'✓ 1.5' in green for a pass, '✗ 0' in red for a fail ('✗ error' when it could not run)."""
    shown = "error" if note.startswith("error") else ("n/a" if figure != figure else short_number(figure))
    if verdict == PROPERTY_PASS:
        return Text(f"✓ {shown}", style="green")
    return Text(f"✗ {shown}", style="red")


def properties_table(frame: pd.DataFrame, properties: tuple[str, ...], title: str) -> Table:
    """Rows: encodings; columns: the six properties; cells: verdict and the measured figure."""
    out = Table(
        title=title,
        title_justify="left",
        caption="figures and pass rules: orderlab properties --help",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    out.add_column("encoding", no_wrap=True)
    for name in properties:
        out.add_column(PROPERTY_HEADERS.get(name, name), justify="right", no_wrap=True)
    for encoding, rows in frame.groupby("encoding", sort=False):
        by_property = {row["property"]: row for _, row in rows.iterrows()}
        cells = [
            property_cell(by_property[p]["figure"], by_property[p]["verdict"], str(by_property[p]["note"]))
            for p in properties
        ]
        out.add_row(str(encoding), *cells)
    return out


# Below this console width a listing's rows stack (one cell a row for the short fields, one for the prose): its
# five columns side by side would leave each too narrow for a reference such as arXiv:2104.09864.
WIDE_LISTING_COLUMNS = 120


def encodings_table(entries: list[EncodingEntry], width: int = WIDE_LISTING_COLUMNS) -> Table:
    """One row per encoding: name, kind, absolute/relative, parameters with defaults, reference; narrower than
    WIDE_LISTING_COLUMNS, name, kind and position stack in one column and parameters over reference in the other."""
    wide = width >= WIDE_LISTING_COLUMNS
    out = Table(title="positional encodings", title_justify="left", show_lines=True)
    if wide:
        out.add_column("name", no_wrap=True, style="bold")
        out.add_column("kind", no_wrap=True)
        out.add_column("position", no_wrap=True)
        out.add_column("parameters (default)")
        out.add_column("reference")
    else:
        out.add_column("encoding", no_wrap=True)
        out.add_column("parameters (default); reference")
    for entry in entries:
        params = "\n".join(f"{name}={default}: {description}" for name, default, description in entry.params) or "-"
        if wide:  # Text: no markup in docs
            out.add_row(Text(entry.name), entry.kind, entry.position, Text(params), Text(entry.reference))
        else:
            named = Text.assemble((entry.name, "bold"), f"\n{entry.kind}\n{entry.position}")
            out.add_row(named, Text(f"{params}\n\n{entry.reference}"))
    return out


def models_table(entries: list[ZooEntry]) -> Table:
    """One row per model family of the zoo: positions, encoder or causal, ablations, local real weights."""
    out = Table(title="model families (model: {kind: hf, family: NAME})", title_justify="left", show_lines=True)
    out.add_column("family", no_wrap=True, style="bold")
    out.add_column("positions", overflow="fold")
    out.add_column("kind", no_wrap=True)
    out.add_column("position_embeddings: ablations", overflow="fold")
    out.add_column("hook points per layer (trace)", overflow="fold")
    out.add_column("real weights found locally", overflow="fold")
    for entry in entries:
        ablations = "\n".join(f"{name}: {what}" for name, what in entry.ablations.items())
        weights = "\n".join(entry.weights) or "none (seeded weights only)"
        kind = "causal LM" if entry.causal else "encoder"
        hooks = Text(", ".join(entry.hook_points))
        out.add_row(Text(entry.family), Text(entry.positions), kind, Text(ablations), hooks, Text(weights))
    return out


# --- sweeps, position probe and traces (issue 5) -------------------------------------------------


def sweep_subjects(summary: pd.DataFrame, swept: list[str]) -> pd.DataFrame:
    """Fold the swept columns into the subject ('dog bites man · n_layers=2 causal=true') for summary_table;
    a seed sweep's summary has no seed column (its rows are means over seeds)."""
    swept = [name for name in swept if name in summary.columns]
    if not swept or summary.empty:
        return summary
    labels = [describe(dict(zip(swept, values, strict=True))) for values in summary[swept].itertuples(index=False)]
    return summary.assign(subject=summary["subject"] + " · " + pd.Series(labels, index=summary.index))


def decodability_table(metrics: pd.DataFrame, encodings: list[str], swept: list[str]) -> Table | None:
    """Held-out position-probe accuracy per (configuration, layer) and encoding; None if not measured."""
    rows = metrics[metrics["metric"] == POSITION_ACCURACY]
    if rows.empty:
        return None
    chance = metrics.loc[metrics["metric"] == POSITION_CHANCE, "value"].iloc[0]
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


def trace_tables(trace: LayerTrace, decimals: int = 4) -> list[Table]:
    """Rich tables of a LayerTrace: per-token vectors, then per head Q/K/V and the score matrices."""
    words, n = trace.words, len(trace.words)

    def vec(t: torch.Tensor, i: int) -> str:
        return vector_text(t[i].tolist(), decimals)

    title = f"layer {trace.layer}, encoding {trace.encoding}"
    tokens = Table(title=f"{title}: input per token", title_justify="left")
    columns = [("token vector", trace.tokens), ("+ position", trace.position), ("layer input x", trace.x),
               ("LayerNorm(x)", trace.normed)]  # fmt: skip
    if trace.layer > 1:
        columns = [("layer input x", trace.x), ("LayerNorm(x)", trace.normed)]
    shown = [(name, t) for name, t in columns if t is not None]
    for name in ["slot", "word", *[name for name, _ in shown]]:
        tokens.add_column(name, justify="right" if name == "slot" else "left")
    for i in range(n):
        tokens.add_row(str(i), words[i], *[vec(t, i) for _, t in shown])
    tables = [tokens]
    for head in range(trace.weights.shape[0]):
        rotated = " (rotated by slot)" if trace.encoding.startswith("rope") else ""
        if trace.q is not None and trace.k is not None and trace.v is not None and trace.heads is not None:
            qkv = Table(title=f"{title}, head {head}: Q{rotated}, K{rotated}, V and head output", title_justify="left")
            for name in ("slot", "word", "Q", "K", "V", "weights @ V"):
                qkv.add_column(name, justify="right" if name == "slot" else "left")
            for i in range(n):
                qkv.add_row(str(i), words[i], *[vec(t[head], i) for t in (trace.q, trace.k, trace.v, trace.heads)])
            tables.append(qkv)
        for name, matrix in (("raw scores q·k", trace.raw), ("scaled scores", trace.scaled),
                             ("softmax weights", trace.weights)):  # fmt: skip
            if matrix is None:
                continue  # a model of the zoo returns its probabilities only
            grid = Table(title=f"head {head}: {name}", caption="row: query, column: key", title_justify="left")
            grid.add_column("query", justify="left")
            for j in range(n):
                grid.add_column(f"{j} {words[j]}", justify="right")
            for i in range(n):
                grid.add_row(f"{i} {words[i]}", *[f"{v:.{decimals}f}" for v in matrix[head, i].tolist()])
            tables.append(grid)
    out = Table(title=f"{title}: output per token", title_justify="left")
    outputs = [("attention output (heads @ W_O)", trace.attended), ("layer output", trace.output)]
    shown_outputs = [(name, t) for name, t in outputs if t is not None]
    for name in ["slot", "word", *[name for name, _ in shown_outputs]]:
        out.add_column(name, justify="right" if name == "slot" else "left")
    for i in range(n):
        out.add_row(str(i), words[i], *[vec(t, i) for _, t in shown_outputs])
    tables.append(out)
    return tables


# --- orderlab check --------------------------------------------------------------------------------

DRIFT_ROWS_SHOWN = 50  # a table longer than this is cut, with a count of the lines left out


def drift_table(comparison: Comparison, title: str, limit: int = DRIFT_ROWS_SHOWN) -> Table:
    """A check.Comparison's drift, one line per moved cell: the row's key, the column, baseline and new cell, diffs.

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


def drift_lines(comparison: Comparison, limit: int) -> tuple[list[DriftLine], int]:
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
