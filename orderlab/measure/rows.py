"""Tidy rows: their columns, the collectors a pass's metric values go to (measure/metric_computations.py computes
them), and the wide summary. Never prints.

orderlab/measure/loop.py's MeasuringLoop drives these parts chunk by chunk, for every model adapter alike
(orderlab/models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
import torch

from orderlab.core.pair_relations import RELATION_COLUMN
from orderlab.measure.noise import TIED
from orderlab.measure.verdicts import NON_FINITE, ORDER_SENSITIVE, PASSING_WORDS, TIE, UNRESOLVED
from orderlab.metrics import (
    ORIGINAL_RANK,
    PERMUTATION_PREFERRED,
    RATE_COUNT,
    RATE_TIES,
    per_permutation_mean,
    reduction_of,
)


class Collector(Protocol):
    """Where a chunk's metric values go: rows (RowCollector), a running summary, the round-off figures."""

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None: ...

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None: ...

    def mark_ties(self, tied: torch.Tensor | None) -> None: ...


KEY_COLUMNS = ["case", "input", "encoding", "permutation", "permuted", "layer", "head", "metric"]
COLUMNS = [*KEY_COLUMNS, "value", "verdict"]
# After the value: what a task or probe row is measured against, blank on every other row. Written only by specs
# that have such rows (a train: block or the decodability probe), so other results keep their columns.
DETAIL_COLUMNS = ["length", "slot", "chance"]  # sentence length; the probe's slot (per-slot rows); chance accuracy


def detail_number(value: float) -> str:
    """A float of DETAIL_COLUMNS as metrics.csv writes its floats (%.6e): they share a column with blanks."""
    return f"{value:.6e}"


@dataclass(frozen=True)
class RunResult:
    metrics: pd.DataFrame  # tidy, sorted by KEY_COLUMNS
    device: torch.device
    wall_seconds: float


class RowCollector:
    """Columns of tidy rows for one (case, input, encoding) and a batch of B permutations."""

    def __init__(self, case: str, sentence: str, encoding: str, permutations: list[str], permuted: list[str]):
        self.fixed = {"case": case, "input": sentence, "encoding": encoding}
        self.permutations, self.permuted = permutations, permuted
        self.columns: dict[str, list[object]] = {
            c: [] for c in ("permutation", "permuted", "layer", "head", "metric", "value", TIED)
        }
        self.tied: list[bool] | None = None

    def mark_ties(self, tied: torch.Tensor | None) -> None:
        """tied (B,): which permutations' 0/1 answers (a rate metric's rows) lie within their round-off."""
        self.tied = None if tied is None else [bool(t) for t in tied.cpu().tolist()]

    def _ties(self, metric: str, chosen: list[bool] | None = None) -> list[object]:
        count = len(self.permutations) if chosen is None else sum(chosen)
        if self.tied is None or reduction_of(metric) != "rate":
            return [False] * count
        return [t for t, k in zip(self.tied, [True] * len(self.tied) if chosen is None else chosen, strict=True) if k]

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        """values: (B,), one per permutation."""
        count = len(self.permutations)
        self.columns[TIED] += self._ties(metric)
        self.columns["permutation"] += self.permutations
        self.columns["permuted"] += self.permuted
        self.columns["layer"] += [layer] * count
        self.columns["head"] += [head] * count
        self.columns["metric"] += [metric] * count
        self.columns["value"] += values.double().cpu().tolist()

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        """Rows only for the permutations where keep (B,) is True; values: (B,)."""
        chosen = keep.cpu().tolist()
        count = sum(chosen)
        self.columns[TIED] += self._ties(metric, chosen)
        self.columns["permutation"] += [p for p, k in zip(self.permutations, chosen, strict=True) if k]
        self.columns["permuted"] += [p for p, k in zip(self.permuted, chosen, strict=True) if k]
        self.columns["layer"] += [layer] * count
        self.columns["head"] += [None] * count
        self.columns["metric"] += [metric] * count
        self.columns["value"] += values[keep].double().cpu().tolist()

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.columns)
        frame["head"] = frame["head"].astype("Int64")
        if not frame[TIED].any():
            frame = frame.drop(columns=TIED)  # judge (noise.py) reads and drops the column where there are ties
        for column, value in self.fixed.items():
            frame[column] = value
        return frame


