"""What a run hands its writer besides the rows it streams: the Digest, a shard's Pieces and Partials, the running
Summary of a sentence's permutations (max with its permutation, exact mean, count), and the Measurement protocol
every kind of run (a sweep, a shard's units of one, a corpus) follows, so that one writer (results/run_writer.py)
writes them all.

The measuring loop (measure/loop.py) fills these; the writer and `orderlab merge` (results/) read and fold them,
without importing the loop or torch. A Summary folds plain numbers: measure/loop.py's SummaryCollector feeds it a
pass's tensors.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from orderlab.core import permutations as perms
from orderlab.metrics import RATE_TIES, per_permutation_mean, reduction_of
from orderlab.plan.shards import Unit
from orderlab.spec.fields import RESOLUTION
from orderlab.spec.sweep import SweptValue
from orderlab.vocabulary.exactsum import ExactSum

StatKey = tuple[int, int | None, str]  # (layer, head or None, metric) of a summary row
NoiseKey = tuple[int, int | None, str]  # (layer, head or None, metric): summary rows key the same way
Frames = Generator[pd.DataFrame, None, "Digest"]  # tidy frames in the CSV's order, then the run's digest


class Summary:
    """A running summary of one sentence's permutations under one condition: per (layer, head, metric) the max (and
    its first permutation) and an exact mean. A mean or rate metric's mean (its summary) is over the orders that
    change the sentence: never the identity, nor a swap of two copies of one word (docs/metrics.md)."""

    def __init__(self, case: str, sentence: str, encoding: str, words: list[str]):
        self.fixed = {"case": case, "input": sentence, "encoding": encoding}
        self.words = words
        self.worst: dict[StatKey, tuple[float, perms.Permutation]] = {}  # (layer, head, metric) -> max, where
        self.first: dict[StatKey, perms.Permutation] = {}  # (layer, head, metric) -> its first permutation
        self.sums: dict[StatKey, ExactSum] = {}
        self.counts: dict[StatKey, int] = {}
        self.ties: dict[StatKey, int] = {}  # a rate's 0/1 answers within their round-off: out of its mean and count

    def fold(
        self,
        key: StatKey,
        top: float,
        where: perms.Permutation,
        values: np.ndarray,
        chunk: list[perms.Permutation],
        tied: np.ndarray | None = None,
    ) -> None:
        """A chunk's values (float64, one per permutation of `chunk`), whose first maximum `top` is at `where`; tied
        (bool, one per permutation): a rate's 0/1 answers within their round-off, left out of its mean and count."""
        self.first.setdefault(key, chunk[0])
        self._keep_max(key, top, where)
        summed = values
        if per_permutation_mean(key[2]):
            changed = np.array([perms.apply(p, self.words) != self.words for p in chunk], dtype=bool)
            if tied is not None and reduction_of(key[2]) == "rate":
                self.ties[key] = self.ties.get(key, 0) + int((tied & changed).sum())
                changed &= ~tied
            summed = summed[changed]
        self.sums.setdefault(key, ExactSum()).add(summed)
        self.counts[key] = self.counts.get(key, 0) + len(summed)

    def _keep_max(self, key: StatKey, value: float, where: perms.Permutation) -> None:
        """A later maximum replaces the known one only if larger (or NaN over a number): the first one stays."""
        known = self.worst.get(key)
        if known is None or value > known[0] or (math.isnan(value) and not math.isnan(known[0])):
            self.worst[key] = (value, where)

    def absorb(self, later: Summary) -> None:
        """Fold in the summary of the permutations that come after this one's (a later shard's range)."""
        for key, (value, where) in later.worst.items():
            self.first.setdefault(key, later.first[key])
            self._keep_max(key, value, where)
            self.sums.setdefault(key, ExactSum()).absorb(later.sums[key])
            self.counts[key] = self.counts.get(key, 0) + later.counts[key]
            self.ties[key] = self.ties.get(key, 0) + later.ties.get(key, 0)

    def state(self) -> dict[str, Any]:
        """Plain data, for a shard's partial summary on disk (JSON); `from_state` reads it back."""
        stats = [
            {"layer": layer, "head": head, "metric": metric, "max": value, "where": list(where),
             "first": list(self.first[(layer, head, metric)]), "sum": self.sums[(layer, head, metric)].state(),
             "count": self.counts[(layer, head, metric)], "ties": self.ties.get((layer, head, metric), 0)}
            for (layer, head, metric), (value, where) in self.worst.items()
        ]  # fmt: skip
        return {"case": self.fixed["case"], "input": self.fixed["input"], "encoding": self.fixed["encoding"],
                "words": self.words, "statistics": stats}  # fmt: skip

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Summary:
        summary = cls(state["case"], state["input"], state["encoding"], state["words"])
        for stat in state["statistics"]:
            key = (stat["layer"], stat["head"], stat["metric"])
            summary.worst[key] = (float(stat["max"]), tuple(stat["where"]))
            summary.first[key] = tuple(stat["first"])
            summary.sums[key] = ExactSum.from_state(stat["sum"])
            summary.counts[key] = stat["count"]
            summary.ties[key] = stat.get("ties", 0)
        return summary

    def frame(self) -> pd.DataFrame:
        """Two rows per (layer, head, metric): the max with its permutation, and the mean; `count`: the
        permutations both reduce over, `ties`: a rate's answers left out as ties (for summaries, not metrics.csv).
        A mean or rate that no order changing the sentence reaches (only the identity, or swaps of copies of one
        word: 'dog dog' reversed) has no summary rows: its mean of nothing was a NaN given the max's verdict."""
        columns: dict[str, list[object]] = {c: [] for c in ("permutation", "permuted", "layer", "head", "metric")}
        columns |= {"statistic": [], "value": [], "count": [], RATE_TIES: []}
        for key, (top, where) in self.worst.items():
            layer, head, metric = key
            count, tied = self.counts[key], self.ties.get(key, 0)
            if count == 0 and tied == 0 and per_permutation_mean(metric):
                continue
            for statistic, label, permuted, value in (
                ("max", perms.label(where), " ".join(perms.apply(where, self.words)), top),
                ("mean", "", "", self.sums[key].mean(count)),
            ):
                items = (label, permuted, layer, head, metric, statistic, value, count, tied)
                for column, item in zip(columns, items, strict=True):
                    columns[column].append(item)
        frame = pd.DataFrame(columns)
        frame["head"] = frame["head"].astype("Int64")
        return frame.assign(**self.fixed)

    def name_first_where_round_off(self, table: pd.DataFrame) -> None:
        """A judged max within round-off is 0 for every permutation: name the first one, as per-permutation rows do.

        Otherwise the permutation named would be wherever this CPU's round-off happened to peak.
        """
        zero = (table["statistic"] == "max") & (table["value"] == 0)
        for index in table.index[zero]:
            row = table.loc[index]
            first = self.first[(row["layer"], None if pd.isna(row["head"]) else row["head"], row["metric"])]
            table.loc[index, ["permutation", "permuted"]] = perms.label(first), " ".join(perms.apply(first, self.words))


