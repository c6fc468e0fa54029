"""Streaming sweeps: permutations go through the stack a chunk at a time; metrics are reduced as they stream.

All orderings of 8 words are 40,320 sequences, of 9 words 362,880: building them all, or all their
rows, makes memory grow with n!. Here permutations come from a lazy iterator in the order of the
tidy CSV, f(X) is computed once per input and encoding, and each chunk's metrics (computed by
runner.record_metrics, the one place metrics are defined) either leave at once as tidy rows or are folded
into a running max (with the permutation that reaches it) and an exact mean. Peak memory is one
chunk's working set. A sequence's numbers do not depend on the chunk it landed in (see
`aligned_forward`), so results do not depend on the chunk size. Never prints.
"""

from __future__ import annotations

import ctypes
import heapq
import math
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace

import pandas as pd
import torch

from orderlab import permutations as perms
from orderlab.batching import aligned_batch
from orderlab.encodings import build_encoding
from orderlab.estimate import CPU_CHUNK_BYTES, GPU_CHUNK_BYTES, available_memory, sequence_values, sequences_per_chunk
from orderlab.exactsum import ExactSum
from orderlab.metric_registry import ATTENTION_FAMILY, noise_families
from orderlab.noise import NoiseCollector, NoiseKey, judge, merge
from orderlab.runner import (
    COLUMNS,
    KEY_COLUMNS,
    RowCollector,
    layer_weights,
    record_metrics,
    record_pair,
    stack_config,
    word_vectors,
)
from orderlab.spec import Spec, encoding_context, longest_sentence
from orderlab.stack import AttentionStack, StackConfig, StackOutput
from orderlab.text import occurrence_matching, tokenize
from orderlab.verdicts import twin_dtype

SUMMARY_COLUMNS = [*KEY_COLUMNS, "statistic", "value", "verdict"]
STATISTICS = ("max", "mean")  # what a summary row reduces over the permutations


Advance = Callable[[int, int], None]  # (done, total) sequences


