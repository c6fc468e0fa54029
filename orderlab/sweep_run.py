"""Running a sweep: every combination of a spec streamed through the runner, as one stream of tidy frames.

Rows are grouped by combination (its columns come first and lead the sort), so each combination
streams through `streaming.MeasuringLoop` on its own and memory stays one chunk's worth. Never prints.
"""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import torch

from orderlab import probing
from orderlab.devices import CPU
from orderlab.metric_registry import DECODABILITY_FAMILY
from orderlab.models import build_adapters
from orderlab.rows import COLUMNS, KEY_COLUMNS, Progress, RunResult, summarize
from orderlab.shards import DECODABILITY, Unit
from orderlab.spec import Spec
from orderlab.streaming import SUMMARY_COLUMNS, Digest, Frames, MeasuringLoop, Piece
from orderlab.sweep import in_row_order, swept_fields


class SweepRun:
    """Every combination of a spec as one stream of tidy frames, in metrics.csv's sorted order.

    Rows are grouped by combination (its columns come first and lead the sort), so each
    combination streams through `streaming.MeasuringLoop` on its own and memory stays one chunk's worth.
    `frames()` yields the rows and returns the Digest of every combination, tagged with its columns.
    """

    def __init__(
        self,
        spec: Spec,
        device: torch.device = CPU,
        chunk_size: int | None = None,
        progress: Progress | None = None,
        spec_file: Path = Path("spec.yaml"),
        units: list[Unit] | None = None,
    ):
        """spec_file: where relative paths in the spec (a model folder) start from.
        units: a shard's units (shards.partition): only they are measured, each leaving a Piece in the digest."""
        self.spec, self.device, self.progress, self.spec_file = spec, device, progress, spec_file
        self.swept = list(swept_fields(spec))
        self.configurations = in_row_order(spec)
        # Per combination, the shard's units of it (None: all its work).
        self.shares = [None if units is None else [u for u in units if u.combination == index]
                       for index in range(len(self.configurations))]  # fmt: skip
        self.loops: list[MeasuringLoop] = []
        for configuration, share in zip(self.configurations, self.shares, strict=True):
            before = sum(loop.total for loop in self.loops)  # each reports its progress after the ones before it
            loop = MeasuringLoop(configuration.spec, chunk_size, self._after(before), configuration.columns, share)
            self.loops.append(loop)
        self.total = sum(loop.total for loop in self.loops)

    @property
    def per_permutation(self) -> bool:
        return self.spec.rows == "per_permutation"

    @property
    def columns(self) -> list[str]:
        return [*self.swept, *(COLUMNS if self.per_permutation else SUMMARY_COLUMNS)]

    def frames(self) -> Frames:
        run = Digest()
        for configuration, loop, share in zip(self.configurations, self.loops, self.shares, strict=True):
            if share == []:
                continue  # other shards measure this combination
            adapters = build_adapters(configuration.spec, self.device, self.spec_file)
            decodability = next((unit for unit in share or [] if unit.kind == DECODABILITY), None)
            if DECODABILITY_FAMILY in self.spec.metrics and (share is None or decodability):
                probe = probing.measure_decodability(configuration.spec, adapters)
                probe = loop.tagged(probe.sort_values(KEY_COLUMNS, kind="mergesort", ignore_index=True))
                rows = probe.reindex(columns=self.columns, fill_value="")  # no statistic: a probe row is one value
                yield rows
                if decodability is None:
                    run.worst.append(probe)
                else:
                    run.pieces.append(Piece(decodability, configuration.columns, len(rows), worst=probe))
            digest = yield from loop.frames(adapters)
            run.worst += digest.worst
            run.attention += digest.attention
            run.non_finite += digest.non_finite
            run.pieces += digest.pieces
        return run

    def _after(self, before: int) -> Progress:
        """A combination's progress callback: its sequences done, counted after the `before` of earlier ones."""
        return lambda done, _total: self._advance(before + done)

    def _advance(self, done: int) -> None:
        if self.progress:
            self.progress(done, self.total)


def run_sweep(
    spec: Spec, device: torch.device = CPU, progress: Progress | None = None, chunk_size: int | None = None
) -> RunResult:
    """Every combination's rows in memory: for tests, `compare` and other small runs."""
    started = time.perf_counter()
    table = pd.concat(list(SweepRun(spec, device, chunk_size, progress).frames()), ignore_index=True)  # rows only
    return RunResult(table, device, time.perf_counter() - started)


def summarize_sweep(table: pd.DataFrame, encodings: list[str], swept: list[str]) -> pd.DataFrame:
    """`rows.summarize` per combination, with the swept columns after `subject`; probe rows left out."""
    errors = table[table["case"] != "decodability"]
    if errors.empty:
        return pd.DataFrame(columns=["case", "subject", *swept, "metric", *encodings])
    if not swept:
        return summarize(errors, encodings)
    parts = []
    for values, group in errors.groupby(swept, sort=True):
        part = summarize(group, encodings)
        for position, (name, value) in enumerate(zip(swept, values, strict=True), start=2):
            # pandas-stubs type group keys as Hashable; each is a cell of a swept column
            part.insert(position, name, value)  # type: ignore[arg-type]
        parts.append(part)
    return pd.concat(parts, ignore_index=True)
