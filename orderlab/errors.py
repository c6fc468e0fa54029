"""Errors a user can fix. The CLI prints them as one line and exits with code 2; never a traceback."""

from __future__ import annotations


class OrderlabError(Exception):
    """A problem with the user's input (spec, arguments, files), reported as one line."""

    exit_code = 2


class SpecError(OrderlabError):
    """A spec problem located at `file:line: field.path`."""

    def __init__(self, message: str, *, file: str = "", line: int | None = None, field: str = ""):
        self.file, self.line, self.field, self.detail = file, line, field, message
        where = file + (f":{line}" if line else "")
        parts = [p for p in (where, field, message) if p]
        super().__init__(": ".join(parts))
