"""Results CSVs read back: the one reader of a CSV that report, plot or check did not just write.

A folder handed to those commands may hold anything under a CSV's name, so a CSV is read through
spec/userfiles (a regular file, bounded) and then held to the columns its reader uses and their kinds:
numbers, whole numbers within bounds (before they size a grid or a figure), or any text. A file that
is not such a table is one FileProblem line naming the file, the column and the line (exit 2), never a
KeyError or an allocation deep inside a figure. Reads only; writing is results/folder.py's.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from orderlab.core.userfiles import FileProblem, read_head, read_text
from orderlab.results.cells import restore

CSV_LIMIT = 2**30  # bytes of a results CSV read whole (report, plot, check); metrics.csv of real runs: megabytes
HEADER_LIMIT = 2**16  # bytes read to learn a CSV's columns
INDEX_LIMIT = 100_000  # layers, heads, reorderings: far past any model, and they size figures


@dataclass(frozen=True)
class Kind:
    """What a column must hold: any text, numbers (nan and inf included), or whole numbers in [low, high]."""

    name: str  # text | number | integer
    low: int = 0
    high: int = INDEX_LIMIT
    blank: bool = False  # integers: an empty cell allowed (a metric without heads)


TEXT, NUMBER, INDEX = Kind("text"), Kind("number"), Kind("integer")


def integer(high: int, blank: bool = False) -> Kind:
    """Whole numbers 0..high."""
    return Kind("integer", 0, high, blank)


def csv_header(path: Path, expected: str) -> list[str] | None:
    """A CSV's column names from its first line; None if there is no such file, one line if it is not a file."""
    if not path.exists() and not path.is_symlink():
        return None
    first = read_head(path, HEADER_LIMIT, expected)[0].split(b"\n", 1)[0]
    return first.decode("utf-8", errors="replace").rstrip("\r").split(",")


def read_table(path: Path, expected: str) -> pd.DataFrame:
    """A bounded CSV file as a frame (types as pandas infers them; an empty cell is NA, 'nan' a number; text cells
    as the user gave them)."""
    text = read_text(path, CSV_LIMIT, expected)
    try:
        frame = pd.read_csv(io.StringIO(text, newline=""), keep_default_na=False, na_values=[""])
    except (ValueError, pd.errors.ParserError) as error:  # EmptyDataError is a ValueError
        raise FileProblem(path, f"not a CSV table ({str(error).strip()[:120]}); expected {expected}") from None
    return restore(frame)  # text cells as the user gave them (results/cells.py)


def require(frame: pd.DataFrame, path: Path, columns: Mapping[str, Kind], expected: str) -> pd.DataFrame:
    """`frame` with each named column present and of its kind (numbers as floats, integers as int64 or Int64)."""
    missing = [name for name in columns if name not in frame.columns]
    if missing:
        found = ",".join(map(str, frame.columns))[:120]
        raise FileProblem(path, f"no such column (found {found}); expected {expected}", missing[0])
    return frame.assign(**{name: _typed(frame[name], path, name, kind, expected) for name, kind in columns.items()})


def _typed(values: pd.Series, path: Path, name: str, kind: Kind, expected: str) -> pd.Series:
    if kind.name == "text":
        return values
    numbers = pd.to_numeric(values.where(values.notna(), None), errors="coerce")
    if kind.name == "number":
        written_nan = values.astype(str).str.lower().isin(["nan", "-nan", "+nan"])  # a value not measured
        _refuse(values, numbers.isna() & values.notna() & ~written_nan, path, name, "not a number", expected)
        return numbers.astype("float64")
    blank = values.isna()
    if not kind.blank:
        _refuse(values, blank, path, name, "empty", expected)
    whole = numbers.notna() & (numbers % 1 == 0) & (numbers >= kind.low) & (numbers <= kind.high)
    _refuse(values, ~whole & ~blank, path, name, f"not a whole number in {kind.low}..{kind.high:,}", expected)
    return numbers.astype("Int64" if kind.blank else "int64")


def _refuse(values: pd.Series, wrong: pd.Series, path: Path, name: str, what: str, expected: str) -> None:
    if wrong.any():
        at = int(wrong.to_numpy().argmax())
        line = at + 2  # after the header; orderlab's CSVs have no line breaks inside cells
        raise FileProblem(path, f"line {line}: {str(values.iloc[at])[:40]!r} is {what}; expected {expected}", name)
