"""Reading a file the user names (a spec, a corpus) with a bound on its size, before reading it.

`orderlab validate /dev/zero` or a spec path pointing at a 10 GB log must get one line at once, not
a process that reads until memory runs out: the file is checked to be a regular file and its size
is checked against the caller's limit before any byte is read, and at most limit + 1 bytes are read
(a file that grows meanwhile is still caught). Callers turn the ValueError into their own one-line
error. Must not import torch.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of `path`, at most `limit` of them.

    Raises FileNotFoundError, IsADirectoryError or another OSError as `open` would, and ValueError
    (a message for the user) for a device, pipe or socket, or a file over `limit` bytes.
    """
    mode = os.stat(path).st_mode  # opening a pipe would wait for a writer: look before opening
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(path)
    if not stat.S_ISREG(mode):
        raise ValueError("not a regular file (a device, pipe or socket)")
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        data = handle.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise ValueError(f"{max(size, len(data)):,} bytes, over the limit of {describe_bytes(limit)}")
    return data


def describe_bytes(count: int) -> str:
    """1048576 -> '1 MiB'; limits are powers of two, so they read best in binary units."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if count >= size and count % size == 0:
            return f"{count // size:,} {unit}"
    return f"{count:,} bytes"
