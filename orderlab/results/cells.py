"""How a text cell is written into orderlab's CSVs, so that every character a user can type reads back.

- Quoting: a cell holding the separator, a quote, a line feed or a carriage return is quoted (RFC 4180).
  Python's csv writer quotes only the characters of its line terminator, so with orderlab's `\\n` rows a
  sentence ending in a carriage return (a line of a Windows file) went out bare and read back as two rows.
  For a table holding one, `RowEnds` lets the writer end rows with `\\r\\n` (so it quotes both) and writes each
  row's end as `\\n`: the same bytes a writer quoting by RFC 4180 writes (the other tables are written as before,
  saving a Python call per row).
- Formulas: a text cell that a spreadsheet would run as a formula (one starting with `=`, `+`, `-`, `@`, a tab or
  a carriage return, after any apostrophes) gets one apostrophe in front, unless the whole cell reads as a number
  (`-1`, `+2.5e-03`, `-inf`: kept as numbers, so numeric cells and the committed baselines stay as they were).
  `restore` removes that apostrophe again, so orderlab's readers return the cell as it was given: an apostrophe
  the user wrote is kept (`'=x` is written `''=x`).
Must not import torch.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import TextIO, cast

import pandas as pd

FORMULA_START = re.compile(r"'*[=+\-@\t\r]")
NEUTRALISED = re.compile(r"'+[=+\-@\t\r]")


def _formula(cell: object) -> bool:
    """Whether a spreadsheet could take `cell` as a formula: text starting as one that is not a plain number."""
    if not isinstance(cell, str) or not FORMULA_START.match(cell):
        return False
    try:
        float(cell)
    except ValueError:
        return True
    return False


@dataclass(frozen=True)
class TextCells:
    """A column's text as written, and whether a cell of it holds a carriage return (see `csv_target`)."""

    column: pd.Series
    carriage_return: bool


def text_cells(column: pd.Series) -> TextCells:
    """A text column with every cell a spreadsheet could run as a formula prefixed by an apostrophe. Looks at the
    distinct cells only: a column of metrics.csv repeats a few."""
    distinct = [cell for cell in pd.unique(column) if isinstance(cell, str)]
    risky = [cell for cell in distinct if _formula(cell)]
    written = column.replace({cell: "'" + cell for cell in risky}) if risky else column
    return TextCells(written, any("\r" in cell for cell in distinct))


def restore_cell(cell: str) -> str:
    """A cell as the user gave it: the apostrophe that `text_cells` put in front removed."""
    return cell[1:] if NEUTRALISED.match(cell) else cell


def restore(frame: pd.DataFrame) -> pd.DataFrame:
    """A frame read from an orderlab CSV with every neutralised text cell as the user gave it."""
    restored = {}
    for name, column in frame.items():
        if pd.api.types.is_string_dtype(column.dtype):
            marked = [cell for cell in pd.unique(column) if isinstance(cell, str) and NEUTRALISED.match(cell)]
            if marked:
                restored[str(name)] = column.replace({cell: cell[1:] for cell in marked})
    return frame.assign(**restored) if restored else frame


ROW_END = "\r\n"  # what the csv writer is told, so that it quotes a cell holding either character


def csv_target(file: TextIO, carriage_return: bool) -> tuple[TextIO, str]:
    """Where pandas writes a table and the row end to tell it: `file` and `\\n`, unless a cell or a column name holds
    a carriage return, which Python's csv writer leaves bare with that row end; then RowEnds."""
    return (cast(TextIO, RowEnds(file)), ROW_END) if carriage_return else (file, "\n")


class RowEnds(io.TextIOBase):
    """A text file for pandas' csv writer: each row comes in one write, ending in ROW_END, and goes out ending in
    `\\n` (a line break inside a quoted cell is kept as it is)."""

    def __init__(self, file: TextIO):
        super().__init__()
        self.file = file

    def writable(self) -> bool:
        return True

    def write(self, row: str) -> int:
        return self.file.write(row[: -len(ROW_END)] + "\n" if row.endswith(ROW_END) else row)
