"""Reading labelled examples: a JSONL or CSV file (the standard library), a Parquet file (pyarrow, where installed)
or a Hugging Face datasets cache (the `datasets` library, where installed), into Examples whose problems name
file:line. Not pandas: validate and the estimate read these files too, and their layers stay pandas-free.

Every file is a stranger's: bounded, a regular file, its kind from its extension and checked against its first bytes
(a JSONL file read as CSV, or a Parquet file's bytes read as text, would make `{"premise":` a word). Torch-free;
pyarrow and datasets are imported when a file of theirs is read.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orderlab.core import bounds
from orderlab.core.text import tokenize
from orderlab.core.userfiles import FileProblem, json_object_lines, read_file
from orderlab.errors import OrderlabError

MAX_DATASET_BYTES = 256 * 2**20  # ~1 million NLI pairs; a larger file is refused unread
PARQUET_MAGIC = b"PAR1"
KINDS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet"}
EXPECTED = "a JSONL, CSV or Parquet file of labelled examples"


@dataclass(frozen=True)
class Example:
    """One labelled example: where it came from (line or row), its words, its gold label and group as written."""

    where: str  # file:line (JSONL, CSV), file:row N (Parquet), or examples[i]
    text: list[str]
    pair: list[str] | None
    label: str | int | None
    group: str | None


@dataclass(frozen=True)
class Columns:
    """Which column holds what: the sentence, the pair's second sentence, the gold label, the group."""

    text: str
    pair: str | None
    label: str | None
    group: str | None


def read_examples(path: Path, columns: Columns) -> list[Example]:
    """The examples of a file; FileProblem or OrderlabError (one line, file:line where a line is at fault)."""
    kind = KINDS.get(path.suffix.lower())
    if kind is None:
        raise FileProblem(path, f"extension {path.suffix or '(none)'!r}; expected {EXPECTED} (.jsonl, .csv, .parquet)")
    data = read_file(path, MAX_DATASET_BYTES, EXPECTED)
    records = {"jsonl": _jsonl_records, "csv": _csv_records, "parquet": _parquet_records}[kind](path, data)
    if not records:
        raise FileProblem(path, f"no examples; expected {EXPECTED}")
    if len(records) > bounds.MAX_EXAMPLES:
        raise FileProblem(path, f"{len(records):,} examples; expected at most {bounds.MAX_EXAMPLES:,}")
    return [example(where, record, columns, path) for where, record in records]


def read_hf_dataset(name: str, split: str, columns: Columns) -> list[Example]:
    """A split of a dataset in the local Hugging Face datasets cache, offline; one line if `datasets` is missing."""
    datasets = offline_datasets(name)
    try:
        rows = datasets.load_dataset(name, split=split)
    except Exception as error:  # the library's many errors (not cached, no such split): one line
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise OrderlabError(f"hf_dataset {name!r} split {split!r}: {first}; expected a dataset in the local "
                            "Hugging Face datasets cache") from None  # fmt: skip
    if len(rows) > bounds.MAX_EXAMPLES:
        raise OrderlabError(f"hf_dataset {name!r}: {len(rows):,} examples; expected at most {bounds.MAX_EXAMPLES:,}")
    where = f"{name}[{split}]"
    return [example(f"{where} row {index}", dict(row), columns, Path(name)) for index, row in enumerate(rows)]


def offline_datasets(name: str) -> Any:
    """The `datasets` library, never reaching the Hub: its offline switches are read when it is imported, so they are
    set before that, and set on its config too where a caller imported it first (else an uncached name sends requests
    and retries for half a minute before it fails). One line if the library is missing."""
    import os

    os.environ["HF_HUB_OFFLINE"] = os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        import datasets  # type: ignore[import-not-found,import-untyped,unused-ignore]  # lazy: extra orderlab[data]
    except ImportError:
        raise OrderlabError(
            f"hf_dataset {name!r}: the `datasets` library is not installed; expected `pip install "
            "'orderlab[data]'`, or the examples as JSONL, CSV or Parquet (dataset: FILE)"
        ) from None
    datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True
    return datasets