def summarize(table: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """Wide view: per (case, subject, metric), each encoding's value as the registry reduces the metric, and its
    verdict: the worst (largest) value, or for a mean or a rate the largest mean over permutations of any layer and
    head (table's `mean` column), with the worst value's verdict. A table with a rate metric gets RATE_COUNT; one
    with a pair that is not a reordering, each pair's relation (RELATION_COLUMN, blank on other rows)."""
    subject = np.where(table["case"] == "probe", table["input"] + " vs " + table["permuted"], table["input"])
    shown = table.assign(subject=subject, value=summary_values(table))
    relation = [RELATION_COLUMN] if RELATION_COLUMN in table.columns else []
    if relation:
        shown[RELATION_COLUMN] = shown[RELATION_COLUMN].fillna("")
    index = ["case", "subject", *relation, "metric"]
    # An unresolved row (a value within a line wider than the resolution) ranks above every passing row and below
    # every order-sensitive or non-finite one, whatever its value: it is neither answer.
    rank = np.select([shown["verdict"] == UNRESOLVED, shown["verdict"].isin([ORDER_SENSITIVE, NON_FINITE])], [1, 2], 0)
    ordered = shown.assign(rank=rank).sort_values(["rank", "value"], kind="mergesort", na_position="last")
    # tail(1), not last(): last() skips NaN column by column and would pair a finite value with a NaN row's verdict.
    worst = ordered.groupby([*index, "encoding"]).tail(1)
    wide = worst.pivot(index=index, columns="encoding", values=["value", "verdict"])
    columns = {name: wide[("value", name)].astype(float) for name in encodings}
    columns |= {f"{name} verdict": wide[("verdict", name)] for name in encodings}
    firsts = first_layers(shown, index).reindex(index=wide.index, columns=encodings).astype(object).fillna("")
    columns |= {first_layer_column(name): firsts[name] for name in encodings}
    summary = pd.DataFrame(columns).reset_index()
    rates = worst[worst["metric"].map(reduction_of) == "rate"]
    if rates.empty:
        return summary
    counts = rates.get("count", pd.Series(np.nan, index=rates.index))  # probes alone have no permutations counted
    counts = counts.groupby([rates[key] for key in ("case", "subject", "metric")]).max().rename(RATE_COUNT)
    tied = rates.get(RATE_TIES, pd.Series(np.nan, index=rates.index))
    tied = tied.where(rates["case"] != "probe", (rates["verdict"] == TIE).astype(float))  # a probe: its own answer
    ties = tied.groupby([rates[key] for key in ("case", "subject", "metric")]).max().rename(RATE_TIES)
    summary = summary.join(counts, on=["case", "subject", "metric"]).join(ties, on=["case", "subject", "metric"])
    over_probes = probe_rates(rates[rates["case"] == "probe"], encodings)
    summary = pd.concat([summary, over_probes], ignore_index=True).astype({RATE_COUNT: "Int64", RATE_TIES: "Int64"})
    return with_ranks(summary, encodings, index)


FIRST_LAYER = "first layer"  # summary.csv's '<encoding> first layer': where order first shows, or NEVER
NEVER = "never"


def first_layer_column(encoding: str) -> str:
    return f"{encoding} {FIRST_LAYER}"


def first_layers(rows: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    """Per summary row (index) and encoding, the first layer (0 = the input) at which a value is order-sensitive, or
    NEVER; UNRESOLVED where none is but some layer's value is unresolved (never would count it as passing); blank
    for a metric not judged by order (a rate, a rank, a pair of different words, unjudged values)."""
    judged = rows["verdict"].isin([*PASSING_WORDS, ORDER_SENSITIVE, NON_FINITE, UNRESOLVED]) & (
        rows["metric"].map(reduction_of).isin(["max", "mean"])
    )
    sensitive = rows["layer"].where(rows["verdict"] == ORDER_SENSITIVE).astype(float)
    keys = [*index, "encoding"]
    groups = [rows.loc[judged, key] for key in keys]
    first = sensitive[judged].groupby(groups).min()
    unresolved = (rows.loc[judged, "verdict"] == UNRESOLVED).groupby(groups).any()
    shown = pd.Series(
        [str(int(layer)) if not pd.isna(layer) else UNRESOLVED if open_ else NEVER
         for layer, open_ in zip(first, unresolved.reindex(first.index), strict=True)],
        index=first.index, dtype=object,
    )  # fmt: skip
    return shown.unstack("encoding").fillna("") if len(shown) else pd.DataFrame()


def earliest(layers: list[str]) -> str:
    """The earliest of several first layers (a seed sweep's cell: where any seed shows order), NEVER if none does."""
    shown = [int(layer) for layer in layers if layer.isdigit()]
    if shown:
        return str(min(shown))
    return UNRESOLVED if UNRESOLVED in layers else NEVER if NEVER in layers else ""


def with_ranks(summary: pd.DataFrame, encodings: list[str], index: list[str]) -> pd.DataFrame:
    """The summary with, after each acceptance rate, the original's rank among itself and its distinct reorderings:
    1 + how many the model prefers (rate x count), of count + 1 sentences; unjudged (verdict '')."""
    rates = summary[summary["metric"] == PERMUTATION_PREFERRED]
    if rates.empty:
        return summary
    ranks = rates.assign(metric=ORIGINAL_RANK)
    for name in encodings:
        ranks[name] = 1 + (rates[name] * rates[RATE_COUNT].astype(float)).round()
        ranks[f"{name} verdict"] = ranks[f"{name} verdict"].where(ranks[f"{name} verdict"] == NON_FINITE, "")
    together = pd.concat([summary, ranks], ignore_index=True)
    return together.sort_values(index, kind="mergesort", ignore_index=True)


def probe_rates(rates: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """Per rate metric of probes (a minimal pair's preference), one row over all of them: each condition's rate with
    the probe count (BLiMP's accuracy) over the probes it decides (a tie, a margin within round-off, is left out and
    counted in RATE_TIES); no verdict. Empty without such probes."""
    rows = []
    for metric, group in rates.groupby("metric", sort=False):
        decided = group[group["verdict"] != TIE]
        rate = decided.groupby("encoding")["value"].mean()
        count = int(decided.groupby("encoding").size().max()) if len(decided) else 0
        tied = int((group["verdict"] == TIE).groupby(group["encoding"]).sum().max())
        probes = int(group.groupby("encoding").size().max())
        rows.append({"case": "probes", "subject": f"all {probes} probes", "metric": metric,
                     **{name: float(rate.get(name, np.nan)) for name in encodings}, RATE_COUNT: count,
                     RATE_TIES: tied})  # fmt: skip
    return pd.DataFrame(rows)


def summary_values(table: pd.DataFrame) -> pd.Series:
    """Each row's value as its summary shows it: its `mean` over permutations for a mean or rate metric, else
    `value` (the worst)."""
    if "mean" not in table.columns:
        return table["value"]
    one_value = table["mean"].isna() & (table["case"] == "probe")  # a probe's one value is its own mean
    return table["value"].where(~table["metric"].map(per_permutation_mean).astype(bool) | one_value, table["mean"])
