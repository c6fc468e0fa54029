"""partials.json: what a shard knows beyond its metrics.csv rows, as plain JSON, for `orderlab merge` to finish.

Per unit, in order: how many of metrics.csv's rows it wrote, and either its max rows (a whole unit: probes,
position probe) or its partial summary (a range of a sentence's permutations: running max with its first
permutation, exact sum state, count, and the round-off measured for it). Also the shard's attention maps, its
token_logprobs.csv rows, and what the console table needs. JSON, not pickle: a merge reads folders it is handed
and must run no code from them. Frames keep their dtypes (written alongside), so the merge writes the bytes a
whole run writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import pandas as pd
from pydantic import ConfigDict, Field, StringConstraints, model_validator

from orderlab.core.bounds import MAX_PROBE_LENGTH
from orderlab.core.userfiles import FileModel, FileProblem, SafeName, read_json
from orderlab.plan.shards import Unit
from orderlab.results.manifest import MAX_ENTRIES, MAX_ROWS, Text
from orderlab.spec.fields import RESOLUTION, ComputeType
from orderlab.spec.sweep import SweptValue
from orderlab.vocabulary.digest import Digest, Judged, NoiseKey, Partial, Piece, Reach, Summary
from orderlab.vocabulary.exactsum import EXPONENTS

FILE = "partials.json"
FORMAT = 2  # bumped when the layout changes, so an old shard is refused rather than misread (PartialsData.format)
EXPECTED = "a shard's partial summaries, as `run --shard` writes them"
PARTIALS_LIMIT = 2**28  # bytes: per-unit summaries and a shard's attention maps; real shards write kilobytes
MAX_COLUMNS = 256  # columns of a table, swept fields of a combination
MAX_WORDS = 10_000  # words of a sentence (a permutation of its slots)
SHARD_FILES = ["metrics.csv", FILE]  # what merge reads of a shard besides its manifest, each checked by its sha256


@dataclass(frozen=True)
class RunFacts:
    """What a merged run's files and console table need besides the rows: the same in every shard of a run."""

    title: str
    dtype: str
    conditions: list[str]  # summary.csv's column order
    swept: list[str]  # swept fields, in column order
    per_permutation: bool
    resolution: float = RESOLUTION  # the spec's: what the merged run's manifest and caption say was promised
    parses: dict[str, list[int]] = field(default_factory=dict)  # input -> CoNLL heads: orders.csv's dependency column


@dataclass(frozen=True)
class ShardPartials:
    facts: RunFacts
    pieces: list[Piece]
    attention: list[pd.DataFrame]
    non_finite: int  # non-finite rows among those written whole (per-permutation rows, probes)
    token_logprobs: list[pd.DataFrame]  # token_logprobs.csv's rows of the combinations this shard opens
    reach: dict[str, Reach]  # per condition, what the shard's units resolved and re-measured (Digest.reach)


def write_partials(folder: Path, facts: RunFacts, digest: Digest, token_logprobs: list[pd.DataFrame]) -> None:
    document = {
        "format": FORMAT,
        "facts": facts.__dict__,
        "pieces": [_piece_data(piece) for piece in digest.pieces],
        "attention": [frame_data(frame) for frame in digest.attention],
        "non_finite": digest.non_finite,
        "token_logprobs": [frame_data(frame) for frame in token_logprobs],
        "reach": {label: reach.record() for label, reach in digest.reach.items()},
    }
    (folder / FILE).write_text(json.dumps(document) + "\n")


