"""Tidy rows: their columns, the collectors a pass's metric values go to, the per-permutation and probe
metrics of a pass (`record_metrics`, `record_pair`: the one place they are computed), the wide summary,
and the stack's set-up from a spec. Never prints.

For every encoding one stack is built with the same seeded weights, so encodings differ only in
how they inject position. orderlab/measure/loop.py's MeasuringLoop drives these parts chunk by chunk,
for every model adapter alike (orderlab/models).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd
import torch

from orderlab.measure import metrics as M
from orderlab.spec.metric_names import (
    ATTENTION_EQUIVARIANCE,
    ATTENTION_FAMILY,
    EQUIVARIANCE,
    EQUIVARIANCE_FAMILY,
    INVARIANCE_FAMILY,
    LM_LOGPROB_FAMILY,
    LOGPROB_CHANGE,
    PAIR_COSINE,
    PAIR_DISTANCE_FAMILY,
    PAIR_L2,
    PERMUTATION_PREFERRED,
    PREFIX_INVARIANCE,
    PREFIX_INVARIANCE_FAMILY,
    RATE_COUNT,
    REPEAT_COSINE,
    REPEAT_DISTANCE,
    REPEATED_WORDS_FAMILY,
    TOKEN_SHIFT,
    TOKEN_SHIFT_FAMILY,
    per_permutation_mean,
    reduction_of,
)
from orderlab.spec.schema import Spec
from orderlab.spec.text import repeated_pairs

if TYPE_CHECKING:
    from orderlab.models.adapter_protocol import Adapter, Pass


class Collector(Protocol):
    """Where a chunk's metric values go: rows (RowCollector), a running summary, the round-off figures."""

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None: ...

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None: ...


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
            c: [] for c in ("permutation", "permuted", "layer", "head", "metric", "value")
        }

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        """values: (B,), one per permutation."""
        count = len(self.permutations)
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
        self.columns["permutation"] += [p for p, k in zip(self.permutations, chosen, strict=True) if k]
        self.columns["permuted"] += [p for p, k in zip(self.permuted, chosen, strict=True) if k]
        self.columns["layer"] += [layer] * count
        self.columns["head"] += [None] * count
        self.columns["metric"] += [metric] * count
        self.columns["value"] += values[keep].double().cpu().tolist()

    def frame(self) -> pd.DataFrame:
        frame = pd.DataFrame(self.columns)
        frame["head"] = frame["head"].astype("Int64")
        for column, value in self.fixed.items():
            frame[column] = value
        return frame


def record_metrics(
    spec: Spec,
    rows: Collector,
    adapter: Adapter,
    reference: Pass,
    output: Pass,
    slots: torch.Tensor,
    matching: torch.Tensor,
    words: list[str],
    model_slots: torch.Tensor | None,
) -> None:
    """Per-permutation metrics of one chunk: reference is f(X) (batch of 1), output f(PX) for the chunk.

    slots (B, n): the reorderings; matching (B, n): the word occurrence at each slot; words: the sentence's;
    model_slots (B, T): the reorderings on the model's own slots, for attention maps (None without maps).
    """
    wanted = set(spec.metrics)
    repeats = _repeat_slots(words, matching)  # (B, m, 2) or None
    for layer, hidden in enumerate(output.hidden):
        h_x, h_px = reference.hidden[layer][0], hidden
        if EQUIVARIANCE_FAMILY in wanted:
            rows.add(EQUIVARIANCE, layer, M.equivariance_error(h_px, h_x, slots))
        if INVARIANCE_FAMILY in wanted:
            for metric, how in adapter.invariance.items():
                pooled_x, pooled_px = reference.pooled[how][layer][0], output.pooled[how][layer]
                rows.add(metric, layer, M.relative_l2(pooled_x, pooled_px))
            for metric, how in adapter.cosine.items():
                pooled_x, pooled_px = reference.pooled[how][layer], output.pooled[how][layer]
                rows.add(metric, layer, M.cosine_distance(pooled_px, pooled_x))
        if TOKEN_SHIFT_FAMILY in wanted:
            rows.add(TOKEN_SHIFT, layer, M.token_shift(h_px, h_x, matching))
        if PREFIX_INVARIANCE_FAMILY in wanted:
            keeps_last = slots[:, -1] == slots.shape[1] - 1  # (B,): only the words before the last one move
            rows.add_where(keeps_last, PREFIX_INVARIANCE, layer, M.prefix_invariance_error(h_px, h_x))
        if REPEATED_WORDS_FAMILY in wanted and repeats is not None:
            rows.add(REPEAT_DISTANCE, layer, M.repeated_word_distance(h_px, repeats))
            rows.add(REPEAT_COSINE, layer, M.repeated_word_distance(h_px, repeats, cosine=True))
    if LM_LOGPROB_FAMILY in wanted and output.logprob is not None and reference.logprob is not None:
        last, original = len(output.hidden) - 1, reference.logprob[0]
        rows.add(
            LOGPROB_CHANGE, last, M.ratio((output.logprob - original).abs(), original.abs().expand_as(output.logprob))
        )
        rows.add(PERMUTATION_PREFERRED, last, (output.logprob > original).to(output.logprob.dtype))
    if ATTENTION_FAMILY in wanted and model_slots is not None:
        for layer, attention in enumerate(output.attention, start=1):
            errors = M.attention_equivariance_error(attention, reference.attention[layer - 1][0], model_slots)
            for head in range(errors.shape[1]):  # errors: (B, h)
                rows.add(ATTENTION_EQUIVARIANCE, layer, errors[:, head], head)


