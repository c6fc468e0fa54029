"""`orderlab check`'s comparison: every CSV a fresh run wrote against the committed baselines.

A baseline is results/<name>/ as written by `orderlab run` or `orderlab check --update`. Each CSV
the fresh run writes must be in the baseline, and each baseline CSV must still be written. Within
a CSV, rows are matched on their key columns exactly (a missing or extra row is drift); numeric
cells may move by atol + rtol * |baseline|, with defaults derived from the dtype so that round-off
near machine epsilon never reads as drift; verdict words must match. Never prints: the CLI renders
the outcomes through report. Re-running a spec for it is commands/baseline.py.
"""

from __future__ import annotations

import csv
import functools
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orderlab.core import userfiles
from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError
from orderlab.results.orders import ORDERS
from orderlab.results.tables import CSV_LIMIT
from orderlab.spec.schema import Spec
from orderlab.vocabulary.verdict_words import ORDER_SENSITIVE, PASSING_WORDS, eps

# %.6e keeps 7 significant digits, so rewriting a value moves it by up to 1e-6 of itself.
CSV_RESOLUTION = 1e-6
# missing: the spec has no baseline folder at all; like drift, it fails the check (exit 1).
Status = Literal["clean", "drift", "missing", "created", "updated", "unchanged", "error"]


class BaselineError(OrderlabError):
    """A baseline file that cannot be read as orderlab wrote it (truncated, edited out of shape)."""


@dataclass(frozen=True)
class Tolerances:
    rtol: float
    atol: float

    def allows(self, baseline: float, new: float) -> bool:
        """|new - baseline| <= atol + rtol * |baseline|; equal values always, NaN matches NaN, infinities themselves."""
        if new == baseline or (math.isnan(baseline) and math.isnan(new)):
            return True
        if not (math.isfinite(baseline) and math.isfinite(new)):
            return False
        return abs(new - baseline) <= self.atol + self.rtol * abs(baseline)


EXACT = Tolerances(rtol=0.0, atol=0.0)


# Epsilons of slack a check allows: 1000 for float32 and float64; 8 for a 16-bit dtype, whose eps is already 2^13 to
# 2^16 float32's (1000 bfloat16 epsilons would pass any change: 7.8 relative).
SLACK_EPSILONS = {"bfloat16": 8, "float16": 8}


def default_tolerances(dtype: str) -> Tolerances:
    """atol: 1000 eps of the dtype (2.2e-13 float64, 1.2e-4 float32; 8 eps of a 16-bit dtype: 6.3e-2 bfloat16,
    7.8e-3 float16); rtol: that too, but never finer than the CSV's 7 digits. Round-off itself is written as 0
    (verdicts.py), so this slack is for values above it."""
    slack = SLACK_EPSILONS.get(dtype, 1000) * eps(dtype)
    return Tolerances(rtol=max(slack, 2 * CSV_RESOLUTION), atol=slack)


def tolerances_for(spec: Spec, rtol: float | None = None, atol: float | None = None) -> Tolerances:
    """Command-line values win over the spec's `check:` section, which wins over the dtype defaults."""
    default = default_tolerances(spec.model.dtype)

    def pick(*options: float | None) -> float:
        return next(o for o in options if o is not None)

    return Tolerances(pick(rtol, spec.check.rtol, default.rtol), pick(atol, spec.check.atol, default.atol))