def tune_allocator() -> None:
    """Keep glibc malloc from returning each chunk's large tensors to the OS and mapping them again.

    Measured: per-chunk mmap/munmap of the 8-32 MB activations cost up to 40% of a sweep's time.
    Raising the mmap threshold to glibc's maximum (32 MiB) and the trim threshold keeps that
    memory in the heap for the next chunk, so peak memory is unchanged. No-op off glibc.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # from <malloc.h>
    libc.mallopt(m_mmap_threshold, 32 * 2**20)
    libc.mallopt(m_trim_threshold, 512 * 2**20)


def auto_chunk_size(config: StackConfig, n: int, attention_maps: bool, device: torch.device) -> int:
    """Sequences per chunk such that one chunk's activations fit the budget for `device`."""
    itemsize = torch.finfo(getattr(torch, config.dtype)).bits // 8
    values = sequence_values(n, config.d_model, config.ffn_mult, config.n_layers, config.n_heads, attention_maps)
    budget = CPU_CHUNK_BYTES if device.type == "cpu" else GPU_CHUNK_BYTES
    if device.type == "cuda":
        budget = min(budget, torch.cuda.mem_get_info(device)[0] // 4)
    else:
        budget = min(budget, available_memory() // 4)
    return sequences_per_chunk(values, itemsize, budget)


def aligned_forward(stack: AttentionStack, x: torch.Tensor, attention_maps: bool) -> StackOutput:
    """stack(x) for x (B, n, d), computed on aligned_batch(x) and cut back to B sequences."""
    B = x.shape[0]
    output = stack(aligned_batch(x), attention_maps)
    return StackOutput([h[:B] for h in output.hidden], [a[:B] for a in output.attention])


class SummaryCollector:
    """RowCollector's `add` and `add_where`, folding each chunk into a running max (and its first
    permutation) and an exact mean."""

    def __init__(self, case: str, sentence: str, encoding: str, words: list[str]):
        self.fixed = {"case": case, "input": sentence, "encoding": encoding}
        self.words = words
        self.chunk: list[perms.Permutation] = []
        self.worst: dict[tuple, tuple[float, perms.Permutation]] = {}  # (layer, head, metric) -> max, where
        self.first: dict[tuple, perms.Permutation] = {}  # (layer, head, metric) -> its first permutation
        self.sums: dict[tuple, ExactSum] = {}
        self.counts: dict[tuple, int] = {}

    def start(self, chunk: list[perms.Permutation]) -> None:
        self.chunk = chunk

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        """values: (B,), one per permutation of the current chunk."""
        self._fold((layer, head, metric), values, self.chunk)

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        """Fold only the permutations where keep (B,) is True; values: (B,)."""
        chosen = [p for p, k in zip(self.chunk, keep.cpu().tolist(), strict=True) if k]
        if chosen:
            self._fold((layer, None, metric), values[keep], chosen)

    def _fold(self, key: tuple, values: torch.Tensor, chunk: list[perms.Permutation]) -> None:
        top, where = values.max(dim=0)  # the first maximum; NaN wins
        self.first.setdefault(key, chunk[0])
        top_value = float(top)
        known = self.worst.get(key)
        if known is None or top_value > known[0] or (math.isnan(top_value) and not math.isnan(known[0])):
            self.worst[key] = (top_value, chunk[int(where)])
        self.sums.setdefault(key, ExactSum()).add(values.double().cpu().numpy())
        self.counts[key] = self.counts.get(key, 0) + len(chunk)

    def frame(self) -> pd.DataFrame:
        """Two rows per (layer, head, metric): the max with its permutation, and the mean."""
        columns: dict[str, list] = {c: [] for c in ("permutation", "permuted", "layer", "head", "metric")}
        columns |= {"statistic": [], "value": []}
        for (layer, head, metric), (top, where) in self.worst.items():
            for statistic, label, permuted, value in (
                ("max", perms.label(where), " ".join(perms.apply(where, self.words)), top),
                ("mean", "", "", self.sums[(layer, head, metric)].mean(self.counts[(layer, head, metric)])),
            ):
                for column, item in zip(columns, (label, permuted, layer, head, metric, statistic, value), strict=True):
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


class FanOut:
    """Passes each `add` and `add_where` to several collectors: one record_metrics call feeds rows and summary."""

    def __init__(self, *collectors):
        self.collectors = collectors

    def add(self, *args, **kwargs) -> None:
        for collector in self.collectors:
            collector.add(*args, **kwargs)

    def add_where(self, *args, **kwargs) -> None:
        for collector in self.collectors:
            collector.add_where(*args, **kwargs)


class Sweep:
    """One concrete spec's measurements as a stream of tidy frames, already in metrics.csv's sorted order.

    Concrete: no swept model fields (sweep.SweepRun runs each combination through one of these).

    Iterate `frames()` once; afterwards `worst()` holds the max rows every summary table needs.
    """

    def __init__(self, spec: Spec, device: str = "cpu", chunk_size: int | None = None, progress: Advance | None = None):
        self.spec, self.device, self.chunk_size, self.progress = spec, torch.device(device), chunk_size, progress
        self.config = stack_config(spec)
        self.attention_maps = ATTENTION_FAMILY in spec.metrics
        self.per_permutation = spec.rows == "per_permutation"
        lowercase = spec.embeddings.lowercase
        sequences = sum(perms.count(i.permutations, len(tokenize(i.sentence, lowercase))) for i in spec.inputs)
        self.total = len(spec.encodings) * (sequences + len(spec.probes))
        self.done = 0
        self.non_finite = 0  # rows whose value (or round-off) came out NaN or inf
        self.worst_frames: list[pd.DataFrame] = []
        # The round-off pass also measures the metrics others take their noise from (token_shift for repeated words).
        self.noise_spec = spec.model_copy(update={"metrics": noise_families(spec.metrics)})

    def frames(self) -> Iterator[pd.DataFrame]:
        spec = self.spec
        weights = layer_weights(spec, self.config)
        context = encoding_context(spec, longest_sentence(spec))
        choices = sorted(spec.encodings, key=lambda c: c.label)
        stacks = [(c.label, *self.build_stacks(c, context, weights)) for c in choices]
        rules: dict[str, list] = {}
        for item in spec.inputs:
            rules.setdefault(item.sentence, []).append(item.permutations)
        for sentence in sorted(rules):
            for label, stack, twin in stacks:
                yield from self.sweep_sentence(stack, twin, sentence, rules[sentence], label)
        probes = []
        for label, stack, twin in stacks:
            for a, b in spec.probes:
                probes.append(self.measure_probe(stack, twin, a, b, label))
                self.advance(1)
        if probes:
            table = pd.concat(probes, ignore_index=True)
            self.worst_frames.append(table)
            if not self.per_permutation:
                both = [table.assign(statistic=s) for s in STATISTICS]
                table = pd.concat(both, ignore_index=True).sort_values([*KEY_COLUMNS, "statistic"], kind="mergesort")
                yield table[SUMMARY_COLUMNS]
            else:
                yield table.sort_values(KEY_COLUMNS, kind="mergesort", na_position="first")[COLUMNS]

    def build_stacks(self, choice, context, weights) -> tuple[AttentionStack, AttentionStack]:
        """The stack of this encoding, and its twin in the other precision (same weights, same encoding object)."""
        encoding = build_encoding(choice.name, replace(context, device=str(self.device)), choice.params)
        twin_config = replace(self.config, dtype=twin_dtype(self.config.dtype))
        return (
            AttentionStack(self.config, encoding, weights, str(self.device)),
            AttentionStack(twin_config, encoding, weights, str(self.device)),
        )

    def measure_noise(self, twin: AttentionStack, x: torch.Tensor, reference: StackOutput, words) -> NoiseCollector:
        """Every metric between f(X) and the twin's f(X) (identity permutation): the round-off it carries."""
        dtype = x.dtype
        other = aligned_forward(twin, x[None], self.attention_maps)
        other = StackOutput([h.to(dtype) for h in other.hidden], [a.to(dtype) for a in other.attention])
        identity = torch.arange(len(words), device=x.device)[None]  # (1, n)
        noise = NoiseCollector()
        record_metrics(self.noise_spec, noise, other, reference, x.device, identity, identity, words)
        return noise

    @torch.inference_mode()
    def measure_probe(self, stack: AttentionStack, twin: AttentionStack, a: str, b: str, label: str) -> pd.DataFrame:
        """A probe's rows with verdicts: pair metrics of a and b, judged by the round-off of each side's pass."""
        spec = self.spec
        words_a, words_b = tokenize(a, spec.embeddings.lowercase), tokenize(b, spec.embeddings.lowercase)
        x_a, x_b = (word_vectors(spec, words)[None].to(stack.dtype) for words in (words_a, words_b))
        out_a, out_b = stack(x_a), stack(x_b)
        matching = occurrence_matching(words_a, words_b)
        rows = RowCollector("probe", a, label, [perms.label(matching) if matching else ""], [b])
        record_pair(spec, rows, out_a, out_b, matching)
        sides = []
        for x, out, words in ((x_a, out_a, words_a), (x_b, out_b, words_b)):
            other = twin(x)
            other = StackOutput([h.to(stack.dtype) for h in other.hidden], [])
            sides.append(NoiseCollector())
            record_pair(self.noise_spec, sides[-1], other, out, list(range(len(words))))
        table = rows.frame()
        self.non_finite += judge(table, merge(*sides), self.config.dtype)
        return table

    def sweep_sentence(
        self, stack: AttentionStack, twin: AttentionStack, sentence: str, rules: list, label: str
    ) -> Iterator[pd.DataFrame]:
        """All permutations of one sentence under one encoding, chunk by chunk."""
        spec, device = self.spec, stack.device
        words = tokenize(sentence, spec.embeddings.lowercase)
        n = len(words)
        with torch.inference_mode():
            x = word_vectors(spec, words).to(device=device, dtype=stack.dtype)  # (n, d)
            reference = aligned_forward(stack, x[None], self.attention_maps)  # f(X): once per input and encoding
            noise = self.measure_noise(twin, x, reference, words).figures
        ordered = [perms.in_label_order(rule, n, spec.seed) for rule in rules]
        stream = ordered[0] if len(ordered) == 1 else heapq.merge(*ordered, key=perms.label)
        size = self.chunk_size or auto_chunk_size(self.config, n, self.attention_maps, device)
        summary = SummaryCollector("permutation", sentence, label, words)
        for chunk in perms.chunks(stream, size):
            summary.start(chunk)
            if not self.per_permutation:
                self.measure_chunk(stack, x, reference, chunk, words, summary)
                self.advance(len(chunk))
                continue
            reordered = [" ".join(perms.apply(p, words)) for p in chunk]
            rows = RowCollector("permutation", sentence, label, [perms.label(p) for p in chunk], reordered)
            self.measure_chunk(stack, x, reference, chunk, words, FanOut(rows, summary))
            self.advance(len(chunk))
            table = self.with_verdicts(rows.frame(), noise)
            yield table.sort_values(KEY_COLUMNS, kind="mergesort", na_position="first")[COLUMNS]
        table = self.with_verdicts(summary.frame(), noise, count=not self.per_permutation)
        summary.name_first_where_round_off(table)
        self.worst_frames.append(table[table["statistic"] == "max"])
        if not self.per_permutation:
            order = ["layer", "head", "metric", "statistic"]
            yield table.sort_values(order, kind="mergesort", na_position="first")[SUMMARY_COLUMNS]

    @torch.inference_mode()
    def measure_chunk(self, stack, x, reference, chunk, words, collector) -> None:
        """Forward one chunk of permutations of x (n, d) and pass its metrics to the collector."""
        device = stack.device
        slots = torch.tensor(chunk, dtype=torch.long, device=device)  # (B, n)
        matching = slots  # without repeated words, occurrence matching is the permutation itself
        if len(set(words)) < len(words):
            matches = [occurrence_matching(words, perms.apply(p, words)) for p in chunk]
            matching = torch.tensor(matches, dtype=torch.long, device=device)  # (B, n)
        output = aligned_forward(stack, x[slots], self.attention_maps)  # hidden: (B, n, d) each
        record_metrics(self.spec, collector, reference, output, device, slots, matching, words)

    def worst(self) -> pd.DataFrame:
        """Per group, layer, head and metric the max over permutations (probes as they are), for `summarize`."""
        return pd.concat(self.worst_frames, ignore_index=True)

    def with_verdicts(self, table: pd.DataFrame, noise: dict[NoiseKey, float], count: bool = True) -> pd.DataFrame:
        """Verdicts from the measured round-off; `count` adds the table's non-finite rows to the run's tally."""
        non_finite = judge(table, noise, self.config.dtype)
        self.non_finite += non_finite if count else 0
        return table

    def advance(self, sequences: int) -> None:
        self.done += sequences
        if self.progress:
            self.progress(self.done, self.total)