def _repeat_slots(words: list[str], matching: torch.Tensor) -> torch.Tensor | None:
    """Where each pair of same-word occurrences of `words` sits in every reordering: (B, m, 2), or None."""
    pairs = repeated_pairs(words)
    if not pairs:
        return None
    where = matching.argsort(dim=1)  # (B, n): where[b, s] = slot that X's occurrence s moved to
    return where[:, torch.tensor(pairs, device=matching.device)]  # (B, m, 2)


def record_pair(
    spec: Spec, rows: Collector, adapter: Adapter, out_a: Pass, out_b: Pass, matching: list[int] | None
) -> None:
    """Probe metrics of two single-sentence passes; matching maps b's slots to a's word occurrences, if b reorders a."""
    wanted = set(spec.metrics)
    for layer, (h_a, h_b) in enumerate(zip(out_a.hidden, out_b.hidden, strict=True)):
        if PAIR_DISTANCE_FAMILY in wanted:
            mean_a, mean_b = out_a.pooled["mean"][layer], out_b.pooled["mean"][layer]  # (1, d)
            rows.add(PAIR_COSINE, layer, M.cosine_distance(mean_a, mean_b))
            for metric, how in adapter.pair_cosine.items():
                rows.add(metric, layer, M.cosine_distance(out_a.pooled[how][layer], out_b.pooled[how][layer]))
            rows.add(PAIR_L2, layer, M.relative_l2(mean_a, mean_b))
        if TOKEN_SHIFT_FAMILY in wanted and matching is not None:
            index = torch.tensor([matching], device=h_a.device)
            rows.add(TOKEN_SHIFT, layer, M.token_shift(h_b, h_a[0], index))


def summarize(table: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """Wide view: per (case, subject, metric), each encoding's value as the registry reduces the metric, and its
    verdict: the worst (largest) value, or for a mean or a rate the largest mean over permutations of any layer and
    head (table's `mean` column), with the worst value's verdict. A table with a rate metric gets RATE_COUNT."""
    subject = np.where(table["case"] == "probe", table["input"] + " vs " + table["permuted"], table["input"])
    keys = ["case", "subject", "metric", "encoding"]
    shown = table.assign(subject=subject, value=summary_values(table))
    ordered = shown.sort_values("value", kind="mergesort", na_position="last")
    # tail(1), not last(): last() skips NaN column by column and would pair a finite value with a NaN row's verdict.
    worst = ordered.groupby(keys).tail(1)
    wide = worst.pivot(index=["case", "subject", "metric"], columns="encoding", values=["value", "verdict"])
    columns = {name: wide[("value", name)].astype(float) for name in encodings}
    columns |= {f"{name} verdict": wide[("verdict", name)] for name in encodings}
    summary = pd.DataFrame(columns).reset_index()
    rates = worst[worst["metric"].map(reduction_of) == "rate"]
    if rates.empty:
        return summary
    counts = rates.groupby(["case", "subject", "metric"])["count"].max().rename(RATE_COUNT)
    return summary.join(counts, on=["case", "subject", "metric"]).astype({RATE_COUNT: "Int64"})


def summary_values(table: pd.DataFrame) -> pd.Series:
    """Each row's value as its summary shows it: its `mean` over permutations for a mean or rate metric, else
    `value` (the worst)."""
    if "mean" not in table.columns:
        return table["value"]
    return table["value"].where(~table["metric"].map(per_permutation_mean).astype(bool), table["mean"])