def require_tolerance(option: str, value: float | None) -> None:
    """A tolerance must be finite and >= 0: an infinite one would pass any change, NaN none."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise OrderlabError(f"{option}: got {value:g}; expected a finite number >= 0")


# --- reading CSVs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Csv:
    """A CSV as written: its header and data lines, each line with its number in the file."""

    file: str
    header: tuple[str, ...]
    lines: list[tuple[int, list[str]]]

    def column(self, name: str) -> list[str]:
        at = self.header.index(name)
        return [cells[at] for _, cells in self.lines]


def read_csv(text: str, file: str) -> Csv:
    """Split a CSV into header and lines; BaselineError naming file and line if it is not one table."""
    if not text:
        raise BaselineError(f"{file}: empty file; expected a CSV with a header line")
    if not text.endswith("\n"):
        raise BaselineError(f"{file}: truncated: the last line has no line ending; regenerate it (check --update)")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    lines = []
    try:
        header = tuple(next(reader))
        if len(set(header)) != len(header):
            raise BaselineError(f"{file}:1: header {','.join(header)!r}; expected distinct column names")
        for cells in reader:
            if len(cells) != len(header):
                raise BaselineError(f"{file}:{reader.line_num}: {len(cells)} fields; expected {len(header)}")
            lines.append((reader.line_num, cells))
    except csv.Error as error:
        raise BaselineError(f"{file}:{reader.line_num}: not valid CSV: {error}") from None
    return Csv(file, header, lines)


def same_header(baseline: Csv, fresh: Csv) -> None:
    """Columns that differ make rows incomparable: say so, and how to move on."""
    if baseline.header != fresh.header:
        raise BaselineError(
            f"{baseline.file}:1: header {','.join(baseline.header)!r}; this orderlab writes "
            f"{','.join(fresh.header)!r} (a baseline from another orderlab version? regenerate it with "
            "`orderlab check --update`)"
        )


def is_verdict_column(name: str) -> bool:
    """'verdict' in tidy tables, '<encoding> verdict' in wide summaries: words, compared exactly."""
    return name == "verdict" or name.endswith(" verdict")


@dataclass(frozen=True)
class Layout:
    """What each column of a table is for: matching rows (key), comparing within tolerance (numeric), or as words."""

    header: tuple[str, ...]
    key: tuple[str, ...]
    numeric: frozenset[str]

    @functools.cached_property
    def compared(self) -> tuple[tuple[str, int], ...]:
        """(name, position) of the compared columns, in header order: numeric ones and verdicts."""
        return tuple((name, at) for at, name in enumerate(self.header) if name not in self.key)


def layout_of(fresh: Csv, baseline: Csv) -> Layout:
    """Numeric: columns written as floats; verdicts compared as words; every other column (text, integers) is key.

    Read from the fresh run (what this orderlab writes), or from the baseline where the fresh run
    leaves a column empty. Should the key not tell the fresh rows apart (a swept float setting, say),
    numeric columns join the key from the left until it does.
    """
    floats = [name for name in fresh.header if not is_verdict_column(name) and _float_column(name, fresh, baseline)]
    key = [name for name in fresh.header if name not in floats and not is_verdict_column(name)]
    while floats and not _unique(fresh, key):
        joined = floats.pop(0)
        key = [name for name in fresh.header if name in key or name == joined]
    return Layout(fresh.header, tuple(key), frozenset(floats))


def _float_column(name: str, fresh: Csv, baseline: Csv) -> bool:
    cells = [c for c in fresh.column(name) if c] or [c for c in baseline.column(name) if c]
    return bool(cells) and all(map(_is_float, cells)) and not all(c.lstrip("+-").isdigit() for c in cells)


def _is_float(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _unique(table: Csv, key: list[str]) -> bool:
    at = [table.header.index(name) for name in key]
    keys = {tuple(cells[i] for i in at) for _, cells in table.lines}
    return len(keys) == len(table.lines)


@dataclass(frozen=True)
class Row:
    """One row of a table as the drift report shows it."""

    key: tuple[str, ...]  # the key cells, as written
    cells: dict[str, str]  # compared column -> its cell as written, e.g. "1.209642e+00" or "order-sensitive"
    numbers: dict[str, float]  # numeric column -> its cell as a number (NaN for an empty cell)


@dataclass(frozen=True)
class Table:
    """A CSV's rows by key, each with its line number and cells, ready to compare with another laid out the same."""

    file: str
    layout: Layout
    rows: dict[tuple[str, ...], tuple[int, list[str]]]

    def number(self, key: tuple[str, ...], column: str, at: int) -> float:
        line, cells = self.rows[key]
        return _number(cells[at], column, self.file, line)

    def row(self, key: tuple[str, ...]) -> Row:
        cells = {name: self.rows[key][1][at] for name, at in self.layout.compared}
        numbers = {name: self.number(key, name, at) for name, at in self.layout.compared if name in self.layout.numeric}
        return Row(key, cells, numbers)


