"""`orderlab check`: re-run specs and compare every CSV they write with the committed baselines.

A baseline is results/<name>/ as written by `orderlab run` or `orderlab check --update`. Each CSV
the fresh run writes must be in the baseline, and each baseline CSV must still be written. Within
a CSV, rows are matched on their key columns exactly (a missing or extra row is drift); numeric
cells may move by atol + rtol * |baseline|, with defaults derived from the dtype so that round-off
near machine epsilon never reads as drift; verdict words must match. Never prints: the CLI renders
the outcomes through report.
"""

from __future__ import annotations

import csv
import functools
import io
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from orderlab.commands.run import write_experiment
from orderlab.errors import OrderlabError
from orderlab.measure.verdicts import ORDER_SENSITIVE, PASSING_WORDS, eps
from orderlab.models.devices import CPU
from orderlab.results.folder import staged_folder, versions, write_manifest
from orderlab.results.manifest import ManifestFields, read_manifest
from orderlab.results.ownership import Writer, claim
from orderlab.results.tables import CSV_LIMIT
from orderlab.spec import userfiles
from orderlab.spec.load import LoadedSpec, load_spec
from orderlab.spec.progress import Note, Progress
from orderlab.spec.schema import Spec
from orderlab.spec.userfiles import FileProblem

if TYPE_CHECKING:
    from orderlab.results.folder import Manifest


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


def default_tolerances(dtype: str) -> Tolerances:
    """atol: 1000 eps of the dtype (2.2e-13 float64, 1.2e-4 float32); rtol: that too, but never finer than the CSV's
    7 digits. Round-off itself is written as 0 (verdicts.py), so this slack is for values above it."""
    slack = 1000 * eps(dtype)
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
class Comparison:
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


def compare(baseline: Table, fresh: Table, tol: Tolerances) -> Comparison:
    """Rows with a number outside the tolerance or a verdict changed, plus missing and extra rows."""
    drifted = []
    for key in baseline.rows:
        if key not in fresh.rows:
            drifted.append(DriftedRow(key, baseline.row(key), None))
        elif moved := _moved(baseline, fresh, key, tol):
            drifted.append(DriftedRow(key, baseline.row(key), fresh.row(key), moved))
    drifted += [DriftedRow(key, None, fresh.row(key)) for key in fresh.rows if key not in baseline.rows]
    return Comparison(baseline.file, len(baseline.rows), drifted, tol, list(baseline.layout.key))


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


def compare_csv(baseline_text: str, fresh_text: str, file: str, tol: Tolerances) -> Comparison:
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


