"""Streaming sweeps: permutations go through the stack a chunk at a time; metrics are reduced as they stream.

All orderings of 8 words are 40,320 sequences, of 9 words 362,880: building them all, or all their
rows, makes memory grow with n!. Here permutations come from a lazy iterator in the order of the
tidy CSV, f(X) is computed once per input and encoding, and each chunk's metrics (computed by
metric_computations.record_metrics, the one place they are computed) either leave at once as tidy rows or are
folded into a running max (with the permutation that reaches it) and an exact mean. Peak memory is one
chunk's working set. A sequence's numbers do not depend on the chunk it landed in (the adapters pad
every pass to whole row tiles, batching.py), so results do not depend on the chunk size. Never prints.

A shard (orderlab/plan/shards.py) runs this same loop on its units only: a range of a sentence's permutations
ends not in summary rows but in a Partial (the running max, exact sum and count, and the round-off), which
orderlab/results/merge.py folds with the other shards' partials and finishes with the `finish_summary` this loop uses
(measure/summaries.py).
"""

from __future__ import annotations

import ctypes
import itertools
import math
import sys
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from orderlab.core import permutations as perms
from orderlab.core.hook_points import pattern_points
from orderlab.core.minimal_pair_file import PAIR_GROUP_COLUMNS, PHENOMENON_COLUMN, UID_COLUMN
from orderlab.core.pair_relations import RELATION_COLUMN
from orderlab.core.progress import Progress
from orderlab.core.text import occurrence_matching, tokenize
from orderlab.measure.attention_maps import AttentionCapture, shown_maps
from orderlab.measure.escalation import escalates, reached_lines, unresolvable, widest_lines
from orderlab.measure.metric_computations import record_metrics, record_pair
from orderlab.measure.noise import NoiseCollector, judge, merge
from orderlab.measure.replay import ChunkRecord
from orderlab.measure.rows import Collector, RowCollector
from orderlab.measure.summaries import finish_parts
from orderlab.measure.verdicts import noise_scale, ties, without_order
from orderlab.metrics import ATTENTION_FAMILY, noise_families
from orderlab.models.precision import dtype_name
from orderlab.plan.shards import PERMUTATIONS, PROBES, Unit, condition_labels
from orderlab.spec.schema import ProbePair, Spec
from orderlab.spec.sweep import SweptValue
from orderlab.vocabulary.columns import COLUMNS, KEY_COLUMNS, STATISTICS, SUMMARY_COLUMNS
from orderlab.vocabulary.digest import (
    Digest,
    Frames,
    Judged,
    NoiseKey,
    Partial,
    Piece,
    Reach,
    StatKey,
    Summary,
    tag,
)

if TYPE_CHECKING:
    from orderlab.models.adapter_protocol import Adapter, Pass, Sentence


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


class SummaryCollector(Summary):
    """RowCollector's `add` and `add_where` for a running Summary: each chunk's values fold into its max (and first
    permutation) and exact mean."""

    def __init__(self, case: str, sentence: str, encoding: str, words: list[str]):
        super().__init__(case, sentence, encoding, words)
        self.chunk: list[perms.Permutation] = []
        self.tied: np.ndarray | None = None  # the current chunk's ties (mark_ties)

    def start(self, chunk: list[perms.Permutation]) -> None:
        self.chunk, self.tied = chunk, None

    def mark_ties(self, tied: torch.Tensor | None) -> None:
        """tied (B,): which permutations of the current chunk answer a rate metric within their round-off."""
        self.tied = None if tied is None else tied.cpu().numpy().astype(bool)

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        """values: (B,), one per permutation of the current chunk."""
        self._fold((layer, head, metric), values, self.chunk, self.tied)

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        """Fold only the permutations where keep (B,) is True; values: (B,)."""
        mask = keep.cpu().numpy().astype(bool)
        chosen = [p for p, k in zip(self.chunk, mask, strict=True) if k]
        if chosen:
            self._fold((layer, None, metric), values[keep], chosen, None if self.tied is None else self.tied[mask])

    def _fold(
        self, key: StatKey, values: torch.Tensor, chunk: list[perms.Permutation], tied: np.ndarray | None
    ) -> None:
        top, where = values.max(dim=0)  # the first maximum; NaN wins
        self.fold(key, float(top), chunk[int(where)], values.double().cpu().numpy(), chunk, tied)


