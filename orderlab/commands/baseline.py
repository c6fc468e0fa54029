"""`orderlab check` for one spec: re-run it as `orderlab run` does and compare it with its baseline folder (or,
with --update, rewrite the folder); and which spec files a check covers. The comparison itself is
results/baseline_diff.py; this module joins it to the run command, which is why it sits with the commands.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from orderlab.commands.run import write_experiment
from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.plan.limits import validate_limits
from orderlab.results.agreeing import made_in_python, same_making
from orderlab.results.baseline_diff import (
    EXACT,
    BaselineError,
    CsvComparison,
    SpecCheck,
    Tolerances,
    compare_csv,
    compare_folder,
    csv_names,
    read_text,
    tolerances_for,
)
from orderlab.results.folder import Manifest, staged_folder, write_manifest
from orderlab.results.manifest import MANIFEST, ManifestFields, ManifestFile, read_manifest
from orderlab.results.ownership import Writer, claim
from orderlab.results.versions import version_changes, versions
from orderlab.spec.load import LoadedSpec, load_spec


@dataclass(frozen=True)
class Fresh:
    """A spec's results computed now, as the exact files `orderlab run` writes."""

    texts: dict[str, str]  # CSV file stem -> its text
    manifest: Manifest

    @property
    def files(self) -> dict[str, str]:
        """CSV file name -> its text."""
        return {f"{stem}.csv": text for stem, text in self.texts.items()}


def run_fresh(loaded: LoadedSpec, options: RunOptions = DEFAULTS) -> Fresh:
    """Run the spec exactly as `orderlab run` does, into a scratch folder, and read the files back."""
    with tempfile.TemporaryDirectory(prefix="orderlab-check-") as scratch:
        folder = Path(scratch) / loaded.spec.name
        write_experiment(loaded, folder, options)
        texts = {path.stem: path.read_bytes().decode() for path in sorted(folder.glob("*.csv"))}  # a CR kept as it is
        return Fresh(texts, read_manifest(folder).document)


def check_spec(
    path: Path,
    results_root: Path,
    rtol: float | None = None,
    atol: float | None = None,
    update: bool = False,
    options: RunOptions = DEFAULTS,
) -> SpecCheck:
    """Re-run one spec and compare it with (or, with update, write it as) results_root/<name>/; options: the
    fresh run's (on the CPU, as baselines are made; progress and notes as `orderlab run` reports them). With a model
    object (options.model: orderlab.api.check(..., model=...)) the spec describes it and is re-run on it."""
    started = time.perf_counter()
    given = options.model
    try:
        loaded = validate_limits(load_spec(path, None if given is None else given.record))
    except OrderlabError as error:
        return SpecCheck(path, path.stem, "error", str(error), seconds=time.perf_counter() - started)
    name = loaded.spec.name
    folder = results_root / name
    try:
        if given is None:  # given the object, the baseline it made is remade as it was
            _remade_by_its_spec(folder, path)
        tol = tolerances_for(loaded.spec, rtol, atol)
        outcome = (_update if update else _check)(loaded, folder, tol, options)
    except OrderlabError as error:
        outcome = SpecCheck(path, name, "error", str(error))
    outcome.seconds = time.perf_counter() - started
    return outcome


def _remade_by_its_spec(folder: Path, path: Path) -> None:
    """A baseline made from Python with hooks or a model object is not what the spec file alone makes: checking it
    would blame drift on versions, and --update would drop what made it."""
    made = made_in_python(folder) if folder.is_dir() else None
    if made:
        raise OrderlabError(
            f"{folder}: run from Python with {made}; `orderlab check` runs {path} alone, which cannot remake it "
            "(and --update would drop them): check it from Python with orderlab.api.run and the same model= and hooks="
        )


def _check(loaded: LoadedSpec, folder: Path, tol: Tolerances, options: RunOptions) -> SpecCheck:
    name = loaded.spec.name
    if not folder.is_dir():
        summary = f"{name}: no baseline: {folder}/ does not exist; run `orderlab check --update {loaded.path}`"
        return SpecCheck(loaded.path, name, "missing", summary)
    warnings = manifest_warnings(folder, loaded)
    comparisons, unmatched = compare_folder(folder, run_fresh(loaded, options).files, tol)
    limits = f"rtol={tol.rtol:.1e}, atol={tol.atol:.1e} ({loaded.spec.model.dtype})"
    drifted = [c.describe() for c in comparisons if c.drifted] + [u.brief() for u in unmatched]
    if drifted:
        summary = f"{name}: DRIFT vs {folder}/ ({limits}): {'; '.join(drifted)}"
        return SpecCheck(loaded.path, name, "drift", summary, comparisons, unmatched, warnings)
    rows = sum(c.rows for c in comparisons)
    summary = f"{name}: ok: {len(comparisons)} CSVs, {rows:,} rows within {limits}"
    return SpecCheck(loaded.path, name, "clean", summary, comparisons, warnings=warnings)


def _update(loaded: LoadedSpec, folder: Path, tol: Tolerances, options: RunOptions) -> SpecCheck:
    """Claim the baseline folder before the run (see ownership.py), so a folder that is not this spec's is refused."""
    with claim(folder, Writer("run", loaded.spec.name)):
        return _rewrite(loaded, folder, tol, options)


def _rewrite(loaded: LoadedSpec, folder: Path, tol: Tolerances, options: RunOptions) -> SpecCheck:
    name = loaded.spec.name
    fresh = run_fresh(loaded, options)
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
    try:
        recorded: ManifestFile | None = read_manifest(folder)
    except FileProblem:
        recorded = None
    now = ManifestFile(folder / MANIFEST, ManifestFields(**fresh.manifest), fresh.manifest)
    if not (csv_names(folder) == fresh.files.keys() and same_making(recorded, now)):
        return False
    try:
        comparisons, _ = compare_folder(folder, fresh.files, tol)
    except BaselineError:
        return False
    return not any(comparison.drifted for comparison in comparisons)


def _changes(folder: Path, files: dict[str, str]) -> tuple[list[str], list[CsvComparison]]:
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
            (staging / f"{name}.csv").write_bytes(text.encode())
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
    warnings = [f"{manifest_path}: {change}" for change in version_changes(manifest.versions, versions(loaded.spec))]
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