def example(where: str, record: dict[str, Any], columns: Columns, path: Path) -> Example:
    """One record as an Example; OrderlabError naming `where` and the column at fault."""

    def cell(column: str | None, kinds: tuple[type, ...], what: str) -> Any:
        if column is None:
            return None
        if column not in record:
            raise OrderlabError(f"{where}: no column {column!r}; expected {what} in it (columns: "
                                f"{', '.join(map(str, record)) or 'none'})")  # fmt: skip
        value = record[column]
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise OrderlabError(f"{where}: {column}: got {type(value).__name__} {str(value)[:40]!r}; expected {what}")
        return value

    text = tokenize(cell(columns.text, (str,), "a sentence"))
    if not text:
        raise OrderlabError(f"{where}: {columns.text}: empty; expected a sentence of at least one word")
    pair = None
    if columns.pair is not None:
        pair = tokenize(cell(columns.pair, (str,), "a second sentence"))
        if not pair:
            raise OrderlabError(f"{where}: {columns.pair}: empty; expected a sentence of at least one word")
    label = cell(columns.label, (str, int), "a label name or id")
    group = cell(columns.group, (str, int), "a group name")
    return Example(where, text, pair, label, None if group is None else str(group))


def label_id(example: Example, id2label: list[str]) -> int | None:
    """The example's gold label as the model's id (a name through id2label, an id as it is); None without one;
    OrderlabError (one line) for a label the model does not have."""
    label = example.label
    if label is None:
        return None
    if isinstance(label, int) and 0 <= label < len(id2label):
        return label
    if isinstance(label, str) and label in id2label:
        return id2label.index(label)
    raise OrderlabError(f"{example.where}: label {label!r}; the model's labels are {', '.join(id2label)} (ids "
                        f"0-{len(id2label) - 1}); expected one of them")  # fmt: skip


def _jsonl_records(path: Path, data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """One JSON object a line (blank lines skipped); a line that is not one is file:line."""
    if data.startswith(PARQUET_MAGIC):
        raise FileProblem(path, f"Parquet bytes in a .jsonl file; expected {EXPECTED} whose extension says its kind")
    lines = json_object_lines(path, _utf8(path, data), "one JSON object a line, one example each")
    return [(f"{path}:{number}", record) for number, record in lines]


def _csv_records(path: Path, data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """A header row, then one example a line (every cell a string); a malformed line (a bad quote, another number of
    cells than the header's) is file:line."""
    if data.startswith(PARQUET_MAGIC) or data.lstrip()[:1] in (b"{", b"["):
        kind = "Parquet" if data.startswith(PARQUET_MAGIC) else "JSON"
        raise FileProblem(path, f"{kind} contents in a .csv file; expected {EXPECTED} whose extension says its kind")
    reader = csv.reader(io.StringIO(_utf8(path, data), newline=""), strict=True)
    records: list[tuple[str, dict[str, Any]]] = []
    try:
        header = next(reader, None)
        if header is None:
            return records
        for cells in reader:
            if not any(cell.strip() for cell in cells):
                continue
            if len(cells) != len(header):
                raise OrderlabError(f"{path}:{reader.line_num}: {len(cells)} cells; expected {len(header)}, as the "
                                    "header row has")  # fmt: skip
            records.append((f"{path}:{reader.line_num}", _labels_as_ids(dict(zip(header, cells, strict=True)))))
    except csv.Error as error:
        raise OrderlabError(f"{path}:{reader.line_num}: not CSV ({error}); expected a header row, then one example "
                            "a line") from None  # fmt: skip
    return records


def _labels_as_ids(record: dict[str, str]) -> dict[str, Any]:
    """A CSV cell is text: an integer's digits read as the integer (a label id), every other cell as written."""
    return {key: int(value) if value.isdigit() and len(value) < 10 else value for key, value in record.items()}


def _parquet_records(path: Path, data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """A Parquet table (pyarrow, where installed): its magic bytes checked first, so text is never read as Parquet."""
    if not (data.startswith(PARQUET_MAGIC) and data.endswith(PARQUET_MAGIC)):
        raise FileProblem(path, f"not Parquet (no PAR1 magic bytes); expected {EXPECTED} whose extension says its kind")
    try:
        from pyarrow import parquet  # type: ignore[import-not-found,import-untyped,unused-ignore]  # lazy: optional
    except ImportError:
        raise OrderlabError(f"{path}: reading Parquet needs pyarrow, which is not installed; expected `pip install "
                            "'orderlab[data]'`, or the examples as JSONL or CSV") from None  # fmt: skip
    try:
        records = parquet.read_table(io.BytesIO(data)).to_pylist()
    except (OSError, ValueError) as error:  # pyarrow's ArrowInvalid is a ValueError
        raise FileProblem(path, f"cannot read it as Parquet ({str(error)[:120]}); expected {EXPECTED}") from None
    return [(f"{path}: row {index + 1}", {str(k): v for k, v in r.items()}) for index, r in enumerate(records)]


def _utf8(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileProblem(path, f"not UTF-8 text (byte {error.start}); expected {EXPECTED}") from None
