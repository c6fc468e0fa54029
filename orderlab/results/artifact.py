"""One report file a command writes at a path the user names (--junit, --html, report --out), whole or not at all.

Written to a temporary file beside the destination and renamed over it, like results folders, so
an interrupted write leaves the previous file as it was and nothing half-written. A destination
that cannot take the file, or that the writer rule forbids (results/paths.py: a device, FIFO,
socket, folder or link, or a file the same command reads), is refused (one line naming the option)
before any work starts, and its type is checked again just before the rename. Touches nothing but
the destination and its staging file, which this process makes and removes. Must not import torch or pandas.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from orderlab.errors import OrderlabError
from orderlab.results.paths import NAME_MAX, file_target_problem

STAGING_PREFIX = ".orderlab-report."  # short, so the staging name fits wherever the report's name does


def check_destination(path: Path, option: str, example: str, inputs: Sequence[Path] = ()) -> None:
    """Refuse a path that cannot take the file (a folder, a file in the way, no permission, too long) or that
    the writer rule forbids (a device, FIFO, socket or link; one of `inputs`, what the command reads).

    Nothing at `path` is opened. Creates the file's folder, as writing would; leaves no file behind.
    `option` ('--junit') names the path in messages; `example` ('check.xml') is the file name suggested
    when it names a folder.
    """
    size = len(os.fsencode(path.name))
    if size > NAME_MAX:
        raise OrderlabError(f"{option} {path}: file name too long ({size} bytes; at most {NAME_MAX})")
    if os.path.isdir(path) and not os.path.islink(path):
        raise OrderlabError(f"{option} {path}: is a folder; expected a file path such as {path / example}")
    refuse_target(path, option, inputs)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=".tmp", dir=path.parent)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise _cannot_write(path, option, error) from None


def refuse_target(path: Path, option: str, inputs: Sequence[Path] = ()) -> None:
    """OrderlabError (one line) when the writer rule forbids replacing `path`; looks, opens nothing."""
    problem = file_target_problem(path, inputs)
    if problem:
        raise OrderlabError(f"{option} {path}: {problem}; nothing was written")


def write_file(path: Path, data: bytes, option: str, inputs: Sequence[Path] = ()) -> None:
    """Write `data` to `path` whole or not at all; OrderlabError (one line) if it cannot be written."""
    refuse_target(path, option, inputs)
    staging = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, staging = tempfile.mkstemp(prefix=STAGING_PREFIX, suffix=".tmp", dir=path.parent)
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.chmod(staging, 0o644)
        refuse_target(path, option, inputs)  # again: what is there now is what the rename replaces
        os.replace(staging, path)
    except BaseException as error:
        if staging is not None:
            Path(staging).unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise _cannot_write(path, option, error) from None
        raise


def _cannot_write(path: Path, option: str, error: OSError) -> OrderlabError:
    if isinstance(error, FileExistsError):  # mkdir met a file where a folder should be
        return OrderlabError(f"{option} {path}: cannot write there: {error.filename} is a file, not a folder")
    where = f" ({error.filename})" if error.filename else ""
    return OrderlabError(f"{option} {path}: cannot write there: {error.strerror or error}{where}")
