"""The runner's parts: stack set-up from a spec, the tidy columns, the per-permutation metrics
(`record_metrics`, the one place they are defined), probes and the wide summary. Never prints.

For every encoding one stack is built with the same seeded weights, so encodings differ only in
how they inject position. orderlab/streaming.py drives these parts chunk by chunk; `run_spec`
collects its stream in memory for small runs and tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from orderlab import metrics as M
from orderlab import permutations as perms
from orderlab.metric_registry import (
    ATTENTION_EQUIVARIANCE,
    ATTENTION_FAMILY,
    EQUIVARIANCE,
    EQUIVARIANCE_FAMILY,
    INVARIANCE_FAMILY,
    INVARIANCE_FIRST,
    INVARIANCE_LAST,
    INVARIANCE_MAX,
    INVARIANCE_MEAN,
    PAIR_COSINE,
    PAIR_DISTANCE_FAMILY,
    PAIR_L2,
    PREFIX_INVARIANCE,
    PREFIX_INVARIANCE_FAMILY,
    REPEAT_COSINE,
    REPEAT_DISTANCE,
    REPEATED_WORDS_FAMILY,
    TOKEN_SHIFT,
    TOKEN_SHIFT_FAMILY,
)
from orderlab.spec import ExplicitEmbeddings, Spec
from orderlab.stack import AttentionStack, LayerWeights, StackConfig, StackOutput, explicit_weights, seeded_weights
from orderlab.text import occurrence_matching, repeated_pairs, sentence_vectors, tokenize

# The stack's invariance metrics and the pooling (orderlab.metrics.pool) each one compares.
INVARIANCE_POOLS = {INVARIANCE_MEAN: "mean", INVARIANCE_MAX: "max", INVARIANCE_FIRST: "first", INVARIANCE_LAST: "last"}
KEY_COLUMNS = ["case", "input", "encoding", "permutation", "permuted", "layer", "head", "metric"]
COLUMNS = [*KEY_COLUMNS, "value", "verdict"]

Progress = Callable[[int, int], None]  # (done, total) units of work


@dataclass(frozen=True)
class RunResult:
    metrics: pd.DataFrame  # tidy, sorted by KEY_COLUMNS
    device: str
    wall_seconds: float


def stack_config(spec: Spec) -> StackConfig:
    m = spec.model
    return StackConfig(
        d_model=m.d_model, n_heads=m.n_heads, n_layers=m.n_layers, residual=m.residual, norm=m.norm,
        ffn=m.ffn, ffn_mult=m.ffn_mult, causal=m.causal, scale=m.scale, dtype=m.dtype,
    )  # fmt: skip


def layer_weights(spec: Spec, config: StackConfig) -> list[LayerWeights]:
    w = spec.model.weights
    if w is None:
        return seeded_weights(config, spec.seed)
    return explicit_weights(config, spec.seed, w.W_Q, w.W_K, w.W_V, w.W_O)


def run_spec(
    spec: Spec, device: str = "cpu", progress: Progress | None = None, chunk_size: int | None = None
) -> RunResult:
    """Measure every input and probe under every encoding; return tidy rows, all in memory.

    `spec` must be concrete (no swept model fields; sweep.run_sweep takes those). The work streams
    through orderlab.streaming; a caller that writes files takes `Sweep.frames()` one chunk at a
    time instead, keeping memory flat however many permutations there are.
    """
    from orderlab.streaming import Sweep  # streaming builds on this module's RowCollector and record_metrics

    started = time.perf_counter()
    sweep = Sweep(spec, device, chunk_size, progress)
    table = pd.concat(list(sweep.frames()), ignore_index=True)
    return RunResult(table, device, time.perf_counter() - started)


def word_vectors(spec: Spec, words: list[str]) -> torch.Tensor:
    """(n, d) float64 vectors of a tokenized sentence: seeded per word, or the spec's explicit ones."""
    explicit = spec.embeddings.vectors if isinstance(spec.embeddings, ExplicitEmbeddings) else None
    return torch.from_numpy(sentence_vectors(words, spec.model.d_model, spec.seed, explicit))


