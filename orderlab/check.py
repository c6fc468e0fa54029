"""`orderlab check`: re-run specs and compare their tidy CSVs with the committed baselines.

A baseline is results/<name>/ as written by `orderlab run` or `orderlab check --update`. Fresh and
baseline rows are matched on the key columns exactly (a missing or extra row is drift); values may
move by atol + rtol * |baseline|, with defaults derived from the dtype so that round-off near
machine epsilon never reads as drift. Never prints: the CLI renders the outcomes through report.
"""

from __future__ import annotations

import csv
import io
import json
import math
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from orderlab.errors import OrderlabError
from orderlab.spec import LoadedSpec, Spec, load_spec
from orderlab.verdicts import tolerance

# %.6e keeps 7 significant digits, so rewriting a value moves it by up to 1e-6 of itself.
CSV_RESOLUTION = 1e-6
METRICS_FILE = "metrics.csv"
VALUE_COLUMNS = ("value", "verdict")  # every other column is part of a row's key
Status = Literal["clean", "drift", "created", "updated", "unchanged", "error"]


class BaselineError(OrderlabError):
    """A baseline file that cannot be read as orderlab wrote it (truncated, edited out of shape)."""


@dataclass(frozen=True)
class Tolerances:
    rtol: float
    atol: float

    def allows(self, baseline: float, new: float) -> bool:
        """|new - baseline| <= atol + rtol * |baseline|; NaN matches NaN and an infinity itself."""
        if math.isnan(baseline) or math.isnan(new):
            return math.isnan(baseline) and math.isnan(new)
        if math.isinf(baseline) or math.isinf(new):
            return baseline == new
        return abs(new - baseline) <= self.atol + self.rtol * abs(baseline)


EXACT = Tolerances(rtol=0.0, atol=0.0)


def default_tolerances(dtype: str) -> Tolerances:
    """atol: the verdict tolerance (1000 eps); rtol: that too, but never finer than the CSV's 7 digits."""
    slack = tolerance(dtype)
    return Tolerances(rtol=max(slack, 2 * CSV_RESOLUTION), atol=slack)


def tolerances_for(spec: Spec, rtol: float | None = None, atol: float | None = None) -> Tolerances:
    """Command-line values win over the spec's `check:` section, which wins over the dtype defaults."""
    default = default_tolerances(spec.model.dtype)
    pick = lambda *options: next(o for o in options if o is not None)  # noqa: E731
    return Tolerances(pick(rtol, spec.check.rtol, default.rtol), pick(atol, spec.check.atol, default.atol))


# --- reading CSVs ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    key: tuple[str, ...]  # every cell but value and verdict, as written
    text: str  # the value cell as written, e.g. "1.209642e+00"
    value: float
    verdict: str  # "" in tables without a verdict column


@dataclass(frozen=True)
class Baseline:
    header: list[str]
    rows: dict[tuple[str, ...], Row]

    @property
    def key_columns(self) -> list[str]:
        return [name for name in self.header if name not in VALUE_COLUMNS]


def parse_metrics(text: str, file: str) -> Baseline:
    """A metrics.csv keyed by every column but value and verdict; BaselineError naming file and line if malformed.

    The header is read, not assumed: sweeps add configuration columns and pretrained corpus runs
    have their own, so any tidy table with a `value` column can be a baseline.
    """
    if not text:
        raise BaselineError(f"{file}: empty file; expected a metrics CSV with a header line and a value column")
    if not text.endswith("\n"):
        raise BaselineError(f"{file}: truncated: the last line has no line ending; regenerate it (check --update)")
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    rows: dict[tuple[str, ...], Row] = {}
    try:
        header = next(reader)
        if "value" not in header or len(set(header)) != len(header):
            raise BaselineError(f"{file}:1: header {','.join(header)!r}; expected distinct column names with 'value'")
        keys = [i for i, name in enumerate(header) if name not in VALUE_COLUMNS]
        at_value = header.index("value")
        at_verdict = header.index("verdict") if "verdict" in header else None
        for cells in reader:
            line = reader.line_num
            if len(cells) != len(header):
                raise BaselineError(f"{file}:{line}: {len(cells)} fields; expected {len(header)}")
            key = tuple(cells[i] for i in keys)
            if key in rows:
                raise BaselineError(f"{file}:{line}: the same key columns appear on an earlier line")
            verdict = "" if at_verdict is None else cells[at_verdict]
            rows[key] = Row(key, cells[at_value], _number(cells[at_value], file, line), verdict)
    except csv.Error as error:
        raise BaselineError(f"{file}:{reader.line_num}: not valid CSV: {error}") from None
    return Baseline(header, rows)


def same_header(baseline: Baseline, fresh: Baseline, file: str) -> None:
    """Columns that differ make rows incomparable: say so, and how to move on."""
    if baseline.header != fresh.header:
        raise BaselineError(
            f"{file}:1: header {','.join(baseline.header)!r}; this orderlab writes {','.join(fresh.header)!r} "
            "(a baseline from another orderlab version? regenerate it with `orderlab check --update`)"
        )


