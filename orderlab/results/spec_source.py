"""Same name, other spec file: a run replaces results/<name>/ only when they were written from the same spec file.

Two spec files may carry the same `name`; the second would silently replace the first's results (and the manifest
would then name only the second). A run refuses that without --force, in one line naming both files. The recorded
path is as the first run was given it (relative to its working folder): it is the same file when it resolves to
this spec file, or, where it no longer resolves from here (another working folder, a file since moved), when the
file names match. A spec given as a dict (the Python API) records `spec dict` and counts as one file.
"""

from __future__ import annotations

import os
from pathlib import Path

from orderlab.core.userfiles import FileProblem
from orderlab.errors import OrderlabError
from orderlab.results.manifest import read_manifest


def recorded_spec_file(folder: Path) -> Path | None:
    """The spec file the results in `folder` were written from, as their manifest records it; None if none."""
    try:
        record = read_manifest(folder).fields.spec
    except FileProblem:  # no manifest, or not one orderlab wrote: the ownership rule judges such a folder
        return None
    return Path(record.path) if record is not None and record.path else None


def same_spec_file(recorded: Path, spec_file: Path) -> bool:
    if recorded.exists() and spec_file.exists():
        return os.path.samefile(recorded, spec_file)
    return recorded.name == spec_file.name


def refuse_other_spec_file(folder: Path, spec_file: Path, force: bool) -> None:
    """OrderlabError (one line) when `folder` holds results written from another spec file, unless `force`."""
    recorded = recorded_spec_file(folder)
    if force or recorded is None or same_spec_file(recorded, spec_file):
        return
    raise OrderlabError(
        f"{folder} holds the results of {recorded}, another spec file with the same name; nothing was written; "
        f"give {spec_file} another name:, or --out, or replace them with --force"
    )
