"""Which folders a command may replace, one writer at a time, and output-path problems as one line.

A command writes only its own folder (OUT/<spec name>/, OUT/compare/, ...) and replaces an existing
one only when orderlab wrote it for the same command and spec: its manifest.json names the writer
(`written_by`) and lists every entry (`files`), so nothing a user put there is ever deleted.
`--force` lets a command replace a folder that another orderlab command or spec wrote; nothing lets
it replace a folder holding anything orderlab did not write. While a command computes and writes,
an exclusive lock beside the folder turns a second writer away at once instead of interleaving them
(filelock's lock on a descriptor: flock on POSIX, LockFileEx on Windows, so orderlab imports everywhere).
The lock file carries LOCK_TOKEN: one without it is a user's file, left alone and reported, never
deleted (as is anything orderlab did not make: see results/paths.py for the writer rule and scratch).
Must not import torch or pandas (cheap to import for every command).
"""

from __future__ import annotations

import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from filelock import lock_descriptor

from orderlab.core.userfiles import FileProblem, open_flags, peek_head
from orderlab.errors import OrderlabError
from orderlab.results.manifest import MANIFEST, read_manifest
from orderlab.results.paths import REPORT_MARK as REPORT_MARK  # report/html.py takes it from here
from orderlab.results.paths import is_report, is_scratch, plain_folder_problem

# The commands that write a folder and record themselves as its `written_by`.
WRITERS = ("run", "compare", "properties", "trace", "plot")
# Folders written before manifests recorded `written_by` and `files`: the entries each command wrote. Only a
# manifest proves that orderlab wrote such a folder, so trace and plot (which wrote none then) have no entry: a
# `figures/` or `NAME_trace/` folder without a manifest is a user's, left alone and reported.
LEGACY_ENTRIES = {
    "run": r"(metrics|summary|attention|sentences)\.csv|manifest\.json",
    "compare": r"compare\.csv|manifest\.json",
    "properties": r"properties\.csv|manifest\.json",
}
# Sub-folders that another command writes into a command's folder: `orderlab plot` draws into a run's figures/.
NESTED = {"run": {"figures": "plot"}}
# Files another command writes into a command's folder: `orderlab run --html` puts report.html into the run's
# folder. Such a file is orderlab's when it opens with REPORT_MARK (report/html.py writes it there).
NESTED_FILES = {"run": "report.html"}
# What orderlab writes into a lock file it creates; any other content is a user's file.
LOCK_TOKEN = b"orderlab lock: a command is writing the folder beside it; safe to delete when none is running\n"


@dataclass(frozen=True)
class Writer:
    """The command (and spec) that writes a folder, recorded in its manifest as `written_by`."""

    command: str  # run (check --update writes exactly what run writes), compare, properties, trace, plot
    spec: str = ""

    def record(self) -> dict[str, str]:
        return {"command": self.command, "spec": self.spec} if self.spec else {"command": self.command}

    def __str__(self) -> str:
        return f"`orderlab {self.command}` of spec {self.spec!r}" if self.spec else f"`orderlab {self.command}`"


@dataclass(frozen=True)
class Recorded:
    """Who wrote an existing folder and which of its entries are theirs."""

    writer: Writer
    owns: Callable[[str], bool]


def orderlab_scratch(path: Path, name: str) -> bool:
    """Whether `path` is scratch or the lock of the folder `name` that orderlab made (it carries orderlab's token)."""
    return is_scratch(path, name) or (path.name == f".{name}.lock" and _carries_lock_token(path))


def recorded(folder: Path) -> Recorded | None:
    """Who wrote `folder`, from its manifest (for older folders, the manifest's shape); None if not orderlab."""
    manifest = _read_manifest(folder / MANIFEST)
    if manifest is None:
        return None
    writer = _recorded_writer(manifest)
    files = manifest.get("files")
    if writer is not None and isinstance(files, list) and all(isinstance(f, str) for f in files):
        return Recorded(writer, {*files, MANIFEST}.__contains__)
    writer = writer or _legacy_writer(manifest)
    if writer is None or writer.command not in LEGACY_ENTRIES:
        return None
    return Recorded(writer, lambda entry: re.fullmatch(LEGACY_ENTRIES[writer.command], entry) is not None)


def _recorded_writer(manifest: dict[str, object]) -> Writer | None:
    record = manifest.get("written_by")
    if not isinstance(record, dict) or record.get("command") not in WRITERS:
        return None
    spec = record.get("spec", "")
    return Writer(record["command"], spec) if isinstance(spec, str) else None


def _legacy_writer(manifest: dict[str, object]) -> Writer | None:
    """The writer of a folder from before `written_by`, from its manifest: a run's names its spec."""
    spec = manifest.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("name"), str):
        return Writer("run", spec["name"])
    if "specs" in manifest:
        return Writer("compare")
    return Writer("properties") if "max_len" in manifest else None