def _number(cell: str, file: str, line: int) -> float:
    if cell == "":
        return math.nan  # pandas writes NaN as an empty cell
    try:
        return float(cell)
    except ValueError:
        raise BaselineError(f"{file}:{line}: value {cell!r} is not a number") from None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{path}: no baseline file; create it with `orderlab check --update`") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BaselineError(f"{path}: cannot read: {error}") from None


# --- comparing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftedRow:
    key: tuple[str, ...]
    baseline: Row | None  # None: a row the baseline lacks (extra)
    new: Row | None  # None: a baseline row the fresh run lacks (missing)

    @property
    def kind(self) -> str:
        return "missing" if self.new is None else "extra" if self.baseline is None else "changed"

    @property
    def abs_diff(self) -> float:
        if self.baseline is None or self.new is None:
            return math.nan
        return abs(self.new.value - self.baseline.value)

    @property
    def rel_diff(self) -> float:
        if self.baseline is None or self.baseline.value == 0:
            return math.inf if self.abs_diff else 0.0
        return self.abs_diff / abs(self.baseline.value)


@dataclass(frozen=True)
class Comparison:
    rows: int  # rows in the baseline
    drifted: list[DriftedRow]
    tolerances: Tolerances
    key_columns: list[str]  # names of the cells of each DriftedRow.key

    def count(self, kind: str) -> int:
        return sum(d.kind == kind for d in self.drifted)

    def describe(self) -> str:
        """'2 changed, 0 missing, 1 extra of 495 rows'."""
        kinds = ", ".join(f"{self.count(k)} {k}" for k in ("changed", "missing", "extra"))
        return f"{kinds} of {self.rows:,} rows"


def compare(baseline: Baseline, fresh: Baseline, tol: Tolerances) -> Comparison:
    """Rows whose value leaves the tolerance or whose verdict word changes, plus missing and extra rows."""
    drifted = []
    for key, old in baseline.rows.items():
        new = fresh.rows.get(key)
        if new is None or not tol.allows(old.value, new.value) or old.verdict != new.verdict:
            drifted.append(DriftedRow(key, old, new))
    drifted += [DriftedRow(key, None, new) for key, new in fresh.rows.items() if key not in baseline.rows]
    return Comparison(len(baseline.rows), drifted, tol, baseline.key_columns)


# --- one spec end to end ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fresh:
    """A spec's results computed now, as the exact files `orderlab run` writes."""

    texts: dict[str, str]  # CSV file stem -> its text
    manifest: dict


def run_fresh(loaded: LoadedSpec, progress: Callable[[int, int], None] | None = None) -> Fresh:
    """Run the spec exactly as `orderlab run` does, into a scratch folder, and read the files back."""
    from orderlab.experiment import write_experiment

    with tempfile.TemporaryDirectory(prefix="orderlab-check-") as scratch:
        folder = Path(scratch) / loaded.spec.name
        write_experiment(loaded, "cpu", folder, progress)
        texts = {path.stem: path.read_text(encoding="utf-8") for path in sorted(folder.glob("*.csv"))}
        return Fresh(texts, json.loads((folder / "manifest.json").read_text(encoding="utf-8")))


@dataclass
class SpecCheck:
    """What `check` found for one spec: a status, a one-line summary, the drift and any warnings."""

    path: Path
    name: str
    status: Status
    summary: str
    comparison: Comparison | None = None
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0


