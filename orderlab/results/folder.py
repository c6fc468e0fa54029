"""Results on disk: tidy CSVs with a fixed float format, a manifest, written whole or not at all.

A results folder is first written into a scratch folder beside its destination and then renamed
into place, so an interrupted or failed run leaves the previous folder exactly as it was. Only a
folder the command has claimed (orderlab/results/ownership.py: locked, and orderlab's own to replace) is
written, and its manifest records who wrote it and every file in it. The scratch folder is the only
thing removed besides the folder replaced, and only the one this process made (results/paths.py).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar

import numpy
import pandas as pd

from orderlab.results.cells import csv_target, text_cells
from orderlab.results.manifest import MANIFEST, read_manifest
from orderlab.results.ownership import Writer, held, path_error
from orderlab.results.paths import NEW, OLD, make_scratch

# Seven significant digits: what float32 carries, and plenty for float64 regression checks.
FLOAT_FORMAT = "%.6e"
# A value that could not be measured is written as nan (or inf), never as an empty cell or 0.
NAN = "nan"
# manifest.json: a JSON object whose keys depend on the command that wrote it; readers check what they use.
Manifest = dict[str, Any]


def write_csv(frame: pd.DataFrame, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as file:
        append_csv(frame, file, header=True)


def _as_cells(frame: pd.DataFrame) -> tuple[pd.DataFrame, bool]:
    """The frame as its cells are written, and whether a cell or a column name holds a carriage return: missing
    cells blank, so that `nan` means a number alone (of non-float columns, a metric without heads, and of nullable
    float columns, whose pd.NA is no number at all: an interval over one seed), and text a spreadsheet would run as
    a formula neutralised (results/cells.py)."""
    changed, carriage_return = {}, any("\r" in str(name) for name in frame.columns)
    for name, given in frame.items():
        column = given
        if column.hasnans and not (pd.api.types.is_float_dtype(column) and isinstance(column.dtype, numpy.dtype)):
            column = _blank_missing(column)
        if pd.api.types.is_string_dtype(column.dtype):  # text, or object cells (blanks among numbers)
            text = text_cells(column)
            column, carriage_return = text.column, carriage_return or text.carriage_return
        if column is not given:
            changed[str(name)] = column
    return (frame.assign(**changed) if changed else frame), carriage_return


def _blank_missing(column: pd.Series) -> pd.Series:
    """The column as text cells, missing ones blank; a nullable float column's numbers in FLOAT_FORMAT."""
    if pd.api.types.is_float_dtype(column):
        column = column.map(lambda value: FLOAT_FORMAT % value, na_action="ignore")
    return column.astype(object).where(column.notna(), "")


@contextmanager
def staged_folder(destination: Path, settle: Callable[[Path], None] | None = None) -> Iterator[Path]:
    """A staging folder to write into; leaving the block without an error swaps it into `destination` whole.

    Every artifact orderlab writes goes through here. The caller holds a claim on `destination`
    (ownership.claim). Its manifest.json (made here if the block wrote none) gets `written_by` and
    `files`, so a later command can tell orderlab's files from a user's. The staging folder and, during
    the swap, the previous folder live in one scratch folder that this process makes (.NAME.<random>.tmp/)
    and removes, so a user's .NAME.old or .NAME.x.tmp is never touched. An error or an interrupt leaves the
    previous folder as it was and no scratch behind; an OSError becomes one line.
    """
    owner = held(destination)
    try:
        scratch = make_scratch(destination)
    except OSError as error:
        raise path_error(destination, error) from error
    staging, retired = scratch / NEW, scratch / OLD
    try:
        staging.mkdir()
        yield staging
        if settle is not None:  # the last word on the staged files, with the previous folder still in place
            settle(staging)
        record_ownership(staging, owner.writer)
        owner.check()  # again: a user may have put a file into the folder while the block computed
        if os.path.lexists(destination):
            os.replace(destination, retired)
        os.replace(staging, destination)
    except BaseException as error:
        if os.path.lexists(retired) and not os.path.lexists(destination):
            os.replace(retired, destination)
        if isinstance(error, OSError):
            raise path_error(destination, error) from error
        raise
    finally:
        if not os.path.lexists(retired) or os.path.lexists(destination):  # else it holds the only previous copy
            shutil.rmtree(scratch, ignore_errors=True)


def record_ownership(folder: Path, writer: Writer) -> None:
    """Add `written_by` and `files` (every entry, manifest.json included, and the files of its sub-folders: a run's
    checkpoints/) to the folder's manifest."""
    path = folder / MANIFEST
    manifest = read_manifest(folder).document if path.exists() else {}
    files = sorted({entry.name for entry in folder.iterdir()} | {MANIFEST}
                   | {f"{entry.name}/{inner.name}" for entry in folder.iterdir() if entry.is_dir()
                      for inner in entry.iterdir()})  # fmt: skip
    write_manifest(folder, {**manifest, "written_by": writer.record(), "files": files})


def build_manifest(*, spec_name: str, spec_path: Path, spec_sha256: str, seed: int, dtype: str, device: object,
                   rows: int, libraries: dict[str, str]) -> Manifest:  # fmt: skip
    """What produced a results folder. The same for every re-run on one set-up, so re-running a committed
    experiment leaves git clean: the wall time is printed by `orderlab run`, not stored. libraries: versions(spec)."""
    import torch  # lazy: `orderlab plot` writes through this module and needs no torch

    return {
        "spec": {"name": spec_name, "path": str(spec_path), "sha256": spec_sha256},
        "seed": seed,
        "dtype": dtype,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "versions": libraries,
        "rows": rows,
    }


def write_manifest(folder: Path, manifest: Manifest) -> None:
    """manifest.json with sorted keys, so that reruns differ only where the run did."""
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


Returned = TypeVar("Returned")


def write_csv_chunks(frames: Generator[pd.DataFrame, None, Returned], path: Path) -> tuple[int, Returned]:
    """Write a stream's frames one after another as one CSV, as `write_csv` would write their concatenation.

    Returns the rows written and what the stream returned when it ended (a run's digest)."""
    rows, header = 0, True
    with path.open("w", newline="", encoding="utf-8") as file:
        while True:
            try:
                frame = next(frames)
            except StopIteration as end:
                returned: Returned = end.value
                return rows, returned
            append_csv(frame, file, header)
            rows, header = rows + len(frame), False


def append_csv(frame: pd.DataFrame, file: TextIO, header: bool) -> None:
    """A frame's rows (and the header line if asked) as `write_csv` writes them, to an open file: cells quoted as
    RFC 4180 requires, rows ending in `\n` (results/cells.py)."""
    cells, carriage_return = _as_cells(frame)
    target, row_end = csv_target(file, carriage_return)
    cells.to_csv(target, index=False, header=header, float_format=FLOAT_FORMAT, lineterminator=row_end, na_rep=NAN)
