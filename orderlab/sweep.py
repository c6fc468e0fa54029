"""Sweeps: a spec whose model fields are lists stands for the product of all their values.

`plan(spec)` expands it into concrete specs (every model field one value), each with the
columns that name its combination. Only swept fields become columns, so a spec without lists
writes exactly the columns it always did; with `n_layers: [1, 2]` and `causal: [false, true]`
every row gains `n_layers` and `causal` columns, placed first: rows read "in this stack, this
input, this encoding", and the file streams out one combination at a time.

Planning is pure and torch-free (spec validation uses it); `SweepRun` imports the streaming
runner lazily and runs each combination through it.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orderlab.errors import SpecError
from orderlab.metric_registry import DECODABILITY_FAMILY
from orderlab.spec import ModelSpec, Spec
from orderlab.yamlsource import LocatedDocument

if TYPE_CHECKING:
    import pandas as pd

    from orderlab.runner import Progress, RunResult

# dtype stays one value per spec: it sets the verdict tolerance of the whole results folder.
SWEEPABLE = tuple(name for name in ModelSpec.model_fields if name not in ("kind", "dtype", "weights"))
MAX_CONFIGURATIONS = 256  # past this a sweep is more likely a typo than a plan


@dataclass(frozen=True)
class Configuration:
    columns: dict[str, Any]  # swept field -> its value in this combination; {} when nothing is swept
    spec: Spec  # concrete: every model field holds one value

    @property
    def label(self) -> str:
        return describe(self.columns)


def describe(columns: dict[str, Any]) -> str:
    """{'n_layers': 2, 'causal': True} -> 'n_layers=2 causal=true' (YAML spelling of booleans)."""
    spell = lambda v: str(v).lower() if isinstance(v, bool) else str(v)  # noqa: E731
    return " ".join(f"{name}={spell(value)}" for name, value in columns.items())


def swept_fields(spec: Spec) -> dict[str, list]:
    """The model fields given as lists, in the order ModelSpec declares them (none for pretrained models)."""
    if not isinstance(spec.model, ModelSpec):
        return {}
    return {name: getattr(spec.model, name) for name in SWEEPABLE if isinstance(getattr(spec.model, name), list)}


def plan(spec: Spec) -> list[Configuration]:
    """Every combination of the swept values (first field varies slowest), as concrete specs."""
    axes = swept_fields(spec)
    configurations = []
    for values in itertools.product(*axes.values()):
        columns = dict(zip(axes, values, strict=True))
        model = spec.model.model_copy(update=columns)
        configurations.append(Configuration(columns, spec.model_copy(update={"model": model})))
    return configurations


def check_sweep(spec: Spec, doc: LocatedDocument, check: Callable[[Spec, LocatedDocument], None]) -> None:
    """Refuse repeated or too many values, then run `check` on every combination, naming it in errors."""
    axes = swept_fields(spec)
    for name, values in axes.items():
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            raise doc.error(("model", name), f"{repeated[0]!r} is listed twice; expected distinct values to sweep over")
    count = 1
    for values in axes.values():
        count *= len(values)
    if count > MAX_CONFIGURATIONS:
        sizes = " x ".join(f"{len(v)} {k}" for k, v in axes.items())
        message = f"the sweep has {sizes} = {count} combinations; expected at most {MAX_CONFIGURATIONS}"
        raise doc.error(("model",), message)
    for configuration in plan(spec):
        try:
            check(configuration.spec, doc)
        except SpecError as error:
            if not configuration.columns:
                raise
            detail = f"{error.detail} (in the sweep combination {configuration.label})"
            raise SpecError(detail, file=error.file, line=error.line, field=error.field) from None


class SweepRun:
    """Every combination of a spec as one stream of tidy frames, in metrics.csv's sorted order.

    Rows are grouped by combination (its columns come first and lead the sort), so each
    combination streams through `streaming.Sweep` on its own and memory stays one chunk's worth.
    Iterate `frames()` once; afterwards `digest()` holds the small part every summary needs.
    """

    def __init__(
        self, spec: Spec, device: str = "cpu", chunk_size: int | None = None, progress: Progress | None = None
    ):
        from orderlab.streaming import Sweep

        self.spec, self.device, self.progress = spec, device, progress
        self.swept = list(swept_fields(spec))
        self.configurations = sorted(plan(spec), key=lambda c: tuple(c.columns.values()))  # the CSV's row order
        self.sweeps = [Sweep(c.spec, device, chunk_size) for c in self.configurations]
        self.total = sum(sweep.total for sweep in self.sweeps)
        self.digests: list[pd.DataFrame] = []

    @property
    def non_finite(self) -> int:
        """Rows so far whose value came out NaN or inf, over every combination."""
        return sum(sweep.non_finite for sweep in self.sweeps)

    @property
    def columns(self) -> list[str]:
        from orderlab.runner import COLUMNS
        from orderlab.streaming import SUMMARY_COLUMNS

        return [*self.swept, *(COLUMNS if self.spec.rows == "per_permutation" else SUMMARY_COLUMNS)]

    def frames(self) -> Iterator[pd.DataFrame]:
        from orderlab import probing
        from orderlab.runner import KEY_COLUMNS

        done = 0
        for configuration, sweep in zip(self.configurations, self.sweeps, strict=True):
            sweep.progress = lambda part, _, before=done: self._advance(before + part)
            if DECODABILITY_FAMILY in self.spec.metrics:
                probe = probing.measure_decodability(configuration.spec, self.device)
                probe = self._tag(probe.sort_values(KEY_COLUMNS, kind="mergesort", ignore_index=True), configuration)
                self.digests.append(probe)
                yield probe.reindex(columns=self.columns)
            for frame in sweep.frames():
                yield self._tag(frame, configuration)[self.columns]
            self.digests.append(self._tag(sweep.worst(), configuration))
            done += sweep.total

    def digest(self) -> pd.DataFrame:
        """Per combination, group, layer, head and metric the max over permutations; probe rows as they are."""
        import pandas as pd

        return pd.concat(self.digests, ignore_index=True)

    def _tag(self, frame: pd.DataFrame, configuration: Configuration) -> pd.DataFrame:
        return frame.assign(**configuration.columns)

    def _advance(self, done: int) -> None:
        if self.progress:
            self.progress(done, self.total)


def run_sweep(
    spec: Spec, device: str = "cpu", progress: Progress | None = None, chunk_size: int | None = None
) -> RunResult:
    """Every combination's rows in memory: for tests, `compare` and other small runs."""
    import pandas as pd

    from orderlab.runner import RunResult

    started = time.perf_counter()
    table = pd.concat(list(SweepRun(spec, device, chunk_size, progress).frames()), ignore_index=True)
    return RunResult(table, device, time.perf_counter() - started)


def summarize_sweep(table: pd.DataFrame, encodings: list[str], swept: list[str]) -> pd.DataFrame:
    """`runner.summarize` per combination, with the swept columns after `subject`; probe rows left out."""
    import pandas as pd

    from orderlab.runner import summarize

    errors = table[table["case"] != "decodability"]
    if errors.empty:
        return pd.DataFrame(columns=["case", "subject", *swept, "metric", *encodings])
    if not swept:
        return summarize(errors, encodings)
    parts = []
    for values, group in errors.groupby(swept, sort=True):
        part = summarize(group, encodings)
        for position, (name, value) in enumerate(zip(swept, values, strict=True), start=2):
            part.insert(position, name, value)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)
