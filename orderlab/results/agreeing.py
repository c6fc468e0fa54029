"""A run into a folder that already holds results of the same spec: each CSV whose numbers all agree with the
folder's within `check`'s tolerances keeps the folder's bytes. Same machine, same bytes, so this changes nothing
there; on another CPU, whose BLAS rounds the last digits differently, a committed baseline is not rewritten by
round-off (and `git status` stays clean), while a number that moves past the tolerances is written as computed.

Only when everything that made both folders is the same (same_making): a folder made from an edited spec, with
other versions, another model, or a user's hooks is always rewritten, so what a run returns is what it computed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from orderlab.core.userfiles import FileProblem
from orderlab.results.baseline_diff import BaselineError, Tolerances, compare_csv, csv_names, read_text
from orderlab.results.manifest import ManifestFile, read_manifest


def same_making(before: ManifestFile | None, now: ManifestFile) -> bool:
    """Both manifests record the same spec file contents, the same library versions and the same model (its spec,
    and a model object's class, config and weights hash), and neither ran a user's hook: a function's name does not
    say what it did, so a hooked run is never taken for another."""
    if before is None or before.fields.spec is None or now.fields.spec is None:
        return False
    return (
        before.fields.spec.sha256 == now.fields.spec.sha256
        and before.fields.versions == now.fields.versions
        and before.document.get("model") == now.document.get("model")
        and not user_hooks(before.document)
        and not user_hooks(now.document)
    )


def user_hooks(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The user's functions at hook points a run's manifest records (point -> function name), or none."""
    model = manifest.get("model")
    hooks = model.get("user_hooks") if isinstance(model, dict) else None
    return hooks if isinstance(hooks, dict) else {}


def made_in_python(folder: Path) -> str | None:
    """What made `folder` that a spec file cannot say (a user's hooks, a model object), as a phrase; None when its
    spec file alone remakes it (or it has no readable manifest)."""
    try:
        document = read_manifest(folder).document
    except FileProblem:
        return None
    hooks = user_hooks(document)
    model = document.get("model")
    given = model.get("given") if isinstance(model, dict) else None
    parts = [f"hooks at {', '.join(sorted(hooks))}"] if hooks else []
    parts += [f"the model object {given.get('model_class')}"] if isinstance(given, dict) else []
    return " and ".join(parts) or None


def keep_agreeing_csvs(staging: Path, folder: Path, tol: Tolerances) -> list[str]:
    """Copy into `staging` each CSV of `folder` that differs from staging's but agrees with it within `tol`, when
    both manifests record the same making; the names of the CSVs whose bytes were kept."""
    if not folder.is_dir():
        return []
    try:
        if not same_making(read_manifest(folder), read_manifest(staging)):
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
