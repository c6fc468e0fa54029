"""partials.json: what a shard knows beyond its metrics.csv rows, as plain JSON, for `orderlab merge` to finish.

Per unit, in order: how many of metrics.csv's rows it wrote, and either its max rows (a whole unit: probes,
position probe) or its partial summary (a range of a sentence's permutations: running max with its first
permutation, exact sum state, count, and the round-off measured for it). Also the shard's attention maps
and what the console table needs. JSON, not pickle: a merge reads folders it is handed and must run no code
from them. Frames keep their dtypes (written alongside), so the merge writes the bytes a whole run writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from orderlab.dist.shards import Unit
from orderlab.errors import OrderlabError
from orderlab.measure.loop import Digest, Partial, Piece, SummaryCollector
from orderlab.measure.noise import NoiseKey
from orderlab.spec.sweep import SweptValue

FILE = "partials.json"
FORMAT = 1  # bumped when the layout changes, so an old shard is refused rather than misread


@dataclass(frozen=True)
class RunFacts:
    """What a merged run's files and console table need besides the rows: the same in every shard of a run."""

    title: str
    dtype: str
    conditions: list[str]  # summary.csv's column order
    swept: list[str]  # swept fields, in column order
    per_permutation: bool


@dataclass(frozen=True)
class ShardPartials:
    facts: RunFacts
    pieces: list[Piece]
    attention: list[pd.DataFrame]
    non_finite: int  # non-finite rows among those written whole (per-permutation rows, probes)


def write_partials(folder: Path, facts: RunFacts, digest: Digest) -> None:
    document = {
        "format": FORMAT,
        "facts": facts.__dict__,
        "pieces": [_piece_data(piece) for piece in digest.pieces],
        "attention": [frame_data(frame) for frame in digest.attention],
        "non_finite": digest.non_finite,
    }
    (folder / FILE).write_text(json.dumps(document) + "\n")


def read_partials(folder: Path) -> ShardPartials:
    """A shard's partials.json; one line naming the file when it is missing or not one orderlab wrote."""
    path = folder / FILE
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        if document.get("format") != FORMAT:
            raise ValueError(f"format {document.get('format')!r}")
        return ShardPartials(
            RunFacts(**document["facts"]),
            [_piece(item) for item in document["pieces"]],
            [data_frame(item) for item in document["attention"]],
            int(document["non_finite"]),
        )
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise OrderlabError(
            f"{path}: not a shard's partial summaries ({error}); expected a folder of `run --shard`"
        ) from None


def _piece_data(piece: Piece) -> dict[str, Any]:
    partial = piece.partial
    return {
        "unit": piece.unit.record(),
        "combination": list(piece.combination.items()),  # a list: the order of the columns matters
        "rows": piece.rows,
        "worst": None if piece.worst is None else frame_data(piece.worst),
        "partial": None if partial is None else {
            "summary": partial.summary.state(),
            "noise": [[layer, head, metric, value] for (layer, head, metric), value in partial.noise.items()],
        },
    }  # fmt: skip


def _piece(data: dict[str, Any]) -> Piece:
    combination: dict[str, SweptValue] = {name: value for name, value in data["combination"]}
    partial = None
    if data["partial"] is not None:
        noise: dict[NoiseKey, float] = {(l, h, m): float(v) for l, h, m, v in data["partial"]["noise"]}  # noqa: E741
        partial = Partial(SummaryCollector.from_state(data["partial"]["summary"]), noise)
    worst = None if data["worst"] is None else data_frame(data["worst"])
    return Piece(Unit(**data["unit"]), combination, int(data["rows"]), worst, partial)


def frame_data(frame: pd.DataFrame) -> dict[str, Any]:
    """A frame as JSON-ready lists, with its dtypes; floats (NaN and inf included) survive exactly."""
    return {
        "columns": [str(column) for column in frame.columns],
        "dtypes": [str(dtype) for dtype in frame.dtypes],
        "values": [[None if value is pd.NA else value for value in frame[column].tolist()] for column in frame],
    }


def data_frame(data: dict[str, Any]) -> pd.DataFrame:
    columns = zip(data["columns"], data["dtypes"], data["values"], strict=True)
    return pd.DataFrame({name: pd.Series(values, dtype=dtype) for name, dtype, values in columns})
