"""The writer rule: where orderlab may write and what it may replace, checked in one place.

- A folder orderlab writes is one plain name under its root (`child`, `plain_folder_problem`): never
  '..', '.', hidden, absolute or with a separator, even when the name came from a file. That the folder,
  if it exists, is a real folder orderlab wrote (not a symbolic link) is ownership.refusal's part.
- A file orderlab writes at a path the user names (--junit, --html, report --out) replaces only a
  regular file, never a device, FIFO, socket, folder or symbolic link, and never a file that the same
  command reads (`file_target_problem`). The type is looked up with lstat, so a refused path is never
  opened: `--junit /dev/null` leaves the system's /dev/null alone even as root.
- Scratch beside a folder being written (`make_scratch`: .NAME.<random>.tmp/) carries SCRATCH_TOKEN, so a
  user's file or folder of the same shape is never taken for orderlab's. orderlab removes only scratch
  it made in this process, or scratch that carries the token (`is_scratch`).
Must not import torch or pandas. Reads only the first bytes of what may be orderlab's own (userfiles.peek_head).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from orderlab.core.userfiles import peek_head
from orderlab.errors import OrderlabError

NAME_MAX = 255  # bytes in one file name on Linux and macOS file systems
SCRATCH_ROOM = 16  # bytes a scratch name adds to a folder's name: '.', '.', 8 random characters, '.tmp', spare
PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")

# A scratch folder holds the token file, the new folder being written and, during the swap, the old one.
SCRATCH_TOKEN = "orderlab scratch: a folder being written; safe to delete when no orderlab command is running\n"
TOKEN_FILE = "orderlab-scratch"
NEW, OLD = "new", "old"

# An HTML report carries this near its start (report/html.py writes it), so orderlab can tell its own reports.
REPORT_MARK = '<meta name="generator" content="orderlab report">'

KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFDIR: "a folder",
}


# --- folders ----------------------------------------------------------------------------------------


def plain_folder_problem(name: str) -> str | None:
    """Why `name` cannot be a folder orderlab writes (one plain path component), or None if it can."""
    if not PLAIN.fullmatch(name):
        return (
            "expected one plain name (letters, digits, '_', '-' and '.', not starting with '.'), not a path, "
            "'..' or a hidden name"
        )
    size = len(os.fsencode(name))
    if size > NAME_MAX - SCRATCH_ROOM:
        return f"{size} bytes; expected at most {NAME_MAX - SCRATCH_ROOM}"
    return None


def child(root: Path, name: str) -> Path:
    """root/name, refused (one line) unless `name` is one plain folder name, so that it stays inside `root`."""
    problem = plain_folder_problem(name)
    if problem:
        raise OrderlabError(f"cannot write a folder named {name[:80]!r} under {root}: {problem}; nothing was written")
    return root / name


# --- files named by the user ------------------------------------------------------------------------


def file_target_problem(path: Path, inputs: Sequence[Path] = ()) -> str | None:
    """Why orderlab may not replace `path` with a file it writes, as a phrase; None when it may.

    `inputs` are what the same command reads: files (a spec), or folders, where every file already
    in them counts (a results folder's CSVs and manifest) but an HTML report orderlab wrote there.
    Looks with lstat only: a device, FIFO or socket is refused without being opened.
    """
    try:
        found = os.lstat(path)
    except OSError:
        return None  # nothing there (or a path the write itself will report on: a file in the way, too long)
    kind = stat.S_IFMT(found.st_mode)
    if kind != stat.S_IFREG:
        return f"is {KINDS.get(kind, 'not a regular file')}; orderlab replaces only a regular file"
    for given in inputs:
        read = _input_holding(path, found, given)
        if read:
            return f"is {read}; expected another file"
    return None


def _input_holding(path: Path, found: os.stat_result, given: Path) -> str | None:
    """How to name the input `given` when the existing file `path` (lstat `found`) is it or lies in it."""
    try:
        info = os.stat(given)
    except OSError:
        return None
    if stat.S_ISREG(info.st_mode):
        return f"a file this command reads ({given})" if os.path.samestat(found, info) else None
    inside = Path(os.path.realpath(path)).is_relative_to(os.path.realpath(given))
    held = stat.S_ISDIR(info.st_mode) and inside and not is_report(path)
    return f"a file in {given}, which this command reads" if held else None


def is_report(path: Path) -> bool:
    """Whether `path` is an HTML report orderlab wrote: a regular file whose first bytes carry REPORT_MARK."""
    return REPORT_MARK.encode() in peek_head(path, 512)


def same_file(first: Path, second: Path) -> bool:
    """Whether two output paths name one file (as written, or through links)."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samestat(os.lstat(first), os.lstat(second))
    except OSError:
        return False


# --- scratch ----------------------------------------------------------------------------------------


def make_scratch(destination: Path) -> Path:
    """A new scratch folder beside `destination`: .NAME.<random>.tmp/ holding SCRATCH_TOKEN (private until used)."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", suffix=".tmp", dir=destination.parent))
    try:
        (scratch / TOKEN_FILE).write_text(SCRATCH_TOKEN, encoding="utf-8")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)  # made just now, by this process
        raise
    return scratch


def is_scratch(path: Path, name: str) -> bool:
    """Whether `path` is scratch orderlab made (in any process) for the folder `name`: .NAME.<x>.tmp/ with the token."""
    if not re.fullmatch(rf"\.{re.escape(name)}\.[^/]+\.tmp", path.name) or path.is_symlink() or not path.is_dir():
        return False
    return peek_head(path / TOKEN_FILE, len(SCRATCH_TOKEN) + 1) == SCRATCH_TOKEN.encode()
