"""The one reader of files orderlab did not just write: specs, corpora, manifests, shard partials,
checkpoint metadata, a model folder's config and tokenizer, results CSVs.

Every such file is input from a stranger. It is opened without blocking (a FIFO or device named where a
file belongs is refused at once, never waited on), must be a regular file, and is read only up to the
caller's limit (a file that grows meanwhile is still caught). JSON is parsed strictly (no NaN, no
numbers past Python's digit limit, no nesting past the recursion limit) into a pydantic model whose fields carry
their own bounds, and names read from a file are held to the rule of a spec's `name`. Any problem is
one `FileProblem` line, `file: field: what, expected what`, which the CLI prints with exit 2.
Must not import torch, numpy or pandas: the spec layer reads files through it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError

from orderlab.errors import OrderlabError

NAME_LIMIT = 100  # characters of a spec name; OUT/<name>_trace and staging names must fit in 255
JSON_LIMIT = 2**20  # bytes of a JSON file orderlab reads back (a manifest, checkpoint metadata, a model config)

Model = TypeVar("Model", bound=BaseModel)


class FileProblem(OrderlabError):
    """A file orderlab did not write is not what it should be: `file: field: what, expected what`."""

    def __init__(self, path: Path | str, message: str, field: str = ""):
        self.path, self.field, self.detail = str(path), field, message
        super().__init__(": ".join(part for part in (str(path), field, message) if part))


def folder_name_problem(name: str) -> str | None:
    """Why `name` cannot name a results folder (one plain path component under --out), or None if it can."""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        return "expected letters, digits, '_', '-' and '.' only"
    if name.startswith("."):
        return "expected a name not starting with '.' (so not '.', '..' or a hidden folder)"
    if len(name) > NAME_LIMIT:
        return f"{len(name)} characters; expected at most {NAME_LIMIT}"
    return None


def checkpoint_name_problem(name: str) -> str | None:
    """Why `name` cannot name a file of a run's checkpoints/, or None if it can: the name rule, widened by the
    characters a checkpoint's name takes from its sweep cell and encoding label (`seed=1_rope(base=500)`), none of
    which is a path separator."""
    if not re.fullmatch(r"[A-Za-z0-9_.,=()+-]+", name):
        return "expected letters, digits and '_-.,=()+' only"
    return folder_name_problem(re.sub(r"[,=()+]", "_", name))


def _held_to_name_rule(value: str) -> str:
    problem = folder_name_problem(value)
    if problem:
        raise ValueError(f"got {value[:60]!r}; {problem}")
    return value


# A name read from a file (a spec's name in a manifest, a file a shard lists): the rule of a spec's `name`.
SafeName = Annotated[str, AfterValidator(_held_to_name_rule)]


class FileModel(BaseModel):
    """A file's typed contents: unknown keys kept out of the way (ignored), values typed and bounded."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of `path`, at most `limit` of them.

    Raises FileNotFoundError, IsADirectoryError or another OSError as `open` would, and ValueError
    (a message for the user) for a device, pipe or socket, or a file over `limit` bytes (see _open_regular).
    """
    descriptor, size = _open_regular(path)
    try:
        data = _read_at_most(descriptor, limit + 1) if size <= limit else b""
    finally:
        os.close(descriptor)
    if size > limit or len(data) > limit:
        raise ValueError(f"{max(size, len(data)):,} bytes, over the limit of {describe_bytes(limit)}")
    return data


def read_head(path: Path, count: int, expected: str) -> tuple[bytes, int]:
    """The first `count` bytes of `path` (fewer if it is shorter) and its size in bytes: the header of a file too
    large to read whole (a safetensors file's). Opened as `read_bounded` opens files; one FileProblem line if not."""
    try:
        descriptor, size = _open_regular(path)
        try:
            return _read_at_most(descriptor, count), size
        finally:
            os.close(descriptor)
    except (OSError, ValueError) as error:
        raise _problem(path, error, expected) from None


def open_flags(*names: str) -> int:
    """The os.open flags among `names` this system has: Windows has no O_NOFOLLOW nor O_NONBLOCK, POSIX no O_BINARY
    (where one is missing, the checks on the open descriptor still refuse what is not a regular file)."""
    found = 0
    for name in names:
        found |= getattr(os, name, 0)
    return found


def _open_regular(path: Path, follow_links: bool = True) -> tuple[int, int]:
    """A descriptor of `path`, opened without blocking and checked to be a regular file, and the file's size.

    The check is on the open descriptor, so a FIFO swapped in after a look is still refused rather than waited on.
    """
    flags = os.O_RDONLY | open_flags("O_NONBLOCK", "O_CLOEXEC", "O_BINARY", *([] if follow_links else ["O_NOFOLLOW"]))
    descriptor = os.open(path, flags)
    try:
        status = os.fstat(descriptor)
    except BaseException:
        os.close(descriptor)
        raise
    if not stat.S_ISREG(status.st_mode):
        os.close(descriptor)
        if stat.S_ISDIR(status.st_mode):
            raise IsADirectoryError(path)
        raise ValueError("not a regular file (a device, pipe or socket)")
    return descriptor, status.st_size


def _sha256_bounded(path: Path, limit: int) -> str:
    """The sha256 of a regular file of at most `limit` bytes, read in chunks; errors as `read_bounded`'s."""
    digest, count = hashlib.sha256(), 0
    descriptor, size = _open_regular(path)
    try:
        while size <= limit and count <= limit and (chunk := os.read(descriptor, 2**20)):
            digest.update(chunk)
            count += len(chunk)
    finally:
        os.close(descriptor)
    if size > limit or count > limit:
        raise ValueError(f"{max(size, count):,} bytes, over the limit of {describe_bytes(limit)}")
    return digest.hexdigest()


def _read_at_most(descriptor: int, count: int) -> bytes:
    chunks, left = [], count
    while left > 0:
        chunk = os.read(descriptor, min(left, 2**20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_file(path: Path, limit: int, expected: str) -> bytes:
    """`read_bounded` with every failure as one FileProblem line ending in what was `expected` there."""
    try:
        return read_bounded(path, limit)
    except (OSError, ValueError) as error:
        raise _problem(path, error, expected) from None


def _problem(path: Path, error: OSError | ValueError, expected: str) -> FileProblem:
    """An error of opening or reading `path` as one line."""
    if isinstance(error, FileNotFoundError):
        return FileProblem(path, f"no such file; expected {expected}")
    if isinstance(error, IsADirectoryError):
        return FileProblem(path, f"a folder; expected {expected}")
    reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
    return FileProblem(path, f"{reason}; expected {expected}")


def file_sha256(path: Path, limit: int, expected: str) -> str:
    """The sha256 of a file of at most `limit` bytes, streamed (not held in memory); failures as `read_file`'s."""
    try:
        return _sha256_bounded(path, limit)
    except (OSError, ValueError) as error:
        raise _problem(path, error, expected) from None


def read_text(path: Path, limit: int, expected: str) -> str:
    """A bounded UTF-8 text file, or one FileProblem line."""
    try:
        return read_file(path, limit, expected).decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileProblem(path, f"not UTF-8 text (byte {error.start}); expected {expected}") from None


def parse_json(path: Path | str, text: str, expected: str, non_finite: bool = False) -> Any:
    """Strict JSON: no integer past Python's digit limit, no nesting past the recursion limit, and no NaN or
    Infinity unless `non_finite` (a shard's partials.json, where Python's json wrote measured NaN as NaN)."""

    def refuse_constant(name: str) -> Any:
        raise ValueError(f"{name} is not a number JSON allows")

    try:
        return json.loads(text, parse_constant=float if non_finite else refuse_constant)
    except ValueError as error:  # json.JSONDecodeError, a NaN, or an integer past the digit limit
        raise FileProblem(path, f"not valid JSON ({str(error)[:120]}); expected {expected}") from None
    except RecursionError:
        raise FileProblem(path, f"JSON nested too deep to read; expected {expected}") from None


def json_object_lines(path: Path, text: str, expected: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each non-blank line of a JSONL file's text as a JSON object, with its 1-based number, read as it is asked for
    (a caller bounds how many it takes); the first line that is not one is one FileProblem line, `file:line: ...`,
    held to parse_json's strict rules."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        record = parse_json(where, line, expected)
        if not isinstance(record, dict):
            raise FileProblem(where, f"a JSON {type(record).__name__}; expected {expected}")
        yield number, record


def read_json(
    path: Path, model: type[Model], expected: str, limit: int = JSON_LIMIT, non_finite: bool = False
) -> Model:
    """A JSON file as `model`, every field typed and bounded; one FileProblem line naming the field if not."""
    data = parse_json(path, read_text(path, limit, expected), expected, non_finite)
    return validate_as(path, model, data, expected)


def validate_as(path: Path, model: type[Model], data: Any, expected: str) -> Model:
    """`data` read from `path` as `model`; one FileProblem line naming the field at fault if it is not."""
    if not isinstance(data, dict):
        raise FileProblem(path, f"a JSON {type(data).__name__}; expected {expected} (a JSON object)")
    try:
        return model.model_validate(data)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(map(printable, first["loc"]))
        message = first["msg"].removeprefix("Value error, ").replace("Input should be", "expected")
        given = first.get("input")
        if first["type"] == "missing":
            message = "missing; expected it in " + expected
        elif isinstance(given, str | int | float | bool) and "got " not in message:
            shown = repr(given[:60] if isinstance(given, str) else given)
            message = f"got {shown[:80]}; {message}"
        raise FileProblem(path, message, field) from None


def printable(part: object) -> str:
    """A field path's part as one line shows it: a key a hostile file named with a control character (a carriage
    return ends the line a terminal shows) escaped, as ascii() writes it."""
    text = str(part)
    return text if text.isprintable() else ascii(text)


def describe_bytes(count: int) -> str:
    """1048576 -> '1 MiB'; limits are powers of two, so they read best in binary units."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size and count % size == 0:
            return f"{count // size:,} {unit}"
    return f"{count:,} bytes"


def peek_head(path: Path, count: int) -> bytes:
    """The first `count` bytes of `path` if it is a regular file (not a symbolic link); b"" for anything else.

    For telling orderlab's own files (a report's mark, a scratch folder's token) from a user's: opened
    without blocking and without following a link, so a device, FIFO or link planted there is never read.
    """
    try:
        descriptor, _ = _open_regular(path, follow_links=False)
    except (OSError, ValueError):
        return b""
    try:
        return _read_at_most(descriptor, count)
    except OSError:
        return b""
    finally:
        os.close(descriptor)