def _read_manifest(path: Path) -> dict[str, object] | None:
    """The manifest as read by results/manifest.py (typed and bounded); None if there is none orderlab could write."""
    try:
        return read_manifest(path.parent).document
    except FileProblem:
        return None


def foreign_entries(folder: Path, found: Recorded) -> list[str]:
    """Entries of `folder` that its writer did not write (sub-folders of another command checked in turn)."""
    nested = NESTED.get(found.writer.command, {})
    foreign = []
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        if entry in nested and path.is_dir() and not path.is_symlink():
            inner = recorded(path)
            mine = inner is not None and inner.writer.command == nested[entry] and not foreign_entries(path, inner)
        elif any(orderlab_scratch(path, name) for name in nested):
            mine = True
        elif entry == NESTED_FILES.get(found.writer.command):
            mine = is_report(path)
        elif path.is_dir() and not path.is_symlink():  # a run's checkpoints/: every file in it recorded
            mine = found.owns(entry) and all(
                found.owns(f"{entry}/{inner.name}") and inner.is_file() and not inner.is_symlink()
                for inner in path.iterdir()
            )
        else:
            mine = found.owns(entry) and path.is_file()
        if not mine:
            foreign.append(entry)
    return foreign


def refusal(folder: Path, writer: Writer, force: bool) -> str | None:
    """Why `writer` may not replace `folder`, as one line; None when it may (or the folder does not exist)."""
    if not os.path.lexists(folder):
        return None
    if folder.is_symlink():
        return (
            f"{folder} is a symbolic link (to {os.readlink(folder)}); orderlab writes only a real folder there; "
            "nothing was written; move it away, or choose another name or --out"
        )
    if not folder.is_dir():
        return f"{folder} exists and is not a folder; orderlab replaces only folders it wrote; nothing was written"
    entries = os.listdir(folder)
    if not entries:
        return None
    found = recorded(folder)
    if found is None:
        return (
            f"{folder} was not written by orderlab (no manifest.json naming its writer; it holds {_some(entries)}); "
            "nothing was written; move it away, or choose another name or --out"
        )
    foreign = foreign_entries(folder, found)
    if foreign:
        return (
            f"{folder} holds {_some(foreign)}, which orderlab did not write; nothing was written; "
            "move that away, or choose another name or --out"
        )
    if found.writer != writer and not force:
        return (
            f"{folder} holds the results of {found.writer}, not of {writer}; nothing was written; "
            f"choose another name or --out, or replace them with `orderlab {writer.command} --force`"
        )
    return None


def _some(entries: list[str]) -> str:
    shown = ", ".join(sorted(entries)[:3])
    return shown + (f" and {len(entries) - 3} more" if len(entries) > 3 else "")


# --- holding a folder while a command computes and writes it --------------------------------------


@dataclass(frozen=True)
class Claim:
    """A folder this thread holds the lock of, with the writer and whether --force was given."""

    folder: Path
    writer: Writer
    force: bool

    def check(self) -> None:
        """Raise OrderlabError unless the folder may be replaced (again just before the swap: a user may
        have put a file into it while the command computed)."""
        reason = refusal(self.folder, self.writer, self.force)
        if reason:
            raise OrderlabError(reason)

    def own_files(self) -> list[Path]:
        """Files in the folder that this same writer wrote before (trace keeps earlier traces), manifest aside."""
        found = recorded(self.folder) if self.folder.is_dir() else None
        if found is None or found.writer != self.writer:
            return []
        return [p for p in sorted(self.folder.iterdir()) if p.name != MANIFEST and p.is_file() and found.owns(p.name)]


_local = threading.local()


def _claims() -> dict[str, Claim]:
    if not hasattr(_local, "claims"):
        _local.claims = {}
    claims: dict[str, Claim] = _local.claims
    return claims


@contextmanager
def claim(folder: Path, writer: Writer, force: bool = False) -> Iterator[Claim]:
    """Lock `folder` and check that `writer` may replace it, before computing; held until the block ends.

    Claiming a folder this thread already holds is a no-op, so a command can claim early (before it
    computes) and the code that writes can claim again without knowing.
    """
    problem = plain_folder_problem(folder.name)
    if problem:  # a bug in orderlab (paths.child builds the folders it writes), still refused as one line
        raise OrderlabError(f"cannot write {folder}: {problem}; nothing was written")
    key = os.path.abspath(folder)
    if key in _claims():
        yield _claims()[key]
        return
    lock = _lock(folder)
    try:
        held = Claim(folder, writer, force)
        held.check()
        _claims()[key] = held
        try:
            yield held
        finally:
            del _claims()[key]
    finally:
        _unlock(folder, lock)