def check_spec(
    path: Path,
    results_root: Path,
    rtol: float | None = None,
    atol: float | None = None,
    update: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> SpecCheck:
    """Re-run one spec and compare it with (or, with update, write it as) results_root/<name>/."""
    started = time.perf_counter()
    try:
        loaded = load_spec(path)
    except OrderlabError as error:
        return SpecCheck(path, path.stem, "error", str(error), seconds=time.perf_counter() - started)
    name = loaded.spec.name
    folder = results_root / name
    try:
        outcome = (_update if update else _check)(loaded, folder, rtol, atol, progress)
    except OrderlabError as error:
        outcome = SpecCheck(path, name, "error", str(error))
    outcome.seconds = time.perf_counter() - started
    return outcome


def _check(loaded: LoadedSpec, folder: Path, rtol, atol, progress) -> SpecCheck:
    csv_path = folder / METRICS_FILE
    baseline = parse_metrics(read_text(csv_path), str(csv_path))
    warnings = manifest_warnings(folder, loaded)
    fresh = parse_metrics(run_fresh(loaded, progress).texts["metrics"], "<fresh run>")
    same_header(baseline, fresh, str(csv_path))
    tol = tolerances_for(loaded.spec, rtol, atol)
    comparison = compare(baseline, fresh, tol)
    limits = f"rtol={tol.rtol:.1e}, atol={tol.atol:.1e} ({loaded.spec.model.dtype})"
    name = loaded.spec.name
    if comparison.drifted:
        summary = f"{name}: DRIFT: {comparison.describe()} outside {limits} vs {csv_path}"
        return SpecCheck(loaded.path, name, "drift", summary, comparison, warnings)
    summary = f"{name}: ok: {comparison.rows:,} rows within {limits}"
    return SpecCheck(loaded.path, name, "clean", summary, comparison, warnings)


def _update(loaded: LoadedSpec, folder: Path, rtol, atol, progress) -> SpecCheck:
    """Claim the baseline folder before the run (see ownership.py), so a folder that is not this spec's is refused."""
    from orderlab.ownership import Writer, claim

    with claim(folder, Writer("run", loaded.spec.name)):
        return _rewrite(loaded, folder, progress)


def _rewrite(loaded: LoadedSpec, folder: Path, progress) -> SpecCheck:
    name, csv_path = loaded.spec.name, folder / METRICS_FILE
    fresh = run_fresh(loaded, progress)
    baseline, replaced = None, ""
    if csv_path.exists():
        try:
            baseline = parse_metrics(read_text(csv_path), str(csv_path))
        except BaselineError as error:
            replaced = f" (replacing an unreadable baseline: {error})"
    old_manifest = _read_manifest(folder)
    unchanged = (
        baseline is not None
        and all(_read_or_none(folder / f"{n}.csv") == text for n, text in fresh.texts.items())
        and old_manifest.get("spec", {}).get("sha256") == loaded.sha256
        and old_manifest.get("versions") == fresh.manifest["versions"]
    )
    if unchanged:
        return SpecCheck(loaded.path, name, "unchanged", f"{name}: unchanged: {folder} kept as it was")
    write_fresh(folder, fresh)
    rows = fresh.texts["metrics"].count("\n") - 1
    if baseline is None:
        return SpecCheck(loaded.path, name, "created", f"{name}: wrote {folder} ({rows:,} rows){replaced}")
    fresh_rows = parse_metrics(fresh.texts["metrics"], "<fresh run>")
    if baseline.header != fresh_rows.header:
        summary = f"{name}: updated {folder}: columns changed to {','.join(fresh_rows.header)}"
        return SpecCheck(loaded.path, name, "updated", summary)
    comparison = compare(baseline, fresh_rows, EXACT)
    summary = f"{name}: updated {folder}: {comparison.describe()}"
    if not comparison.drifted:
        summary += "; values identical, manifest or summary refreshed"
    return SpecCheck(loaded.path, name, "updated", summary, comparison)


def write_fresh(folder: Path, fresh: Fresh) -> None:
    """Replace `folder` (claimed by the caller) with the fresh files, atomically."""
    from orderlab.results import write_folder_atomically, write_manifest

    def fill(staging: Path) -> None:
        for name, text in fresh.texts.items():
            (staging / f"{name}.csv").write_text(text, encoding="utf-8")
        write_manifest(staging, fresh.manifest)

    write_folder_atomically(folder, fill)


def _read_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _read_manifest(folder: Path) -> dict:
    try:
        data = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def manifest_warnings(folder: Path, loaded: LoadedSpec) -> list[str]:
    """Differences that may explain drift but are not drift: library versions, an edited spec."""
    from orderlab.results import versions

    manifest_path = folder / "manifest.json"
    manifest = _read_manifest(folder)
    if not manifest:
        return [f"{manifest_path}: missing or unreadable; cannot compare versions"]
    warnings = []
    recorded = manifest.get("versions") if isinstance(manifest.get("versions"), dict) else {}
    for package, running in versions().items():
        if recorded.get(package) != running:
            warnings.append(
                f"{manifest_path}: baseline made with {package} {recorded.get(package, '?')}, running {running}"
            )
    spec_record = manifest.get("spec") if isinstance(manifest.get("spec"), dict) else {}
    if spec_record.get("sha256") != loaded.sha256:
        warnings.append(
            f"{manifest_path}: {loaded.path} changed since the baseline was written (sha256 differs); "
            "if that is intended, run `orderlab check --update`"
        )
    return warnings


# --- which specs -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    specs: list[Path]
    skipped: list[str]  # notes on specs left out because they have no baseline


def plan(targets: list[Path], experiments: Path, results_root: Path, update: bool) -> Plan:
    """Spec files to check: named files as given; folders (default: experiments/) for their *.yaml.

    From a folder, only specs with a baseline folder are checked (with --update: all of them), so a
    new experiment without a baseline is noted, not failed. A named file must have a baseline.
    """
    specs: list[Path] = []
    skipped: list[str] = []
    for target in targets or [experiments]:
        if not target.is_dir():
            specs.append(target)
            continue
        for path in sorted([*target.glob("*.yaml"), *target.glob("*.yml")]):
            name = _spec_name(path)
            if update or name is None or (results_root / name).is_dir():
                specs.append(path)
            else:
                skipped.append(
                    f"skipped {path}: no baseline {results_root / name}/ (create it: orderlab check --update {path})"
                )
    if not specs:
        where = ", ".join(map(str, targets or [experiments]))
        raise OrderlabError(
            f"nothing to check: no spec under {where} has a baseline in {results_root}/; "
            "expected spec files, or create baselines with `orderlab check --update`"
        )
    return Plan(specs, skipped)


def _spec_name(path: Path) -> str | None:
    try:
        return load_spec(path).spec.name
    except OrderlabError:
        return None  # checked anyway, so that the spec error is reported