def index(table: Csv, layout: Layout) -> Table:
    """Rows by key; BaselineError naming the line where a key repeats."""
    at = [table.header.index(name) for name in layout.key]
    rows: dict[tuple[str, ...], tuple[int, list[str]]] = {}
    for line, cells in table.lines:
        key = tuple(cells[i] for i in at)
        if key in rows:
            raise BaselineError(
                f"{table.file}:{line}: the same key columns ({','.join(layout.key)}) appear on an earlier line"
            )
        rows[key] = (line, cells)
    return Table(table.file, layout, rows)


def _number(cell: str, column: str, file: str, line: int) -> float:
    if cell == "":
        return math.nan  # pandas writes NaN as an empty cell
    try:
        return float(cell)
    except ValueError:
        raise BaselineError(f"{file}:{line}: {column} {cell!r} is not a number") from None


def read_text(path: Path) -> str:
    """A baseline CSV's text: a regular file, bounded (results/tables.py's limit), UTF-8; else one line."""
    if not path.exists() and not path.is_symlink():
        raise BaselineError(f"{path}: no baseline file; create it with `orderlab check --update`")
    try:
        return userfiles.read_text(path, CSV_LIMIT, "a baseline CSV, as `orderlab run` writes it")
    except FileProblem as problem:
        raise BaselineError(str(problem)) from None


# --- comparing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftedRow:
    key: tuple[str, ...]
    baseline: Row | None  # None: a row the baseline lacks (extra)
    new: Row | None  # None: a baseline row the fresh run lacks (missing)
    columns: tuple[str, ...] = ()  # of a changed row: the value columns that moved

    @property
    def kind(self) -> str:
        return "missing" if self.new is None else "extra" if self.baseline is None else "changed"

    def abs_diff(self, column: str) -> float:
        """|new - baseline| in a numeric column; NaN for a text column or a row on one side only."""
        if self.baseline is None or self.new is None or column not in self.baseline.numbers:
            return math.nan
        return abs(self.new.numbers[column] - self.baseline.numbers[column])

    def rel_diff(self, column: str) -> float:
        diff = self.abs_diff(column)
        if math.isnan(diff):
            return diff
        assert self.baseline is not None  # the difference is NaN without one
        scale = abs(self.baseline.numbers[column])
        return diff / scale if scale else (math.inf if diff else 0.0)


@dataclass(frozen=True)
class CsvComparison:
    """One CSV against its committed baseline: the rows that drifted beyond the tolerances, and how many it has."""

    file: str  # the baseline CSV
    rows: int  # rows in the baseline
    drifted: list[DriftedRow]
    tolerances: Tolerances
    key_columns: list[str]  # names of the cells of each DriftedRow.key

    def count(self, kind: str) -> int:
        return sum(d.kind == kind for d in self.drifted)

    def describe(self) -> str:
        """'summary.csv: 2 changed, 0 missing, 1 extra of 495 rows'."""
        kinds = ", ".join(f"{self.count(k)} {k}" for k in ("changed", "missing", "extra"))
        return f"{Path(self.file).name}: {kinds} of {self.rows:,} rows"


def compare(baseline: Table, fresh: Table, tol: Tolerances) -> CsvComparison:
    """Rows with a number outside the tolerance or a verdict changed, plus missing and extra rows."""
    drifted = []
    for key in baseline.rows:
        if key not in fresh.rows:
            drifted.append(DriftedRow(key, baseline.row(key), None))
        elif moved := _moved(baseline, fresh, key, tol):
            drifted.append(DriftedRow(key, baseline.row(key), fresh.row(key), moved))
    drifted += [DriftedRow(key, None, fresh.row(key)) for key in fresh.rows if key not in baseline.rows]
    return CsvComparison(baseline.file, len(baseline.rows), drifted, tol, list(baseline.layout.key))


