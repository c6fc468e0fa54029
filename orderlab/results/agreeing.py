"""A run into a folder that already holds results of the same spec: each CSV whose numbers all agree with the
folder's within `check`'s tolerances keeps the folder's bytes. Same machine, same bytes, so this changes nothing
there; on another CPU, whose BLAS rounds the last digits differently, a committed baseline is not rewritten by
round-off (and `git status` stays clean), while a number that moves past the tolerances is written as computed.

Only when both manifests record the same spec file contents (sha256) and the same library versions: a folder made
from an edited spec, or with other versions, is always rewritten."""

from __future__ import annotations

from pathlib import Path

from orderlab.core.userfiles import FileProblem
from orderlab.results.baseline_diff import BaselineError, Tolerances, compare_csv, csv_names, read_text
from orderlab.results.manifest import ManifestFields, read_manifest


def same_making(before: ManifestFields | None, now: ManifestFields) -> bool:
    """Both manifests record the same spec file contents and the same library versions."""
    return (
        before is not None
        and before.spec is not None
        and now.spec is not None
        and before.spec.sha256 == now.spec.sha256
        and before.versions == now.versions
    )


def keep_agreeing_csvs(staging: Path, folder: Path, tol: Tolerances) -> list[str]:
    """Copy into `staging` each CSV of `folder` that differs from staging's but agrees with it within `tol`, when
    both manifests record the same making; the names of the CSVs whose bytes were kept."""
    if not folder.is_dir():
        return []
    try:
        if not same_making(read_manifest(folder).fields, read_manifest(staging).fields):
            return []
    except FileProblem:  # a damaged or foreign manifest: the folder is rewritten
        return []
    kept = []
    for name in sorted(csv_names(staging) & csv_names(folder)):
        before = _agreeing_text(folder / name, staging / name, tol)
        if before is not None:
            (staging / name).write_bytes(before.encode())
            kept.append(name)
    return kept


def _agreeing_text(before: Path, now: Path, tol: Tolerances) -> str | None:
    """`before`'s text (a regular file, bounded, read as hostile input) if it differs from `now`'s and every row and
    cell agrees within tolerance; else None."""
    try:
        old, new = read_text(before), read_text(now)
        return old if old != new and not compare_csv(old, new, str(before), tol).drifted else None
    except BaselineError:
        return None


class KeepAgreeing:
    """staged_folder's `settle` for a run into `folder`: keep_agreeing_csvs, remembering which CSVs it kept."""

    def __init__(self, folder: Path, tol: Tolerances) -> None:
        self.folder, self.tol = folder, tol
        self.kept: list[str] = []

    def __call__(self, staging: Path) -> None:
        self.kept = keep_agreeing_csvs(staging, self.folder, self.tol)
