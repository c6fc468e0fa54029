"""stdout and stderr set up before any command runs. Cheap to import: no rich, no pandas, no torch."""

from __future__ import annotations

import io
import sys


def safe_output_streams() -> None:
    """Let stdout and stderr write any text: what their encoding cannot hold is escaped (\\u2248) rather than raised
    as UnicodeEncodeError after the results are written (orderlab's tables take Console's ASCII instead)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")