def _moved(baseline: Table, fresh: Table, key: tuple[str, ...], tol: Tolerances) -> tuple[str, ...]:
    """The compared columns where the row moved: numbers beyond the tolerance, words that differ.

    A cell written the same is the same number, so only differing cells are read as numbers (a
    baseline cell that is not one is a BaselineError naming its line).
    """
    old, new = baseline.rows[key][1], fresh.rows[key][1]
    moved = tuple(
        name
        for name, at in baseline.layout.compared
        if old[at] != new[at]
        and not (
            name in baseline.layout.numeric and tol.allows(baseline.number(key, name, at), fresh.number(key, name, at))
        )
    )
    words = dict(zip(baseline.layout.header, zip(old, new, strict=True), strict=True))
    return tuple(name for name in moved if not _at_the_line(name, words, moved, baseline.layout))


def _at_the_line(column: str, words: dict[str, tuple[str, str]], moved: tuple[str, ...], layout: Layout) -> bool:
    """A verdict that flipped between round-off (written 0) and order-sensitive while its value stayed within tolerance.

    Such a value sits at its measured round-off line, which CPUs and thread counts move by their own
    round-off: the flip is that noise, not drift. Any other verdict change, or one with a moved value, is drift.
    """
    value = "value" if column == "verdict" else column.removesuffix(" verdict")
    if not is_verdict_column(column) or value not in layout.numeric or value in moved:
        return False
    (old_word, new_word), (old_value, new_value) = words[column], words[value]
    passing_value = new_value if old_word == ORDER_SENSITIVE else old_value
    return (
        ORDER_SENSITIVE in (old_word, new_word)
        and {old_word, new_word} - {ORDER_SENSITIVE} <= set(PASSING_WORDS)
        and _is_float(passing_value)
        and float(passing_value) == 0  # round-off is written as 0
    )


def compare_csv(baseline_text: str, fresh_text: str, file: str, tol: Tolerances) -> CsvComparison:
    """Compare a baseline CSV (named file in messages) with the fresh run's text of it."""
    fresh = read_csv(fresh_text, f"<fresh run> {Path(file).name}")
    baseline = read_csv(baseline_text, file)
    same_header(baseline, fresh)
    layout = layout_of(fresh, baseline)
    return compare(index(baseline, layout), index(fresh, layout), tol)


@dataclass(frozen=True)
class UnmatchedFile:
    """A CSV on one side only: the baseline lacks it, or the fresh run no longer writes it."""

    path: Path
    in_baseline: bool

    def brief(self) -> str:
        return f"{self.path.name}: {'no longer written' if self.in_baseline else 'not in the baseline'}"

    def line(self) -> str:
        if self.in_baseline:
            return f"{self.path}: the fresh run no longer writes this file; if intended, run `orderlab check --update`"
        return f"{self.path}: no baseline file, but the fresh run writes one; create it with `orderlab check --update`"


# CSVs made from the others (results/orders.py), which a baseline from before them lacks: checked where the baseline has
# one, not asked for where it has none (regenerate it with `check --update` to check it too).
DERIVED = {f"{ORDERS}.csv"}


def csv_names(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.csv")}


def compare_folder(
    folder: Path, files: dict[str, str], tol: Tolerances
) -> tuple[list[CsvComparison], list[UnmatchedFile]]:
    """Each fresh CSV (file name -> text) against its namesake in folder; CSVs on one side only are listed."""
    on_disk = csv_names(folder)
    comparisons = [
        compare_csv(read_text(folder / name), text, str(folder / name), tol)
        for name, text in files.items()
        if name in on_disk
    ]
    one_side = (on_disk ^ files.keys()) - (DERIVED - on_disk)
    unmatched = [UnmatchedFile(folder / name, name in on_disk) for name in sorted(one_side)]
    return comparisons, unmatched


@dataclass
class SpecCheck:
    """What `check` found for one spec: a status, a one-line summary, the drift and any warnings."""

    path: Path
    name: str
    status: Status
    summary: str
    comparisons: list[CsvComparison] = field(default_factory=list)  # one per CSV on both sides
    unmatched: list[UnmatchedFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def drifted(self) -> list[CsvComparison]:
        return [c for c in self.comparisons if c.drifted]
