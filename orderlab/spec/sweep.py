"""Sweeps: a spec whose model fields (or seed) are lists stands for the product of all their values.

`plan(spec)` expands it into concrete specs (every model field and the seed one value), each with the
columns that name its combination. Only swept fields become columns, so a spec without lists
writes exactly the columns it always did; with `n_layers: [1, 2]` and `causal: [false, true]`
every row gains `n_layers` and `causal` columns, placed first: rows read "in this stack, this
input, this encoding", and the file streams out one combination at a time. A swept `seed` comes
after the model fields ("this stack, drawn with this seed").

Pure and torch-free: spec validation uses it. orderlab/measure/sweep_measure.py runs the combinations.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from orderlab.errors import SpecError, SpecErrors, raise_all
from orderlab.spec.model_specs import CorpusInputs, HFModelSpec
from orderlab.spec.schema import DatasetInputs, ModelSpec, Spec
from orderlab.spec.yamlsource import LocatedDocument

# dtype stays one value per spec: it sets the round-off line and check's tolerances of the whole results folder.
SWEEPABLE = tuple(
    name for name in ModelSpec.model_fields if name not in ("kind", "dtype", "matmul_precision", "weights")
)
HF_SWEEPABLE = ("family", "d_model", "n_heads", "n_layers")  # a zoo model: its family and seeded shape
SEED = "seed"  # the spec's top-level seed: sweepable for every model, its column after the model fields
MAX_CONFIGURATIONS = 256  # past this a sweep is more likely a typo than a plan
SweptValue = int | bool | str  # one value of a ModelSpec field: a count, a switch or a choice


@dataclass(frozen=True)
class Configuration:
    columns: dict[str, SweptValue]  # swept field -> its value in this combination; {} when nothing is swept
    spec: Spec  # concrete: every model field holds one value

    @property
    def label(self) -> str:
        return describe(self.columns)


def describe(columns: Mapping[str, object]) -> str:
    """{'n_layers': 2, 'causal': True} -> 'n_layers=2 causal=true' (YAML spelling of booleans)."""

    def spell(value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    return " ".join(f"{name}={spell(value)}" for name, value in columns.items())


def swept_fields(spec: Spec) -> dict[str, list[SweptValue]]:
    """The fields given as lists: model fields in the order the model's spec declares them (none for packaged
    models), then the seed."""
    if isinstance(spec.model, ModelSpec):
        names = SWEEPABLE
    elif isinstance(spec.model, HFModelSpec):
        names = HF_SWEEPABLE
    else:
        names = ()
    axes = {name: getattr(spec.model, name) for name in names if isinstance(getattr(spec.model, name), list)}
    seeds = getattr(spec, SEED)  # typed as one int: sweep.py alone reads the list (orderlab/spec/fields.py)
    return axes | ({SEED: seeds} if isinstance(seeds, list) else {})


def field_path(name: str) -> tuple[str, ...]:
    """Where a swept field sits in the spec: ('seed',) or ('model', name)."""
    return (SEED,) if name == SEED else ("model", name)


def plan(spec: Spec) -> list[Configuration]:
    """Every combination of the swept values (first field varies slowest), as concrete specs."""
    axes = swept_fields(spec)
    configurations = []
    for values in itertools.product(*axes.values()):
        columns = dict(zip(axes, values, strict=True))
        model = spec.model.model_copy(update={name: v for name, v in columns.items() if name != SEED})
        update = {"model": model} | ({SEED: columns[SEED]} if SEED in columns else {})
        configurations.append(Configuration(columns, spec.model_copy(update=update)))
    return configurations


def in_row_order(spec: Spec) -> list[Configuration]:
    """The combinations in the order their rows appear in metrics.csv: sorted by their columns' values."""
    return sorted(plan(spec), key=lambda configuration: tuple(configuration.columns.values()))


def validate_sweep(spec: Spec, doc: LocatedDocument, check: Callable[[Spec, LocatedDocument], None]) -> None:
    """Refuse repeated or too many values, then run `check` on every combination, naming it in errors."""
    axes = swept_fields(spec)
    for name, values in axes.items():
        repeated = [v for i, v in enumerate(values) if v in values[:i]]
        if repeated:
            message = f"{repeated[0]!r} is listed twice; expected distinct values to sweep over"
            raise doc.error(field_path(name), message)
    if SEED in axes and isinstance(spec.inputs, CorpusInputs | DatasetInputs):
        raise doc.error((SEED,), "corpus mode runs its file once; expected one seed (inputs.seed seeds the shuffles)")
    count = 1
    for values in axes.values():
        count *= len(values)
    if count > MAX_CONFIGURATIONS:
        sizes = " x ".join(f"{len(v)} {k}" for k, v in axes.items())
        message = f"the sweep has {sizes} = {count} combinations; expected at most {MAX_CONFIGURATIONS}"
        raise doc.error(("model",) if SEED not in axes else (), message)
    problems: list[SpecError] = []
    for configuration in plan(spec):
        try:
            check(configuration.spec, doc)
        except SpecErrors as errors:
            problems += [in_combination(one, configuration) for one in errors.problems]
        except SpecError as error:
            problems.append(in_combination(error, configuration))
    raise_all(problems)


def in_combination(error: SpecError, configuration: Configuration) -> SpecError:
    """The error naming the sweep combination it was found in (as it is, for a spec without a sweep)."""
    if not configuration.columns:
        return error
    detail = f"{error.detail} (in the sweep combination {configuration.label})"
    return SpecError(detail, file=error.file, line=error.line, field=error.field)