class RowCollector:
    """Columns of tidy rows for one (case, input, encoding) and a batch of B permutations."""

    def __init__(self, case: str, sentence: str, encoding: str, permutations: list[str], permuted: list[str]):
        self.fixed = {"case": case, "input": sentence, "encoding": encoding}
        self.permutations, self.permuted = permutations, permuted
        self.columns: dict[str, list] = {c: [] for c in ("permutation", "permuted", "layer", "head", "metric", "value")}

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
    spec: Spec, rows: RowCollector, reference: StackOutput, output: StackOutput, device, slots, matching, words
) -> None:
    """Per-permutation metrics of one chunk: reference is f(X) (batch of 1), output f(PX) for the chunk.

    rows: anything with RowCollector's add and add_where; words: the input sentence's tokens.
    """
    wanted = set(spec.metrics)
    slots, matching = slots.to(device), matching.to(device)
    repeats = _repeat_slots(words, matching)  # (B, m, 2) or None
    for layer, hidden in enumerate(output.hidden):
        h_x, h_px = reference.hidden[layer][0], hidden
        if EQUIVARIANCE_FAMILY in wanted:
            rows.add(EQUIVARIANCE, layer, M.equivariance_error(h_px, h_x, slots))
        if INVARIANCE_FAMILY in wanted:
            for metric, how in INVARIANCE_POOLS.items():
                rows.add(metric, layer, M.invariance_error(h_px, h_x, how))
        if TOKEN_SHIFT_FAMILY in wanted:
            rows.add(TOKEN_SHIFT, layer, M.token_shift(h_px, h_x, matching))
        if PREFIX_INVARIANCE_FAMILY in wanted:
            keeps_last = slots[:, -1] == slots.shape[1] - 1  # (B,): only the words before the last one move
            rows.add_where(keeps_last, PREFIX_INVARIANCE, layer, M.prefix_invariance_error(h_px, h_x))
        if REPEATED_WORDS_FAMILY in wanted and repeats is not None:
            rows.add(REPEAT_DISTANCE, layer, M.repeated_word_distance(h_px, repeats))
            rows.add(REPEAT_COSINE, layer, M.repeated_word_distance(h_px, repeats, cosine=True))
    if ATTENTION_FAMILY in wanted:
        for layer, attention in enumerate(output.attention, start=1):
            errors = M.attention_equivariance_error(attention, reference.attention[layer - 1][0], slots)  # (B, h)
            for head in range(errors.shape[1]):
                rows.add(ATTENTION_EQUIVARIANCE, layer, errors[:, head], head)


def _repeat_slots(words: list[str], matching: torch.Tensor) -> torch.Tensor | None:
    """Where each pair of same-word occurrences of `words` sits in every reordering: (B, m, 2), or None."""
    pairs = repeated_pairs(words)
    if not pairs:
        return None
    where = matching.argsort(dim=1)  # (B, n): where[b, s] = slot that X's occurrence s moved to
    return where[:, torch.tensor(pairs, device=matching.device)]  # (B, m, 2)


def measure_probe(spec: Spec, stack: AttentionStack, a: str, b: str, encoding: str) -> pd.DataFrame:
    """Pooled distance of two sentences per layer, plus token shift when b reorders a's words."""
    words_a, words_b = tokenize(a, spec.embeddings.lowercase), tokenize(b, spec.embeddings.lowercase)
    out_a, out_b = stack(word_vectors(spec, words_a)[None]), stack(word_vectors(spec, words_b)[None])
    matching = occurrence_matching(words_a, words_b)
    rows = RowCollector("probe", a, encoding, [perms.label(matching) if matching else ""], [b])
    record_pair(spec, rows, out_a, out_b, matching)
    return rows.frame()


def record_pair(spec: Spec, rows, out_a: StackOutput, out_b: StackOutput, matching: list[int] | None) -> None:
    """Probe metrics of two single-sentence passes; matching maps b's slots to a's word occurrences, if b reorders a."""
    wanted = set(spec.metrics)
    for layer, (h_a, h_b) in enumerate(zip(out_a.hidden, out_b.hidden, strict=True)):
        if PAIR_DISTANCE_FAMILY in wanted:
            pooled_a, pooled_b = M.pool(h_a, "mean"), M.pool(h_b, "mean")  # (1, d)
            rows.add(PAIR_COSINE, layer, M.cosine_distance(pooled_a, pooled_b))
            rows.add(PAIR_L2, layer, M.relative_l2(pooled_a, pooled_b))
        if TOKEN_SHIFT_FAMILY in wanted and matching is not None:
            index = torch.tensor([matching], device=h_a.device)
            rows.add(TOKEN_SHIFT, layer, M.token_shift(h_b, h_a[0], index))


def summarize(table: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """Wide view: per (case, subject, metric), the worst (largest) value under each encoding and its verdict."""
    subject = np.where(table["case"] == "probe", table["input"] + " vs " + table["permuted"], table["input"])
    keys = ["case", "subject", "metric", "encoding"]
    ordered = table.assign(subject=subject).sort_values("value", kind="mergesort", na_position="last")
    # tail(1), not last(): last() skips NaN column by column and would pair a finite value with a NaN row's verdict.
    worst = ordered.groupby(keys).tail(1)[[*keys, "value", "verdict"]]
    wide = worst.pivot(index=["case", "subject", "metric"], columns="encoding", values=["value", "verdict"])
    columns = {name: wide[("value", name)].astype(float) for name in encodings}
    columns |= {f"{name} verdict": wide[("verdict", name)] for name in encodings}
    return pd.DataFrame(columns).reset_index()
