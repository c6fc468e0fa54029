"""Running a sweep: every combination of a spec streamed through the runner, as one stream of tidy frames.

Rows are grouped by combination (its columns come first and lead the sort), so each combination
streams through `loop.MeasuringLoop` on its own and memory stays one chunk's worth. Never prints.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import torch

from orderlab.core.progress import Progress
from orderlab.measure import probing
from orderlab.measure.adapters import build_adapters, compile_records
from orderlab.measure.chunking import device_batching
from orderlab.measure.intervals import over_seeds
from orderlab.measure.loop import SUMMARY_COLUMNS, Digest, Frames, MeasuringLoop, Piece, relation_columns
from orderlab.measure.rows import COLUMNS, DETAIL_COLUMNS, KEY_COLUMNS, RunResult, summarize
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.task_accuracy import (
    CHANCE,
    TASK_CASE,
    TRAINED,
    UNTRAINED,
    WEIGHTS,
    accuracy_rows,
    task_summary,
    training_work,
)
from orderlab.measure.token_logprobs import token_logprob_rows
from orderlab.metrics import DECODABILITY_FAMILY, reduction_of
from orderlab.plan.shards import DECODABILITY, Unit, opened_combinations
from orderlab.plan.sweep import SEED, Configuration, describe, in_row_order, swept_fields
from orderlab.spec.schema import Spec
from orderlab.train.adapters import trained_adapters
from orderlab.train.train import TrainedStack, train_stack


def axes(spec: Spec) -> list[str]:
    """The columns that lead every row: the swept fields, then, for a trained spec, `weights` (it measures every
    combination twice, its trained and its untrained stacks)."""
    return [*swept_fields(spec), *([WEIGHTS] if spec.train else [])]


def has_details(spec: Spec) -> bool:
    """Whether the spec writes task or probe rows, and so metrics.csv's DETAIL_COLUMNS."""
    return spec.train is not None or DECODABILITY_FAMILY in spec.metrics


class SweepMeasurement:
    """Every combination of a spec as one stream of tidy frames, in metrics.csv's sorted order.

    Rows are grouped by combination (its columns come first and lead the sort), so each
    combination streams through `loop.MeasuringLoop` on its own and memory stays one chunk's worth.
    `frames()` yields the rows and returns the Digest of every combination, tagged with its columns.
    """

    def __init__(
        self,
        spec: Spec,
        options: RunOptions = DEFAULTS,
        spec_file: Path = Path("spec.yaml"),
        units: list[Unit] | None = None,
    ):
        """spec_file: where relative paths in the spec (a model folder) start from; units: a shard's units
        (shards.partition): only they are measured, each leaving a Piece in the digest."""
        self.spec, self.spec_file = spec, spec_file
        self.device, self.progress, self.notes = options.device, options.progress, options.notes
        self.given, self.user_hooks = options.model, options.hooks
        self.axes = axes(spec)
        self.configurations = in_row_order(spec)
        # Per combination and weights: its loop and the shard's units of it (None: all its work).
        self.groups: list[tuple[Configuration, str | None, MeasuringLoop, list[Unit] | None]] = []
        self.trained: list[tuple[Configuration, TrainedStack]] = []  # every stack trained, for the checkpoints
        self.compiled: list[dict[str, object]] = []  # torch.compile's time per compiled stack (manifest.json)
        self.model_files: dict[str, list[str]] | None = None  # a checkpoint folder's unmeasured parts (manifest.json)
        self.token_logprobs: list[pd.DataFrame] = []  # token_logprobs.csv's rows per combination (token_logprobs: true)
        self.opened = set() if units is None else opened_combinations(units, spec)  # a shard's: its token rows
        self.total = 0
        for index, configuration in enumerate(self.configurations):  # each reports its progress after the ones before
            share = None if units is None else [unit for unit in units if unit.combination == index]
            for weights in (TRAINED, UNTRAINED) if spec.train else (None,):
                columns = configuration.columns | ({WEIGHTS: weights} if weights else {})
                self.total += training_work(configuration.spec) if weights == TRAINED else 0
                loop = MeasuringLoop(configuration.spec, options.chunk_size, self._after(self.total), columns, share)
                self.groups.append((configuration, weights, loop, share))
                self.total += loop.total

    @property
    def per_permutation(self) -> bool:
        return self.spec.rows == "per_permutation"

    @property
    def columns(self) -> list[str]:
        details = DETAIL_COLUMNS if has_details(self.spec) else []
        return [
            *self.axes,
            *(COLUMNS if self.per_permutation else SUMMARY_COLUMNS),
            *details,
            *relation_columns(self.spec),
        ]

    def frames(self) -> Frames:
        run, done = Digest(), 0
        self._advance(0)  # the total, before the first combination's set-up (training, loading a model)
        for configuration, weights, loop, share in self.groups:
            if share == []:
                continue  # other shards measure this combination
            spec, where = configuration.spec, describe(configuration.columns)
            if weights == TRAINED:
                stacks = self._train(spec, done, where)
                self.trained += [(configuration, stack) for stack in stacks]
                done += training_work(spec)
                accuracy = loop.tagged(accuracy_rows(spec, stacks))
                yield accuracy.reindex(columns=self.columns, fill_value="")
                run.worst.append(accuracy)  # the summary's task accuracy against chance (train: is never sharded)
                adapters = trained_adapters(spec, stacks, self.device, device_batching(self.device))
            else:
                kind = spec.model.kind
                self._note("building the stacks" if kind == "stack" else f"loading the {kind} model", where)
                adapters = build_adapters(
                    spec, self.device, self.spec_file, given=self.given, user_hooks=self.user_hooks
                )
                self.model_files = self.model_files or getattr(adapters[0], "model_files", None)
                if spec.token_logprobs and (share is None or share[0].combination in self.opened):
                    with torch.inference_mode():
                        self.token_logprobs.append(token_logprob_rows(spec, adapters, configuration.columns))
            decodability = next((unit for unit in share or [] if unit.kind == DECODABILITY), None)
            if DECODABILITY_FAMILY in self.spec.metrics and (share is None or decodability):
                self._note("probing positions", where)
                probe = probing.measure_decodability(spec, adapters)
                probe = loop.tagged(probe.sort_values(KEY_COLUMNS, kind="mergesort", ignore_index=True))
                rows = probe.reindex(columns=self.columns, fill_value="")  # no statistic: a probe row is one value
                yield rows
                if decodability is None:
                    run.worst.append(probe)
                else:
                    run.pieces.append(Piece(decodability, configuration.columns, len(rows), worst=probe))
            self._note("measuring", where)
            digest = yield from self._in_columns(loop.frames(adapters))
            self.compiled += compile_records(adapters, configuration.columns)
            done += loop.total
            run.worst += digest.worst
            run.attention += digest.attention
            run.non_finite += digest.non_finite
            for label, reach in digest.reach.items():
                run.reach_of(label).absorb(reach)
            run.pieces += digest.pieces
        return run

    def _in_columns(self, frames: Frames) -> Frames:
        """A loop's frames in this run's columns (DETAIL_COLUMNS blank on its rows); returns what the loop returned."""
        columns = self.columns
        while True:
            try:
                frame = next(frames)
            except StopIteration as end:
                digest: Digest = end.value
                return digest
            yield frame if list(frame.columns) == columns else frame.reindex(columns=columns, fill_value="")

    def _train(self, spec: Spec, before: int, where: str) -> list[TrainedStack]:
        """One stack per encoding, in label order; progress counts each step as its batch of sentences."""
        assert spec.train is not None
        batch, steps = spec.train.batch, spec.train.steps
        stacks = []
        for index, choice in enumerate(sorted(spec.encodings, key=lambda c: c.label)):
            start = before + index * steps * batch

            def step(done: int, _steps: int, start: int = start) -> None:
                self._advance(start + done * batch)

            def note(text: str, label: str = choice.label) -> None:
                self._note(f"training {label}: {text}", where)

            stacks.append(train_stack(spec, choice, step, note))
        return stacks

    def _note(self, text: str, where: str) -> None:
        """Say what the run is doing now, and for which combination of a sweep."""
        if self.notes:
            self.notes(f"{text} ({where})" if where else text)

    def _after(self, before: int) -> Progress:
        """A combination's progress callback: its sequences done, counted after the `before` of earlier ones."""
        return lambda done, _total: self._advance(before + done)

    def _advance(self, done: int) -> None:
        if self.progress:
            self.progress(done, self.total)