@dataclass
class Judged:
    """A running summary of some orders and what their verdicts are judged by: the round-off measured for them, in
    the precision they were measured in."""

    summary: Summary
    noise: dict[NoiseKey, float]
    dtype: str


@dataclass
class Partial:
    """A shard's share of one sentence under one condition: its running summary and the round-off measured for it
    (the orders kept in the run's precision), and, where the input escalates, the summary of the orders measured
    again in the twin's precision with the twin's round-off (measure/escalation.py)."""

    summary: Summary
    noise: dict[NoiseKey, float]
    dtype: str | None = None  # the precision its verdicts are judged in: the run's
    resolution: float = RESOLUTION
    finer: Judged | None = None  # the orders re-measured in the twin's precision (None: the input never escalates)


@dataclass
class Reach:
    """What one condition's verdicts resolved, over its inputs: the widest round-off line (and its layer) and the
    precision it was judged in, and how many orders (or probes) were measured again in the twin's precision
    (measure/escalation.py decides and reports it)."""

    line: float = 0.0
    layer: int = 0
    dtype: str = ""
    remeasured: int = 0
    remeasured_in: str = ""

    def widen(self, lines: Mapping[int, float], dtype: str) -> None:
        """Take in an input's widest judged line per layer (in `dtype`, the precision its verdicts were judged in)."""
        for layer, line in lines.items():
            if line > self.line:
                self.line, self.layer = line, layer
        self.dtype = dtype if not self.dtype or self.dtype == dtype else "mixed"

    def absorb(self, other: Reach) -> None:
        if other.line > self.line:
            self.line, self.layer = other.line, other.layer
        if other.dtype:
            self.dtype = other.dtype if not self.dtype or self.dtype == other.dtype else "mixed"
        self.remeasured += other.remeasured
        self.remeasured_in = self.remeasured_in or other.remeasured_in

    def record(self) -> dict[str, object]:
        """manifest.json's entry for the condition (and a shard's, in its partials.json: `from_record` reads it)."""
        return {"widest_line": self.line, "at_layer": self.layer, "judged_in": self.dtype,
                "remeasured": self.remeasured, "remeasured_in": self.remeasured_in or None}  # fmt: skip

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Reach:
        return cls(float(record["widest_line"]), int(record["at_layer"]), str(record["judged_in"]),
                   int(record["remeasured"]), str(record["remeasured_in"] or ""))  # fmt: skip


