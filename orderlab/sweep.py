"""Sweeps: a spec whose model fields are lists stands for the product of all their values.

`plan(spec)` expands it into concrete specs (every model field one value), each with the
columns that name its combination. Only swept fields become columns, so a spec without lists
writes exactly the columns it always did; with `n_layers: [1, 2]` and `causal: [false, true]`
every row gains `n_layers` and `causal` columns, placed just before `encoding`.

Planning is pure and torch-free (spec validation uses it); `run_sweep` imports the runner
lazily and runs each combination with the ordinary `run_spec`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from orderlab.errors import SpecError
from orderlab.spec import ModelSpec, Spec
from orderlab.yamlsource import LocatedDocument

if TYPE_CHECKING:
    import pandas as pd

    from orderlab.runner import Progress, RunResult

# dtype stays one value per spec: it sets the verdict tolerance of the whole results folder.
SWEEPABLE = tuple(name for name in ModelSpec.model_fields if name not in ("dtype", "weights"))
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
    """The model fields given as lists, in the order ModelSpec declares them."""
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


def key_columns(base: list[str], swept: list[str]) -> list[str]:
    """Insert the swept fields just before `encoding`: which stack a row measures reads left to right."""
    at = base.index("encoding")
    return [*base[:at], *swept, *base[at:]]


def run_sweep(spec: Spec, device: str = "cpu", progress: Progress | None = None) -> RunResult:
    """Run every combination with `run_spec` (plus the position probe), tag rows with the combination, sort."""
    import pandas as pd

    from orderlab import probing
    from orderlab.runner import COLUMNS, KEY_COLUMNS, RunResult, run_spec

    started = time.perf_counter()
    configurations = plan(spec)
    swept = list(swept_fields(spec))
    frames = []
    for index, configuration in enumerate(configurations):

        def advance(done: int, total: int, index: int = index) -> None:
            if progress:
                progress(index * total + done, len(configurations) * total)

        tables = [run_spec(configuration.spec, device, advance).metrics]
        if "decodability" in spec.metrics:
            tables.append(probing.measure_decodability(configuration.spec, device))
        frame = pd.concat(tables, ignore_index=True)
        for name, value in configuration.columns.items():
            frame[name] = value
        frames.append(frame)
    keys = key_columns(KEY_COLUMNS, swept)
    table = pd.concat(frames, ignore_index=True)
    table = table.sort_values(keys, kind="mergesort", na_position="first", ignore_index=True)
    return RunResult(table[key_columns(COLUMNS, swept)], device, time.perf_counter() - started)


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