def held(folder: Path) -> Claim:
    """The claim this thread holds on `folder`; writing a folder nobody claimed is a bug in orderlab."""
    found = _claims().get(os.path.abspath(folder))
    if found is None:
        raise RuntimeError(f"{folder}: written without ownership.claim")
    return found


def lock_path(folder: Path) -> Path:
    return folder.with_name(f".{folder.name}.lock")


def _lock(folder: Path) -> int:
    """An exclusive, non-blocking lock on .NAME.lock beside the folder; OrderlabError if another holds it or if
    the file there is not orderlab's lock (a user's file of that name is left as it is)."""
    path = lock_path(folder)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):  # the holder unlinks the file as it finishes: lock the file that is there now
            opened = _open_lock(path)
            if opened is None:
                continue
            descriptor, created = opened
            if not lock_descriptor(descriptor, blocking=False):  # another process holds it
                _drop(path, descriptor, created)
                break
            if not _is_file_at(descriptor, path):
                os.close(descriptor)
                continue
            if created:
                _mark(path, descriptor)
            elif _head(descriptor) != LOCK_TOKEN:
                os.close(descriptor)
                raise _not_a_lock(path)
            return descriptor  # a stale lock of an orderlab that was killed is taken over: it carries the token
    except OSError as error:
        raise path_error(folder, error) from error
    raise OrderlabError(
        f"{folder} is being written by another orderlab command (lock {path}); nothing was written; "
        "run again when it has finished"
    )


def _open_lock(path: Path) -> tuple[int, bool] | None:
    """A descriptor on the lock file, made here (True) or there before (False): a regular file, never followed
    through a link, never waited on; OrderlabError if what is there is not a regular file; None if it vanished
    between two looks (its holder finished)."""
    flags = os.O_RDWR | open_flags("O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC", "O_BINARY")
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o644), True
    except FileExistsError:
        pass
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):  # looked at before opening: a device is never opened
            raise _not_a_lock(path)
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise _not_a_lock(path)
    return descriptor, False


def _head(descriptor: int) -> bytes:
    """The start of the open lock file, enough to tell LOCK_TOKEN from anything else (os.pread is POSIX-only)."""
    os.lseek(descriptor, 0, os.SEEK_SET)
    return os.read(descriptor, len(LOCK_TOKEN) + 1)


def _mark(path: Path, descriptor: int) -> None:
    """Write LOCK_TOKEN into the lock file this process just made; on failure, remove that file again."""
    try:
        os.write(descriptor, LOCK_TOKEN)
    except OSError:
        _drop(path, descriptor, created=True)
        raise


def _not_a_lock(path: Path) -> OrderlabError:
    return OrderlabError(
        f"{path} is not orderlab's lock file (orderlab did not make it); nothing was written; "
        "move it away, or choose another name or --out"
    )


def _carries_lock_token(path: Path) -> bool:
    return peek_head(path, len(LOCK_TOKEN) + 1) == LOCK_TOKEN


def _drop(path: Path, descriptor: int, created: bool) -> None:
    """Let go of a lock file not held: unlinked only if this process made it and it is still the one there."""
    try:
        if created and _is_file_at(descriptor, path):
            path.unlink()
    finally:
        os.close(descriptor)


def _is_file_at(descriptor: int, path: Path) -> bool:
    try:
        on_disk = os.lstat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (on_disk.st_dev, on_disk.st_ino) == (opened.st_dev, opened.st_ino)


def _unlock(folder: Path, descriptor: int) -> None:
    """Unlink the lock (made by this process, or orderlab's by its token) while still holding it, so nobody locks a
    file about to vanish; a file put in its place meanwhile is not ours and stays."""
    path = lock_path(folder)
    try:
        if _is_file_at(descriptor, path):
            path.unlink()
    except PermissionError:
        if os.name != "nt":
            raise
        # Windows removes no open file: the lock stays, carrying the token, and the next command takes it over.
    finally:
        os.close(descriptor)


# --- output-path problems as one line --------------------------------------------------------------


def path_error(folder: Path, error: OSError) -> OrderlabError:
    """An OSError met while writing `folder`, as one line naming the path and the reason (no traceback)."""
    blocking = _file_in_the_way(folder)
    if blocking is not None:
        return OrderlabError(f"cannot write {folder}: {blocking} is a file, not a folder; expected a folder there")
    reason = error.strerror or str(error)
    where = ""
    if error.filename and Path(error.filename) not in (folder, *folder.parents):
        where = f" ({error.filename})"  # a file inside the folder or beside it (its lock), not the folder itself
    return OrderlabError(f"cannot write {folder}: {reason}{where}; nothing was changed")


def _file_in_the_way(folder: Path) -> Path | None:
    """The first part of `folder`'s path that exists but is not a folder, if any."""
    for part in [*reversed(folder.parents), folder]:
        try:
            if part.exists() and not part.is_dir():
                return part
        except OSError:  # e.g. a component too long to stat
            return None
    return None