@dataclass
class Setting:
    """A sentence in one precision: its model and bound sentence, f(X), the round-off its verdicts are judged by, and
    the running summary of the orders measured in it (the run's, or the twin's for the orders it re-measures)."""

    adapter: Adapter
    bound: Sentence
    reference: Pass
    noise: dict[NoiseKey, float]
    dtype: str
    summary: SummaryCollector


class FanOut:
    """Passes each `add` and `add_where` to several collectors: one record_metrics call feeds rows and summary."""

    def __init__(self, *collectors: Collector):
        self.collectors = collectors

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        for collector in self.collectors:
            collector.add(metric, layer, values, head)

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        for collector in self.collectors:
            collector.add_where(keep, metric, layer, values)

    def mark_ties(self, tied: torch.Tensor | None) -> None:
        for collector in self.collectors:
            collector.mark_ties(tied)


class MeasuringLoop:
    """One concrete spec's measurements as a stream of tidy frames, already in metrics.csv's sorted order.

    Concrete: no swept model fields (sweep_measure.SweepMeasurement runs each combination through one of these).
    The models come as adapters (orderlab/models), one per condition (encoding or position ablation),
    so this one loop measures the attention stack and pretrained models alike.
    `frames(adapters)` yields the rows and returns the run's Digest; the loop keeps no results itself.
    """

    def __init__(
        self,
        spec: Spec,
        chunk_size: int | None = None,
        progress: Progress | None = None,
        combination: Mapping[str, SweptValue] | None = None,
        units: list[Unit] | None = None,
    ):
        """combination: the swept fields' values this concrete spec stands for, written first on every row.
        units: a shard's units of this combination (shards.partition); None measures everything."""
        self.spec, self.chunk_size, self.progress = spec, chunk_size, progress
        self.combination = dict(combination or {})
        self.dtype = spec.model.dtype
        self.attention_maps = ATTENTION_FAMILY in spec.metrics
        self.per_permutation = spec.rows == "per_permutation"
        self.units = None if units is None else {unit.segment[1:]: unit for unit in units}
        lowercase = spec.embeddings.lowercase
        sequences = sum(perms.count(i.permutations, tokenize(i.sentence, lowercase)) for i in spec.sentences)
        self.total = len(condition_labels(spec)) * (sequences + len(spec.probes))
        if units is not None:
            self.total = sum(unit.weight for unit in units if unit.kind in (PERMUTATIONS, PROBES))
        # The round-off pass also measures the metrics others take their noise from (token_shift for repeated words).
        self.noise_spec = spec.model_copy(update={"metrics": noise_families(spec.metrics)})
        self.finer: dict[str, tuple[Adapter, Adapter]] = {}  # per condition: its finer model and that one's twin

    def finer_pair(self, adapter: Adapter) -> tuple[Adapter, Adapter]:
        """A condition's model in the twin's precision, its passes cut as the run's (Adapter.finer: shared prefixes
        where the run shares them), with its own round-off twin (built once per condition)."""
        if adapter.label not in self.finer:
            finer = adapter.finer()
            self.finer[adapter.label] = (finer, finer.twin())
        return self.finer[adapter.label]

    def escalates(self, noise: dict[NoiseKey, float], dtype: str) -> bool:
        return escalates(noise, dtype, self.spec.resolution, self.spec.escalate)

    def frames(self, adapters: list[Adapter]) -> Frames:
        spec, digest, done = self.spec, Digest(), 0

        def advance(sequences: int) -> None:
            nonlocal done
            done += sequences
            if self.progress:
                self.progress(done, self.total)

        pairs = [(adapter, adapter.twin()) for adapter in adapters]
        rules: dict[str, list[perms.Rule]] = {}
        for item in spec.sentences:
            rules.setdefault(item.sentence, []).append(item.permutations)
        capture = AttentionCapture(shown_maps(spec)) if self.attention_maps and spec.sentences else None
        for sentence in sorted(rules):
            shown = capture if capture and capture.shown.sentence == sentence else None
            for adapter, twin in pairs:
                unit = self.units.get((PERMUTATIONS, sentence, adapter.label)) if self.units is not None else None
                if self.units is not None and unit is None:
                    continue  # another shard's
                held = shown if unit is None or unit.start == 0 else None  # maps come from the first range
                for frame in self.sweep_sentence(adapter, twin, sentence, rules[sentence], digest, advance, held, unit):
                    yield self.tagged(frame)
        probes = []
        probe_unit = self.units.get((PROBES, "", "")) if self.units is not None else None
        for adapter, twin in pairs if self.units is None or probe_unit else []:
            for probe in spec.probes:
                table, non_finite = self.measure_probe(adapter, twin, probe, digest.reach_of(adapter.label))
                digest.non_finite += non_finite
                probes.append(table)
                advance(1)
        if probes:
            worst = pd.concat(probes, ignore_index=True)
            if not self.per_permutation:
                both = [worst.assign(statistic=s) for s in STATISTICS]
                table = pd.concat(both, ignore_index=True).sort_values([*KEY_COLUMNS, "statistic"], kind="mergesort")
                table = table[SUMMARY_COLUMNS + probe_columns(spec)]
            else:
                table = worst.sort_values(KEY_COLUMNS, kind="mergesort", na_position="first")
                table = table[COLUMNS + probe_columns(spec)]
            yield self.tagged(table)
            if probe_unit is None:
                digest.worst.append(worst)
            else:
                digest.pieces.append(Piece(probe_unit, self.combination, len(table), worst=self.tagged(worst)))
        digest.worst = [self.tagged(table) for table in digest.worst]
        digest.attention = [self.tagged(capture.frame())] if capture and capture.frames else []
        return digest

    def tagged(self, frame: pd.DataFrame) -> pd.DataFrame:
        return tag(frame, self.combination)

    def maps(self, adapter: Adapter) -> list[str]:
        """What a pass asks for beside its states: every layer's attention pattern when the spec measures attention."""
        return pattern_points(adapter.n_layers) if self.attention_maps else []

    def noise_collector(self, adapter: Adapter, twin: Adapter, words: list[str]) -> NoiseCollector:
        """A collector of the run-vs-twin differences, scaled to the round-off of the precision the adapter's passes
        really compute in (a float64 model that takes its softmax in float32 computes in float32: verdicts.py)."""
        computed = dtype_name(adapter.computed_dtype(words))
        return NoiseCollector(noise_scale(computed, dtype_name(twin.dtype)))

    def measure_noise(self, adapter: Adapter, twin: Adapter, words: list[str], reference: Pass) -> NoiseCollector:
        """Every metric between f(X) and the twin's f(X) (identity permutation): the round-off it carries."""
        identity = torch.arange(len(words), device=adapter.device)[None]  # (1, n)
        sentence = twin.sentence(words)
        other = sentence.forward(identity, self.maps(twin)).cast(adapter.dtype)
        noise = self.noise_collector(adapter, twin, words)
        model_slots = sentence.attention_slots(identity) if self.attention_maps else None
        record_metrics(self.noise_spec, noise, adapter, other, reference, identity, identity, words, model_slots)
        if reference.logprob is not None and other.logprob is not None:
            noise.margin = float((reference.logprob - other.logprob).abs().max().double()) * noise.scale
        return noise

    @torch.inference_mode()
    def measure_probe(
        self,
        adapter: Adapter,
        twin: Adapter,
        probe: ProbePair,
        reach: Reach,
        dtype: str | None = None,
        tie_round_off: float = math.nan,
    ) -> tuple[pd.DataFrame, int]:
        """A probe's rows with verdicts (pair metrics of a and b, judged by the round-off of each side's pass; for a
        pair of different words, whether they are told apart; a preference within both sides' round-off, a tie), and
        how many came out non-finite. Measured again in the twin's precision where the round-off is too coarse for
        the resolution (escalation.py); dtype: the precision of `adapter`, the run's unless escalated. A tie is judged
        by the run's own round-off even then (tie_round_off): its model's weights are the run's, and a margin within
        the run's precision is what may flip against another precision's model."""
        spec, (a, b), escalated, dtype = self.spec, probe.pair, dtype is not None, dtype or self.dtype
        words_a, words_b = tokenize(a, spec.embeddings.lowercase), tokenize(b, spec.embeddings.lowercase)
        out_a, out_b = (adapter.sentence(w).forward(identity(w, adapter)) for w in (words_a, words_b))
        matching = occurrence_matching(words_a, words_b)
        sides = []
        for out, words in ((out_a, words_a), (out_b, words_b)):
            other = twin.sentence(words).forward(identity(words, twin)).cast(adapter.dtype)
            sides.append(self.noise_collector(adapter, twin, words))
            record_pair(self.noise_spec, sides[-1], adapter, other, out, list(range(len(words))))
            if out.logprob is not None and other.logprob is not None:
                sides[-1].margin = float((out.logprob - other.logprob).abs().max().double()) * sides[-1].scale
        noise = merge(*sides)
        if not escalated and self.escalates(noise, dtype):  # once: the twin's verdicts stand, resolved or not
            finer, finer_twin = self.finer_pair(adapter)
            reach.remeasured += 1
            reach.remeasured_in = dtype_name(finer.dtype)
            margin_round_off = max(side.margin for side in sides)
            return self.measure_probe(finer, finer_twin, probe, reach, dtype_name(finer.dtype), margin_round_off)
        reach.widen(widest_lines(noise, dtype), dtype)
        rows = RowCollector("probe", a, adapter.label, [perms.label(matching) if matching else ""], [b])
        if out_a.logprob is not None and out_b.logprob is not None:
            margin, size = out_a.logprob - out_b.logprob, torch.maximum(out_a.logprob.abs(), out_b.logprob.abs())
            round_off = float(np.fmax(tie_round_off, max(side.margin for side in sides)))  # fmax: NaN never wins
            tied = ties(margin.double().cpu().numpy(), round_off, size.cpu().numpy(), self.dtype)
            rows.mark_ties(torch.from_numpy(tied))
        record_pair(spec, rows, adapter, out_a, out_b, matching)
        table = rows.frame()
        non_finite = judge(table, noise, dtype, spec.resolution)
        if not probe.reorders:
            table["verdict"] = without_order(table["verdict"].to_numpy())
        if has_relations(spec):
            table[RELATION_COLUMN] = probe.relation
        if has_groups(spec):
            table[PHENOMENON_COLUMN], table[UID_COLUMN] = probe.phenomenon or "", probe.uid or ""
        return table, non_finite

    def sweep_sentence(
        self,
        adapter: Adapter,
        twin: Adapter,
        sentence: str,
        rules: list[perms.Rule],
        digest: Digest,
        advance: Callable[[int], None],
        capture: AttentionCapture | None,
        unit: Unit | None = None,
    ) -> Generator[pd.DataFrame]:
        """All permutations of one sentence under one condition, chunk by chunk; its max rows go to the digest.

        Where the round-off is too coarse for the resolution (escalation.py), the orders the run's precision leaves
        unresolved are measured again in the twin's, chunk by chunk (measure_orders).
        unit: a shard's range of them, whose summary goes to the digest as a Partial instead; None: all of them."""
        spec, label = self.spec, adapter.label
        words = tokenize(sentence, spec.embeddings.lowercase)
        start, stop = (unit.start, unit.stop) if unit else (0, None)
        stream = perms.in_label_order_range(rules, words, spec.seed, start, stop)
        size = self.chunk_size or adapter.chunk_size(len(words), self.attention_maps)
        chunks = perms.chunks(stream, size)
        first = next(chunks, [])
        reach = digest.reach_of(label)
        with torch.inference_mode():
            bound = adapter.sentence(words)
            reference, head = self.first_pass(adapter, bound, first)
            round_off = self.measure_noise(adapter, twin, words, reference)
            summary = SummaryCollector("permutation", sentence, label, words)
            run = Setting(adapter, bound, reference, round_off.figures, self.dtype, summary)
            escalating = self.escalates(run.noise, self.dtype)
            finer = self.finer_setting(adapter, sentence, label, words) if escalating else None
        unresolved = unresolvable(run.noise, self.dtype, spec.resolution) if finer else {}
        if capture:
            capture.keep_original(label, reference.patterns(), bound.word_maps)
        rows_written, remeasured = 0, 0
        for chunk in itertools.chain([first] if first else [], chunks):
            # ties are judged by the run's own precision (measure_probe), in the twin's passes too
            output, tables, again = self.measure_orders(run, finer, unresolved, chunk, head, round_off.margin, digest)
            head = None  # the first chunk's pass, measured: not held while the others run
            remeasured += again
            if capture:
                capture.keep_shown(label, chunk, output.patterns(), bound.word_maps)
            advance(len(chunk))
            if self.per_permutation:
                table = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
                rows_written += len(table)
                yield table.sort_values(KEY_COLUMNS, kind="mergesort", na_position="first")[COLUMNS]
        reach.remeasured += remeasured
        if finer is not None and remeasured:
            reach.remeasured_in = finer.dtype
        twin_round_off = None if finer is None else (finer.noise, finer.dtype)
        reach.widen(*reached_lines(run.noise, self.dtype, spec.resolution, twin_round_off))
        # Shown reorderings this pass never reached (not in the rule, or in a later shard's range): the same
        # model runs them once more.
        if capture and (missing := capture.missing(label)):
            with torch.inference_mode():
                orders = torch.tensor(missing, dtype=torch.long, device=adapter.device)
                shown = bound.forward(orders, pattern_points(adapter.n_layers)).patterns()
                capture.keep_shown(label, missing, shown, bound.word_maps)
        twin_part = None if finer is None else Judged(finer.summary, finer.noise, finer.dtype)
        if unit is not None:  # a shard's range: finished by the merge, with the other shards' ranges
            partial = Partial(summary, run.noise, self.dtype, spec.resolution, twin_part)
            digest.pieces.append(Piece(unit, self.combination, rows_written, partial=partial))
            return
        parts = [Judged(summary, run.noise, self.dtype), *([twin_part] if twin_part else [])]
        summary_rows, worst, judged = finish_parts(parts, spec.resolution)
        digest.non_finite += 0 if self.per_permutation else judged  # per-permutation rows were counted already
        digest.worst.append(worst)
        if not self.per_permutation:
            yield summary_rows

    def finer_setting(self, adapter: Adapter, sentence: str, label: str, words: list[str]) -> Setting:
        """The twin's precision for this sentence, set up before any order needs it: its f(X) and its own round-off
        (measured against its own twin), so every shard of the sentence judges its re-measured orders alike."""
        finer, finer_twin = self.finer_pair(adapter)
        bound = finer.sentence(words)
        reference, _ = self.first_pass(finer, bound, [])
        noise = self.measure_noise(finer, finer_twin, words, reference).figures
        summary = SummaryCollector("permutation", sentence, label, words)
        return Setting(finer, bound, reference, noise, dtype_name(finer.dtype), summary)

    def measure_orders(
        self,
        run: Setting,
        finer: Setting | None,
        unresolved: Mapping[NoiseKey, float],
        chunk: list[perms.Permutation],
        head: Pass | None,
        margin_round_off: float,
        digest: Digest,
    ) -> tuple[Pass, list[pd.DataFrame], int]:
        """A chunk in the run's precision; where the sentence escalates (finer), the orders with a judged value within
        a line wider than the resolution (`unresolved`) measured again in the twin's, each order's values going to its
        precision's summary (and rows, judged by its round-off). Returns the run's pass (its attention maps are shown),
        the judged row tables (per_permutation: else none), and how many orders were measured again."""
        if finer is None:
            collector, rows = self.collecting(run, chunk)
            output = self.measure_chunk(run.adapter, run.bound, run.reference, chunk, collector, head, margin_round_off)
            return output, self.judged(run, rows, digest), 0
        record = ChunkRecord()
        output = self.measure_chunk(run.adapter, run.bound, run.reference, chunk, record, head, margin_round_off)
        again = record.unresolved(unresolved, len(chunk))
        tables = []
        kept = [order for order, redo in zip(chunk, again.tolist(), strict=True) if not redo]
        if kept:
            collector, rows = self.collecting(run, kept)
            record.replay(collector, ~again)
            tables += self.judged(run, rows, digest)
        redone = [order for order, redo in zip(chunk, again.tolist(), strict=True) if redo]
        size = self.chunk_size or finer.adapter.chunk_size(len(finer.bound.words), self.attention_maps)  # its bytes
        for start in range(0, len(redone), size):
            part = redone[start : start + size]
            collector, rows = self.collecting(finer, part)
            self.measure_chunk(finer.adapter, finer.bound, finer.reference, part, collector, None, margin_round_off)
            tables += self.judged(finer, rows, digest)
        return output, tables, len(redone)

    def collecting(self, setting: Setting, orders: list[perms.Permutation]) -> tuple[Collector, RowCollector | None]:
        """Where the orders' values go: the setting's running summary, and rows of their own in per_permutation mode."""
        setting.summary.start(orders)
        if not self.per_permutation:
            return setting.summary, None
        reordered = [" ".join(perms.apply(p, setting.bound.words)) for p in orders]
        rows = RowCollector("permutation", setting.summary.fixed["input"], setting.summary.fixed["encoding"],
                            [perms.label(p) for p in orders], reordered)  # fmt: skip
        return FanOut(rows, setting.summary), rows

    def judged(self, setting: Setting, rows: RowCollector | None, digest: Digest) -> list[pd.DataFrame]:
        """The rows, judged by the round-off of the precision they were measured in (none outside per_permutation)."""
        if rows is None:
            return []
        table = rows.frame()
        digest.non_finite += judge(table, setting.noise, setting.dtype, self.spec.resolution)
        return [table]

    def first_pass(self, adapter: Adapter, bound: Sentence, chunk: list[perms.Permutation]) -> tuple[Pass, Pass | None]:
        """f(X), and the first chunk's pass, from one forward: the identity rides in the first chunk (as its first row
        where the chunk starts with it, as `all` does; else as one row more) rather than in a pass of its own.

        A reordering's numbers do not depend on its batch (every pass runs on whole row tiles: batching.py), so this
        is the reference its own pass gives; a causal LM's shared prefixes then walk the trie once, not twice."""
        n = len(bound.words)
        ident = tuple(range(n))
        orders = chunk if chunk and chunk[0] == ident else [ident, *chunk]
        output = bound.forward(torch.tensor(orders, dtype=torch.long, device=adapter.device), self.maps(adapter))
        reference = output.rows(0, 1, copy=True)  # kept for the whole sentence: not a view of the chunk's memory
        if not chunk:
            return reference, None
        return reference, output if orders is chunk else output.rows(1)

    @torch.inference_mode()
    def measure_chunk(
        self,
        adapter: Adapter,
        bound: Sentence,
        reference: Pass,
        chunk: list[perms.Permutation],
        collector: Collector,
        output: Pass | None = None,
        margin_round_off: float = math.nan,
    ) -> Pass:
        """One chunk of reorderings of the bound sentence through the model (unless its pass is given); its metrics
        go to the collector, with the ties of its 0/1 answers: log P(PX) - log P(X) within margin_round_off (log P(X)'s
        round-off measured in the run's own precision)."""
        words, device = bound.words, adapter.device
        slots = torch.tensor(chunk, dtype=torch.long, device=device)  # (B, n)
        matching = slots  # without repeated words, occurrence matching is the permutation itself
        if len(set(words)) < len(words):
            matches = [occurrence_matching(words, perms.apply(p, words)) for p in chunk]
            matching = torch.tensor(matches, dtype=torch.long, device=device)  # (B, n)
        if output is None:
            output = bound.forward(slots, self.maps(adapter))  # hidden: (B, n, d) each
        model_slots = bound.attention_slots(slots) if self.attention_maps else None
        if output.logprob is not None and reference.logprob is not None:
            margin = (output.logprob - reference.logprob).double().cpu().numpy()
            size = np.full(margin.shape, float(reference.logprob[0].abs()))
            collector.mark_ties(torch.from_numpy(ties(margin, margin_round_off, size, self.dtype)))
        record_metrics(self.spec, collector, adapter, reference, output, slots, matching, words, model_slots)
        return output


def has_relations(spec: Spec) -> bool:
    """Whether a probe pair is not a reordering, so that metrics.csv and summary.csv say each pair's relation."""
    return any(not probe.reorders for probe in spec.probes)


def has_groups(spec: Spec) -> bool:
    """Whether a probe pair names its phenomenon (a BLiMP-format file's), so that metrics.csv says each pair's."""
    return any(probe.phenomenon is not None for probe in spec.probes)


def probe_columns(spec: Spec) -> list[str]:
    """The columns a spec's probes add to metrics.csv: each pair's relation, then its phenomenon and UID, each only
    where some pair has one, so that other results keep their columns."""
    return [RELATION_COLUMN] * has_relations(spec) + list(PAIR_GROUP_COLUMNS) * has_groups(spec)


def identity(words: list[str], adapter: Adapter) -> torch.Tensor:
    """The unpermuted order of a sentence, as a batch of one: (1, n)."""
    return torch.arange(len(words), device=adapter.device)[None]