def run_sweep(spec: Spec, options: RunOptions = DEFAULTS) -> RunResult:
    """Every combination's rows in memory: for tests, `compare` and other small runs."""
    started = time.perf_counter()
    table = pd.concat(list(SweepMeasurement(spec, options).frames()), ignore_index=True)  # rows only
    return RunResult(table, options.device, time.perf_counter() - started)


def summarize_sweep(table: pd.DataFrame, encodings: list[str], swept: list[str]) -> pd.DataFrame:
    """`rows.summarize` per combination, then a trained spec's task accuracy per length (task_summary), with the
    swept columns after `subject`; the position probe's rows left out. Over a seed sweep, per cell the mean over
    seeds of the per-seed worst value and its t interval."""
    # Left out: the position probe's rows, and values summarised by another metric (log P per order).
    shown = table[(table["case"] != "decodability") & (table["metric"].map(reduction_of) != "none")]
    shown = pd.concat([shown, table[table["case"] == TASK_CASE]])
    if shown.empty:
        return pd.DataFrame(columns=["case", "subject", *(c for c in swept if c != SEED), "metric", *encodings])
    if not swept:
        return summarize_with_tasks(shown, encodings)
    parts = []
    for values, group in shown.groupby(swept, sort=True):
        part = summarize_with_tasks(group, encodings)
        for position, (name, value) in enumerate(zip(swept, values, strict=True), start=2):
            # pandas-stubs type group keys as Hashable; each is a cell of a swept column
            part.insert(position, name, value)  # type: ignore[arg-type]
        parts.append(part)
    per_combination = pd.concat(parts, ignore_index=True)
    return over_seeds(per_combination, SEED, encodings) if SEED in swept else per_combination


def summarize_with_tasks(table: pd.DataFrame, encodings: list[str]) -> pd.DataFrame:
    """`rows.summarize` of the order metrics, then the task accuracy rows (their CHANCE column blank elsewhere)."""
    tasks = table["case"] == TASK_CASE
    parts = [summarize(table[~tasks], encodings)] if (~tasks).any() else []
    parts += [task_summary(table[tasks], encodings)] if tasks.any() else []
    summary = pd.concat(parts, ignore_index=True)
    return summary.fillna({CHANCE: ""}) if CHANCE in summary.columns else summary