def csv_names(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.csv")}


def compare_folder(
    folder: Path, files: dict[str, str], tol: Tolerances
) -> tuple[list[Comparison], list[UnmatchedFile]]:
    """Each fresh CSV (file name -> text) against its namesake in folder; CSVs on one side only are listed."""
    on_disk = csv_names(folder)
    comparisons = [
        compare_csv(read_text(folder / name), text, str(folder / name), tol)
        for name, text in files.items()
        if name in on_disk
    ]
    unmatched = [UnmatchedFile(folder / name, name in on_disk) for name in sorted(on_disk ^ files.keys())]
    return comparisons, unmatched


# --- one spec end to end ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fresh:
    """A spec's results computed now, as the exact files `orderlab run` writes."""

    texts: dict[str, str]  # CSV file stem -> its text
    manifest: Manifest

    @property
    def files(self) -> dict[str, str]:
        """CSV file name -> its text."""
        return {f"{stem}.csv": text for stem, text in self.texts.items()}


def run_fresh(loaded: LoadedSpec, progress: Progress | None = None, notes: Note | None = None) -> Fresh:
    """Run the spec exactly as `orderlab run` does, into a scratch folder, and read the files back."""
    with tempfile.TemporaryDirectory(prefix="orderlab-check-") as scratch:
        folder = Path(scratch) / loaded.spec.name
        write_experiment(loaded, CPU, folder, progress, notes=notes)
        texts = {path.stem: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.csv"))}
        return Fresh(texts, read_manifest(folder).document)


@dataclass
class SpecCheck:
    """What `check` found for one spec: a status, a one-line summary, the drift and any warnings."""

    path: Path
    name: str
    status: Status
    summary: str
    comparisons: list[Comparison] = field(default_factory=list)  # one per CSV on both sides
    unmatched: list[UnmatchedFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def drifted(self) -> list[Comparison]:
        return [c for c in self.comparisons if c.drifted]


def check_spec(
    path: Path,
    results_root: Path,
    rtol: float | None = None,
    atol: float | None = None,
    update: bool = False,
    progress: Progress | None = None,
    notes: Note | None = None,
) -> SpecCheck:
    """Re-run one spec and compare it with (or, with update, write it as) results_root/<name>/; progress and
    notes: the fresh run's, as `orderlab run` reports them."""
    started = time.perf_counter()
    try:
        loaded = load_spec(path)
    except OrderlabError as error:
        return SpecCheck(path, path.stem, "error", str(error), seconds=time.perf_counter() - started)
    name = loaded.spec.name
    folder = results_root / name
    try:
        outcome = (_update if update else _check)(loaded, folder, rtol, atol, progress, notes)
    except OrderlabError as error:
        outcome = SpecCheck(path, name, "error", str(error))
    outcome.seconds = time.perf_counter() - started
    return outcome


def _check(
    loaded: LoadedSpec,
    folder: Path,
    rtol: float | None,
    atol: float | None,
    progress: Progress | None,
    notes: Note | None,
) -> SpecCheck:
    name = loaded.spec.name
    if not folder.is_dir():
        summary = f"{name}: no baseline: {folder}/ does not exist; run `orderlab check --update {loaded.path}`"
        return SpecCheck(loaded.path, name, "missing", summary)
    warnings = manifest_warnings(folder, loaded)
    tol = tolerances_for(loaded.spec, rtol, atol)
    comparisons, unmatched = compare_folder(folder, run_fresh(loaded, progress, notes).files, tol)
    limits = f"rtol={tol.rtol:.1e}, atol={tol.atol:.1e} ({loaded.spec.model.dtype})"
    drifted = [c.describe() for c in comparisons if c.drifted] + [u.brief() for u in unmatched]
    if drifted:
        summary = f"{name}: DRIFT vs {folder}/ ({limits}): {'; '.join(drifted)}"
        return SpecCheck(loaded.path, name, "drift", summary, comparisons, unmatched, warnings)
    rows = sum(c.rows for c in comparisons)
    summary = f"{name}: ok: {len(comparisons)} CSVs, {rows:,} rows within {limits}"
    return SpecCheck(loaded.path, name, "clean", summary, comparisons, warnings=warnings)


def _update(
    loaded: LoadedSpec,
    folder: Path,
    rtol: float | None,
    atol: float | None,
    progress: Progress | None,
    notes: Note | None,
) -> SpecCheck:
    """Claim the baseline folder before the run (see ownership.py), so a folder that is not this spec's is refused."""
    with claim(folder, Writer("run", loaded.spec.name)):
        return _rewrite(loaded, folder, tolerances_for(loaded.spec, rtol, atol), progress, notes)


def _rewrite(
    loaded: LoadedSpec, folder: Path, tol: Tolerances, progress: Progress | None, notes: Note | None
) -> SpecCheck:
    name = loaded.spec.name
    fresh = run_fresh(loaded, progress, notes)
    if not folder.is_dir():
        write_fresh(folder, fresh)
        counts = ", ".join(f"{file} ({_data_rows(text):,} rows)" for file, text in fresh.files.items())
        return SpecCheck(loaded.path, name, "created", f"{name}: wrote {folder}: {counts}")
    if _unchanged(folder, loaded, fresh, tol):
        summary = f"{name}: unchanged: {folder} kept as it was (every CSV within tolerance, same spec and versions)"
        return SpecCheck(loaded.path, name, "unchanged", summary)
    changes, comparisons = _changes(folder, fresh.files)
    write_fresh(folder, fresh)
    summary = f"{name}: updated {folder}: {'; '.join(changes) or 'CSVs identical, manifest refreshed'}"
    return SpecCheck(loaded.path, name, "updated", summary, comparisons)


def _data_rows(text: str) -> int:
    return text.count("\n") - 1  # orderlab's CSVs have no line breaks inside cells


def _unchanged(folder: Path, loaded: LoadedSpec, fresh: Fresh, tol: Tolerances) -> bool:
    """Every CSV within `check`'s tolerances (so a clean check), none stale, and the manifest records this spec and
    these library versions. Round-off that differs between CPUs then never rewrites a baseline."""
    manifest = _recorded(folder)
    if not (
        csv_names(folder) == fresh.files.keys()
        and isinstance(manifest, ManifestFields)
        and manifest.spec is not None
        and manifest.spec.sha256 == loaded.sha256
        and manifest.versions == fresh.manifest["versions"]
    ):
        return False
    try:
        comparisons, _ = compare_folder(folder, fresh.files, tol)
    except BaselineError:
        return False
    return not any(comparison.drifted for comparison in comparisons)


def _changes(folder: Path, files: dict[str, str]) -> tuple[list[str], list[Comparison]]:
    """What --update is about to change in folder: one phrase per CSV that differs, and the row comparisons."""
    phrases, comparisons = [], []
    on_disk = csv_names(folder)
    for file, text in files.items():
        path = folder / file
        if file not in on_disk:
            phrases.append(f"{file}: added")
        elif _read_or_none(path) != text:
            try:
                comparisons.append(compare_csv(read_text(path), text, str(path), EXACT))
                phrases.append(comparisons[-1].describe())
            except BaselineError as error:
                phrases.append(f"{file}: replaced an unreadable baseline ({error})")
    return phrases + [f"{file}: removed" for file in sorted(on_disk - files.keys())], comparisons


def write_fresh(folder: Path, fresh: Fresh) -> None:
    """Replace `folder` (claimed by the caller) with the fresh files, atomically."""
    with staged_folder(folder) as staging:
        for name, text in fresh.texts.items():
            (staging / f"{name}.csv").write_text(text, encoding="utf-8")
        write_manifest(staging, fresh.manifest)


def _read_or_none(path: Path) -> str | None:
    try:
        return read_text(path)
    except BaselineError:
        return None


def _recorded(folder: Path) -> ManifestFields | str:
    """The baseline's manifest, or why it cannot be read (a warning: the CSVs are still compared)."""
    try:
        return read_manifest(folder).fields
    except FileProblem as problem:
        return str(problem)


def manifest_warnings(folder: Path, loaded: LoadedSpec) -> list[str]:
    """Differences that may explain drift but are not drift: library versions, an edited spec."""
    manifest_path = folder / "manifest.json"
    manifest = _recorded(folder)
    if not isinstance(manifest, ManifestFields):
        return [f"{manifest}; cannot compare versions"]
    warnings = []
    for package, running in versions().items():
        made = manifest.versions.get(package)
        if made != running:
            warnings.append(f"{manifest_path}: baseline made with {package} {made or '?'}, running {running}")
    if manifest.spec is None or manifest.spec.sha256 != loaded.sha256:
        warnings.append(
            f"{manifest_path}: {loaded.path} changed since the baseline was written (sha256 differs); "
            "if that is intended, run `orderlab check --update`"
        )
    return warnings


# --- which specs -----------------------------------------------------------------------------------


def plan(targets: list[Path], experiments: Path) -> list[Path]:
    """Spec files to check: named files as given; folders (default: experiments/) for their *.yaml and *.yml.

    Every spec found is checked, baseline or not, so a new experiment fails until its baseline is
    made. A file named twice is checked once; two files with one spec name are refused, since they
    would share one baseline folder.
    """
    found: dict[Path, Path] = {}
    for target in targets or [experiments]:
        paths = sorted([*target.glob("*.yaml"), *target.glob("*.yml")]) if target.is_dir() else [target]
        for path in paths:
            found.setdefault(path.resolve(), path)
    specs = list(found.values())
    refuse_shared_names(specs)
    return specs


def refuse_shared_names(specs: list[Path]) -> None:
    first: dict[str, Path] = {}
    for path in specs:
        name = _spec_name(path)
        if name is None:
            continue
        if name in first:
            raise OrderlabError(
                f"{first[name]} and {path} both have the spec name {name!r}, so they would share one baseline "
                "folder; give one of them another `name:`"
            )
        first[name] = path


def _spec_name(path: Path) -> str | None:
    try:
        return load_spec(path).spec.name
    except OrderlabError:
        return None  # checked anyway, so that the spec error is reported
