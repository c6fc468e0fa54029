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
from orderlab.errors import OrderlabError
from orderlab.measure import probing
from orderlab.measure.adapters import build_adapters, compile_records, run_decisions
from orderlab.measure.chunking import device_batching
from orderlab.measure.loop import MeasuringLoop, probe_columns
from orderlab.measure.patching import PATCHING, measure_patching
from orderlab.measure.rows import MeasuredSweep
from orderlab.measure.run_options import DEFAULTS, RunOptions
from orderlab.measure.summaries import summarize_sweep
from orderlab.measure.task_accuracy import accuracy_rows, training_work
from orderlab.measure.token_logprobs import token_logprob_rows
from orderlab.metrics import DECODABILITY_FAMILY
from orderlab.plan.shards import DECODABILITY, Unit, condition_labels, opened_combinations
from orderlab.spec.schema import Spec
from orderlab.spec.sweep import Configuration, describe, in_row_order, swept_fields
from orderlab.train.adapters import trained_adapters
from orderlab.train.checkpoint import CHECKPOINTS, write_checkpoints
from orderlab.train.train import TrainedStack, train_stack
from orderlab.vocabulary.columns import (
    COLUMNS,
    DETAIL_COLUMNS,
    KEY_COLUMNS,
    SUMMARY_COLUMNS,
    TRAINED,
    UNTRAINED,
    WEIGHTS,
)
from orderlab.vocabulary.digest import Digest, Frames, Piece


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
    `frames()` yields the rows and returns the Digest of every combination, tagged with its columns; a
    vocabulary.digest.Measurement, for results/run_writer.py.
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
        if units is not None and spec.patching is not None:
            raise OrderlabError("patching: a shard holds some orders of a run, and its patches need every pair in "
                                "one process; expected a whole run (no --shard, no --workers)")  # fmt: skip
        self.spec, self.spec_file = spec, spec_file
        self.device, self.progress, self.notes = options.device, options.progress, options.notes
        self.given, self.user_hooks = options.model, options.hooks
        self.axes = axes(spec)
        self.configurations = in_row_order(spec)
        # How the run computes (shared prefixes, compilation), decided once: adapters follow it, the manifest says it.
        self.decisions = run_decisions(spec, spec_file, self.device)
        # Per combination and weights: its loop and the shard's units of it (None: all its work).
        self.groups: list[tuple[Configuration, str | None, MeasuringLoop, list[Unit] | None]] = []
        self.trained: list[tuple[Configuration, TrainedStack]] = []  # every stack trained, for the checkpoints
        self.compiled: list[dict[str, object]] = []  # torch.compile per compiled stack or walk (manifest.json)
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
            *probe_columns(self.spec),
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
                adapters = build_adapters(spec, self.device, self.spec_file, decisions=self.decisions, given=self.given,
                                          user_hooks=self.user_hooks)  # fmt: skip
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

    def tables(self, digest: Digest) -> dict[str, pd.DataFrame]:
        """A whole run's files beside metrics.csv: summary.csv, attention.csv (between words, for the stack and the zoo
        alike) and token_logprobs.csv, those the spec asks for."""
        tables = {"summary": summarize_sweep(digest.worst_table(), condition_labels(self.spec), self.axes)}
        maps = digest.attention_table()
        if maps is not None:
            tables["attention"] = maps
        if self.token_logprobs:
            tables["token_logprobs"] = pd.concat(self.token_logprobs, ignore_index=True)
        if self.spec.patching is not None:  # activation patching between orders (measure/patching.py)
            self._note("patching", "")
            options = RunOptions(self.device, model=self.given, hooks=self.user_hooks)
            tables[PATCHING] = measure_patching(self.spec, self.spec_file, options)
        return tables

    def write_beside(self, folder: Path) -> list[str]:
        """The trained stacks' checkpoints (git-ignored: a baseline keeps only the CSVs, and `check` trains anew)."""
        if not self.trained:
            return []
        write_checkpoints(folder / CHECKPOINTS, self.trained)
        return [CHECKPOINTS]

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


def run_sweep(spec: Spec, options: RunOptions = DEFAULTS) -> MeasuredSweep:
    """Every combination's rows in memory: for tests, `compare` and other small runs."""
    started = time.perf_counter()
    table = pd.concat(list(SweepMeasurement(spec, options).frames()), ignore_index=True)  # rows only
    return MeasuredSweep(table, options.device, time.perf_counter() - started)