def read_partials(folder: Path) -> ShardPartials:
    """A shard's partials.json, typed and bounded; one FileProblem line naming the file and field if it is not one
    orderlab wrote (or is of another format)."""
    path = folder / FILE
    document = read_json(path, PartialsData, EXPECTED, PARTIALS_LIMIT, non_finite=True)
    try:
        return ShardPartials(
            RunFacts(**document.facts.model_dump()),
            [_piece(item) for item in document.pieces],
            [item.frame() for item in document.attention],
            document.non_finite,
            [item.frame() for item in document.token_logprobs],
            {label: Reach.from_record(item.model_dump()) for label, item in document.reach.items()},
        )
    except (ValueError, TypeError) as error:  # a column's values that its recorded dtype cannot hold
        raise FileProblem(path, f"{str(error)[:120]}; expected {EXPECTED}") from None


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
            "dtype": partial.dtype,
            "resolution": partial.resolution,
            "finer": None if partial.finer is None else _judged_data(partial.finer),
        },
    }  # fmt: skip


def _judged_data(part: Judged) -> dict[str, Any]:
    return {"summary": part.summary.state(), "dtype": part.dtype,
            "noise": [[layer, head, metric, value] for (layer, head, metric), value in part.noise.items()]}  # fmt: skip


def _piece(data: PieceData) -> Piece:
    combination: dict[str, SweptValue] = dict(data.combination)
    partial = None
    if data.partial is not None:
        noise: dict[NoiseKey, float] = {(layer, head, name): value for layer, head, name, value in data.partial.noise}
        summary = Summary.from_state(data.partial.summary.model_dump())
        finer = data.partial.finer
        twin = None if finer is None else Judged(Summary.from_state(finer.summary.model_dump()), finer.noise_map(),
                                                 finer.dtype)  # fmt: skip
        partial = Partial(summary, noise, data.partial.dtype, data.partial.resolution, twin)
    worst = None if data.worst is None else data.worst.frame()
    return Piece(Unit(**data.unit.model_dump()), combination, data.rows, worst, partial)


def frame_data(frame: pd.DataFrame) -> dict[str, Any]:
    """A frame as JSON-ready lists, with its dtypes; floats (NaN and inf included) survive exactly."""
    return {
        "columns": [str(column) for column in frame.columns],
        "dtypes": [str(dtype) for dtype in frame.dtypes],
        "values": [[None if value is pd.NA else value for value in frame[column].tolist()] for column in frame],
    }


# --- partials.json as read back: every field typed and bounded before it sizes anything ----------------

Count = Annotated[int, Field(ge=0, le=MAX_ROWS)]
Small = Annotated[int, Field(ge=0, le=MAX_ENTRIES)]  # a layer, head, slot or combination index
Cell = bool | int | float | str | None
FrameDtype = Literal["int64", "Int64", "float64", "float32", "bool", "boolean", "str", "string", "object"]
Column = Annotated[str, StringConstraints(min_length=1, max_length=100)]