@dataclass
class Piece:
    """What one unit of a shard left: the rows it wrote to metrics.csv, and its max rows or its partial summary."""

    unit: Unit
    combination: dict[str, SweptValue]  # the swept fields' values of the unit's combination
    rows: int
    worst: pd.DataFrame | None = None  # a whole unit (probes, position probe): its max rows, tagged
    partial: Partial | None = None  # a range of permutations: the summary to fold with the other shards'


@dataclass
class Digest:
    """What a run keeps besides the rows it streams out: small, whatever the number of permutations."""

    worst: list[pd.DataFrame] = field(default_factory=list)  # per group, layer, head, metric: the max rows
    attention: list[pd.DataFrame] = field(default_factory=list)  # attention.csv's rows (the shown reorderings)
    non_finite: int = 0  # rows whose value (or round-off) came out NaN or inf
    reach: dict[str, Reach] = field(default_factory=dict)  # per condition: the resolution reached, what was re-measured
    pieces: list[Piece] = field(default_factory=list)  # a shard's units in order (in place of `worst`); else empty

    def worst_table(self) -> pd.DataFrame:
        """The max over permutations per group, layer, head and metric (probes as they are), for `summarize`."""
        return pd.concat(self.worst, ignore_index=True)

    def attention_table(self) -> pd.DataFrame | None:
        return pd.concat(self.attention, ignore_index=True) if self.attention else None

    def reach_of(self, label: str) -> Reach:
        return self.reach.setdefault(label, Reach())


def tag(frame: pd.DataFrame, combination: Mapping[str, SweptValue]) -> pd.DataFrame:
    """The combination's columns first, then the frame's own."""
    return frame.assign(**combination)[[*combination, *frame.columns]] if combination else frame


class Measurement(Protocol):
    """What a run measures, as its writer takes it: metrics.csv's frames in order, then the Digest; the tables a whole
    run derives from them (summary.csv and any others); files written beside them (a trained spec's
    checkpoints); a shard's token_logprobs.csv rows, which its partials.json carries to the merge."""

    token_logprobs: list[pd.DataFrame]

    def frames(self) -> Frames: ...

    def tables(self, digest: Digest) -> dict[str, pd.DataFrame]: ...

    def write_beside(self, folder: Path) -> list[str]: ...