class _MayHoldNaN(FileModel):
    """Measured values: NaN and infinities are results (a run that failed to measure), so they are kept."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=True)


class FrameData(_MayHoldNaN):
    columns: list[Column] = Field(max_length=MAX_COLUMNS)
    dtypes: list[FrameDtype] = Field(max_length=MAX_COLUMNS)
    values: list[list[Cell]] = Field(max_length=MAX_COLUMNS)

    @model_validator(mode="after")
    def _rectangular(self) -> FrameData:
        if not len(self.columns) == len(self.dtypes) == len(self.values):
            raise ValueError("expected as many dtypes and value lists as columns")
        if len({len(column) for column in self.values}) > 1:
            raise ValueError("columns of different lengths; expected a table")
        return self

    def frame(self) -> pd.DataFrame:
        columns = zip(self.columns, self.dtypes, self.values, strict=True)
        return pd.DataFrame({name: pd.Series(values, dtype=dtype) for name, dtype, values in columns})


class UnitData(FileModel):
    combination: Small
    kind: Literal["decodability", "permutations", "probes"]
    sentence: Text = ""
    condition: Text = ""
    start: Count = 0
    stop: Count = 0
    total: Count = 0
    weight: Count = 0

    @model_validator(mode="after")
    def _range(self) -> UnitData:
        if not self.start <= self.stop <= self.total:
            raise ValueError(f"range {self.start}..{self.stop} of {self.total}; expected start <= stop <= total")
        return self


Bin = Annotated[int, Field(ge=0, lt=EXPONENTS)]
BinSum = Annotated[int, Field(ge=-(2**62), le=2**62)]


class SumData(_MayHoldNaN):
    bins: list[Bin] = Field(max_length=EXPONENTS)
    high: list[BinSum] = Field(max_length=EXPONENTS)
    low: list[BinSum] = Field(max_length=EXPONENTS)
    special: float

    @model_validator(mode="after")
    def _one_per_bin(self) -> SumData:
        if not len(self.bins) == len(self.high) == len(self.low):
            raise ValueError("expected one high and one low sum per bin")
        return self


Slots = Annotated[list[Small], Field(max_length=MAX_WORDS)]


class StatisticData(_MayHoldNaN):
    layer: Small
    head: Small | None
    metric: SafeName
    max: float
    where: Slots
    first: Slots
    sum: SumData
    count: Count
    ties: Count = 0


class SummaryData(FileModel):
    case: Text
    input: Text
    encoding: Text
    words: list[Text] = Field(max_length=MAX_WORDS)
    statistics: list[StatisticData] = Field(max_length=MAX_ENTRIES)

    @model_validator(mode="after")
    def _permutations_of_the_words(self) -> SummaryData:
        slots = list(range(len(self.words)))
        for stat in self.statistics:
            if sorted(stat.where) != slots or sorted(stat.first) != slots:
                raise ValueError(f"{stat.metric} at layer {stat.layer}: expected permutations of {len(slots)} slots")
        return self


NoiseData = Annotated[list[tuple[Small, Small | None, SafeName, float]], Field(max_length=MAX_ENTRIES)]


class JudgedData(_MayHoldNaN):
    """The orders of a range measured again in the twin's precision: their summary and the twin's round-off."""

    summary: SummaryData
    noise: NoiseData
    dtype: Literal["float32", "float64"]  # a twin is never 16-bit

    def noise_map(self) -> dict[NoiseKey, float]:
        return {(layer, head, name): value for layer, head, name, value in self.noise}


class PartialData(_MayHoldNaN):
    summary: SummaryData
    noise: NoiseData
    dtype: ComputeType | None = None  # judged in: the run's
    resolution: float = Field(RESOLUTION, gt=0, le=1)
    finer: JudgedData | None = None


class ReachData(FileModel):
    """A condition's reach over the shard's units (Reach.record)."""

    widest_line: float = Field(ge=0)
    at_layer: Small
    judged_in: Literal["", "bfloat16", "float16", "float32", "float64", "mixed"]
    remeasured: Count
    remeasured_in: Literal["float32", "float64"] | None


class PieceData(FileModel):
    unit: UnitData
    combination: list[tuple[SafeName, SweptValue]] = Field(max_length=MAX_COLUMNS)
    rows: Count
    worst: FrameData | None
    partial: PartialData | None


class FactsData(FileModel):
    title: Text
    dtype: ComputeType
    conditions: list[Text] = Field(max_length=MAX_ENTRIES)
    swept: list[SafeName] = Field(max_length=MAX_COLUMNS)
    per_permutation: bool
    resolution: float = Field(RESOLUTION, gt=0, le=1)
    parses: dict[Text, list[Annotated[int, Field(ge=0, le=MAX_PROBE_LENGTH)]]] = Field(
        default_factory=dict, max_length=MAX_ENTRIES
    )


class PartialsData(FileModel):
    format: Literal[2]  # FORMAT
    facts: FactsData
    pieces: list[PieceData] = Field(max_length=MAX_ENTRIES)
    attention: list[FrameData] = Field(max_length=MAX_ENTRIES)
    non_finite: Count
    token_logprobs: list[FrameData] = Field(default_factory=list, max_length=MAX_ENTRIES)
    reach: dict[Text, ReachData] = Field(default_factory=dict, max_length=MAX_ENTRIES)
