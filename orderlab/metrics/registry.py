"""The metric registry: every metric a run writes to a CSV, and the families a spec lists under `metrics:`.

A metric is registered by the decorator on the function that computes it (`row_metric`), or, when another pass
writes its rows (the position probe, a train: block, corpus mode), by `metric` with that pass named. The record
says which family produces it, which models write it, the sentence vector it compares (its pooling: a model writes
it only if it defines that pooling), whether it has one row per head, how summaries reduce it, the word its verdict
gives within the measured round-off (and whose round-off that is: measure/verdicts.py), its definition in one line
and how the measuring loop computes it. Everything that counts, orders, judges, estimates or documents metrics reads
these records. Must not import torch, numpy or pandas: spec validation reads the families here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar, get_args

from orderlab.core.registry import Registry

Model = Literal["stack", "pretrained"]  # the synthetic attention stack, or a pretrained (packaged or hf) model
Passing = Literal["equivariant", "invariant", "indistinguishable"]
# How summary.csv and the terminal's summary table reduce a metric over permutations: the worst value ("max"; with
# the mean in `rows: summary`), the mean ("mean": a typical size, whose verdict is the worst value's), the share of
# permutations a 0/1 flag marks ("rate", shown with the count), the corpus statistics ("corpus": mean, median,
# share above the threshold), the rank it gives the original among its reorderings ("rank": 1 + how many a rate's
# flags prefer, of how many sentences), the mean over labelled examples with a bootstrap interval ("examples": a
# classifier's metrics, metrics/task_predictions.py), or nothing ("none": one row per layer already, or a measured
# value per row whose summary another metric gives).
Reduction = Literal["max", "mean", "rate", "rank", "corpus", "examples", "none"]
RATE_COUNT: Final = "permutations"  # summary.csv's column: on a rate's row, how many permutations it is over
# summary.csv's column beside RATE_COUNT: on a rate's row, how many 0/1 answers were ties (a margin within round-off),
# left out of the rate and its count
RATE_TIES: Final = "ties"
# A sentence vector: the mean, element-wise max, first or last of the states over a sentence, or an encoder's [CLS].
Pooling = Literal["mean", "max", "first", "last", "cls"]
# What a loop computation compares: f(X) against a chunk of f(PX) (metrics/inputs.Reorderings), or a probe's two
# sentences (metrics/inputs.ProbePasses).
Compares = Literal["reorderings", "probes"]
Layers = Literal["states", "maps", "last"]  # layers 0..L of the states, 1..L of the attention maps, or L alone
# What a computation needs beside the passes, checked by the loop and counted by the estimate: a sentence repeating a
# word, attention maps (asked for by the attention family), a causal LM's log-probabilities, a probe whose second
# sentence reorders the first's words.
Needs = Literal["repeated words", "attention maps", "log-probabilities", "a reordering"]
Keep = Literal[
    "every reordering", "last word kept"
]  # which reorderings write rows: all, or those keeping the last word

BOTH: Final[tuple[Model, ...]] = ("stack", "pretrained")
STACK: Final[tuple[Model, ...]] = ("stack",)
PRETRAINED: Final[tuple[Model, ...]] = ("pretrained",)

# The poolings each kind of model defines (its adapter's `poolings`, read by the run-size estimate too): the stack
# pools over its words; a pretrained encoder over all its tokens (as sentence-transformers) and by its [CLS] state;
# a causal LM by the mean only, since its first token is BOS, the same in every order.
STACK_POOLINGS: Final[tuple[Pooling, ...]] = ("mean", "max", "first", "last")
ENCODER_POOLINGS: Final[tuple[Pooling, ...]] = ("mean", "cls")
CAUSAL_POOLINGS: Final[tuple[Pooling, ...]] = ("mean",)

# (what, layer, pooling) -> (B,), or (B, h) per head; `what` is a Reorderings or a ProbePasses (metrics/inputs.py)
Value = Callable[[Any, int, "Pooling | None"], Any]
F = TypeVar("F", bound=Value)


def declared(owner: str, **fields: tuple[object, Any]) -> None:
    """Each field's value is one its Literal type allows, checked when a metric is registered: a plug-in's
    `layers="every"` was a KeyError at validate, and `passing="fine"` a verdict written as "fine"."""
    for name, (value, allowed) in fields.items():
        options = [None if option is type(None) else option for option in get_args(allowed) or (allowed,)]
        choices = [choice for option in options for choice in get_args(option) or (option,)]
        if value not in choices:
            shown = ", ".join(map(repr, choices))
            raise ValueError(f"{owner}: {name}={value!r}; expected one of {shown}")


@dataclass(frozen=True)
class MetricFamily:
    """A value of a spec's `metrics:` list: it switches on the row metrics whose `family` it is."""

    name: str
    default: bool  # measured by a spec without a `metrics` key
    doc: str


@dataclass(frozen=True)
class Computation:
    """How the measuring loop computes a metric's rows from what it compares: its value at one layer, which layers,
    what it needs beside the passes and which reorderings write rows."""

    compares: Compares
    value: Value
    layers: Layers = "states"
    needs: Needs | None = None
    keep: Keep = "every reordering"

    def __post_init__(self) -> None:
        declared(f"a computation on {self.compares}", compares=(self.compares, Compares), layers=(self.layers, Layers),
                 needs=(self.needs, Needs | None), keep=(self.keep, Keep))  # fmt: skip

    def rows(self, n_layers: int, n_heads: int, per_head: bool) -> int:
        """Rows one reordering (or probe) writes, in a model of `n_layers` layers and `n_heads` heads."""
        layers = {"states": n_layers + 1, "maps": n_layers, "last": 1}[self.layers]
        return layers * (n_heads if per_head else 1)


@dataclass(frozen=True, eq=False)
class Metric:
    """One value of the `metric` column of a metrics.csv."""

    name: str
    family: str | None  # the `metrics:` entry that writes it; None: always written in its mode (corpus)
    models: tuple[Model, ...]
    rows: str  # what one row is for, e.g. "permutation × layer"
    per_head: bool
    reduction: Reduction
    passing: Passing | None  # the verdict within the measured round-off; None: not judged by round-off
    noise_from: str | None  # the metric whose round-off judges this one; None: its own
    pooling: Pooling | None  # the sentence vector it compares; None: it compares states (or log-probabilities)
    doc: str  # the definition, one line of markdown
    computed_by: str  # where its rows are computed: "the loop", or the pass of its own that writes them
    computations: list[Computation] = field(default_factory=list)  # the loop's, one per kind of comparison
    flag: tuple[str, str] | None = None  # a 0/1 flag's verdicts at 0 and at 1, in place of a round-off verdict

    def __post_init__(self) -> None:
        declared(f"metric {self.name!r}", reduction=(self.reduction, Reduction), passing=(self.passing, Passing | None),
                 pooling=(self.pooling, Pooling | None), **{f"models[{i}]": (m, Model) for i, m in
                 enumerate(self.models)})  # fmt: skip
        if self.flag is not None and not (len(self.flag) == 2 and all(isinstance(word, str) for word in self.flag)):
            raise ValueError(f"metric {self.name!r}: flag={self.flag!r}; expected two verdict words (at 0, at 1)")

    @property
    def noise_source(self) -> str:
        """The metric whose measured round-off judges this one's rows."""
        return self.noise_from or self.name

    def computation(self, compares: Compares) -> Computation | None:
        """How the loop computes this metric from `compares`, or None when it does not."""
        return next((c for c in self.computations if c.compares == compares), None)

    def also_on(self, compares: Compares, *, needs: Needs | None = None) -> Callable[[F], F]:
        """Decorate a second computation of this metric, from another kind of comparison (token_shift on probes)."""

        def register(value: F) -> F:
            if self.computation(compares) is not None:
                raise ValueError(f"metric {self.name!r} already has a computation on {compares}")
            self.computations.append(Computation(compares, value, needs=needs))
            return value

        return register


METRIC_FAMILIES: Registry[MetricFamily] = Registry("metric family")
METRICS: Registry[Metric] = Registry("metric")
ROW_ORDER: list[str] = []  # the metrics' row order as declared (declare_row_order), not as imported or decorated


def family(name: str, doc: str, default: bool = False) -> str:
    """Register a `metrics:` entry; its row metrics name it as their family."""
    return METRIC_FAMILIES.register(name, MetricFamily(name, default, doc)).name


def metric(
    name: str, family: str | None, models: tuple[Model, ...], rows: str, doc: str, *, computed_by: str,
    per_head: bool = False, reduction: Reduction = "max", passing: Passing | None = "invariant",
    noise_from: str | None = None, pooling: Pooling | None = None, flag: tuple[str, str] | None = None,
) -> Metric:  # fmt: skip
    """Register a row metric; its family and noise source must be registered already."""
    if family is not None:
        METRIC_FAMILIES.get(family)
    if noise_from is not None:
        METRICS.get(noise_from)
    record = Metric(name, family, models, rows, per_head, reduction, passing, noise_from, pooling, doc, computed_by,
                    flag=flag)  # fmt: skip
    return METRICS.register(name, record)


def row_metric(
    name: str, family: str | None, models: tuple[Model, ...], rows: str, doc: str, *,
    compares: Compares = "reorderings", layers: Layers = "states", needs: Needs | None = None,
    keep: Keep = "every reordering", per_head: bool = False, reduction: Reduction = "max",
    passing: Passing | None = "invariant", noise_from: str | None = None, pooling: Pooling | None = None,
    flag: tuple[str, str] | None = None,
) -> Callable[[F], F]:  # fmt: skip
    """Register the decorated function as metric `name`, computed by the measuring loop from `compares`.

    The function takes (what it compares, layer, the metric's pooling) and returns one value per reordering (or per
    head); it imports its tensor maths when it runs, so that the registry stays torch-free.
    """

    def register(value: F) -> F:
        try:  # checked before the metric is registered, so that a bad declaration leaves no half-made metric
            computation = Computation(compares, value, layers, needs, keep)
        except ValueError as error:
            raise ValueError(f"metric {name!r}: {error}") from None
        record = metric(name, family, models, rows, doc, computed_by="the loop", per_head=per_head,
                        reduction=reduction, passing=passing, noise_from=noise_from, pooling=pooling,
                        flag=flag)  # fmt: skip
        record.computations.append(computation)
        return value

    return register


def family_names() -> list[str]:
    """Every `metrics:` entry, in registration order."""
    return METRIC_FAMILIES.names()


def default_families() -> list[str]:
    """The families a spec without a `metrics` key measures."""
    return [name for name in METRIC_FAMILIES.names() if METRIC_FAMILIES.get(name).default]


def declare_row_order(*names: str) -> None:
    """Declare the row order of registered metrics (metrics/__init__.py does, for the built-ins); ValueError for a
    name given twice, the registry's one line for a name it does not hold."""
    if len(set(names)) != len(names):
        raise ValueError(f"metric row order: a name given twice in {list(names)}")
    for name in names:
        METRICS.get(name)
    ROW_ORDER[:] = names


def _row_group(m: Metric) -> int:
    """The default families' stack rows first, then the other stack rows, the pretrained-only rows, and last those
    never summarised: the order of the terminal's summary tables and of the docs."""
    if m.reduction in ("none", "corpus", "rank", "examples"):
        return 3
    if "stack" not in m.models:
        return 2
    return 0 if m.family is not None and METRIC_FAMILIES.get(m.family).default else 1


def _row_place(m: Metric) -> tuple[int, int]:
    """Its group, then its place in the declared row order; a metric not declared (one added from outside orderlab)
    follows the declared ones of its group, in registration order."""
    return _row_group(m), ROW_ORDER.index(m.name) if m.name in ROW_ORDER else len(ROW_ORDER)


def all_metrics() -> list[Metric]:
    """Every row metric, in row order (by group, then as declared)."""
    return sorted((METRICS.get(name) for name in METRICS.names()), key=_row_place)


def metric_names() -> list[str]:
    """Every row metric's name, in row order."""
    return [m.name for m in all_metrics()]


def metrics_of(family: str, model: Model | None = None, poolings: Collection[Pooling] | None = None) -> list[Metric]:
    """The row metrics `family` switches on, in row order: all, or those that `model` writes when it defines
    `poolings` (every pooling when None)."""
    METRIC_FAMILIES.get(family)
    chosen = [m for m in all_metrics() if m.family == family]
    return chosen if model is None else [m for m in chosen if written_by(m, model, poolings)]


def written_by(metric: Metric, model: Model, poolings: Collection[Pooling] | None = None) -> bool:
    """Whether a model of kind `model` that defines `poolings` (every pooling when None) writes `metric`: the metric
    is one of its kind's, and compares its states or a sentence vector it defines."""
    return model in metric.models and (metric.pooling is None or poolings is None or metric.pooling in poolings)


def computed_on(
    compares: Compares, families: Collection[str], model: Model, poolings: Collection[Pooling]
) -> list[tuple[Metric, Computation]]:
    """The metrics of `families` the loop computes on `compares` that a `model` defining `poolings` writes, in row
    order (read from the registry on every call: a metric registered later is seen)."""
    return [
        (m, c)
        for m in all_metrics()
        if m.family in families and written_by(m, model, poolings) and (c := m.computation(compares)) is not None
    ]


def loop_rows(
    compares: Compares, families: Collection[str], model: Model, poolings: Collection[Pooling], n_layers: int,
    n_heads: int, have: Collection[Needs],
) -> dict[Keep, int]:  # fmt: skip
    """Rows one reordering (or probe) writes, by which reorderings write them, when what `have` names is at hand
    (the run-size estimate's count of what the loop writes)."""
    rows: dict[Keep, int] = {"every reordering": 0, "last word kept": 0}
    for m, c in computed_on(compares, families, model, poolings):
        if c.needs is None or c.needs in have:
            rows[c.keep] += c.rows(n_layers, n_heads, m.per_head)
    return rows


def reads_states(families: Iterable[str], model: Model, poolings: Collection[Pooling]) -> bool:
    """Whether the loop's metrics of `families` (and of the metrics their round-off comes from) read a pass's states,
    sentence vectors or maps, rather than its log-probabilities alone: a causal LM's passes that feed none skip the
    last word's own state, the trie's deepest depth (models/kv_prefix.py)."""
    chosen, compared = noise_families(families), get_args(Compares)
    return any(
        c.needs != "log-probabilities" or m.pooling is not None
        for compares in compared
        for m, c in computed_on(compares, chosen, model, poolings)
    )


def reads_logprobs(families: Iterable[str], model: Model, poolings: Collection[Pooling]) -> bool:
    """Whether the loop's metrics of `families` (and of the metrics their round-off comes from) read a causal LM's
    log-probabilities: a run whose metrics read none runs no LM head (models/kv_prefix.py, models/pretrained.py)."""
    chosen, compared = noise_families(families), get_args(Compares)
    return any(
        c.needs == "log-probabilities"
        for compares in compared
        for _, c in computed_on(compares, chosen, model, poolings)
    )


def noise_families(families: Iterable[str]) -> list[str]:
    """`families`, then those whose metrics the round-off pass must also measure to judge them."""
    chosen = list(families)
    sources = [METRICS.get(m.noise_source).family for family in chosen for m in metrics_of(family)]
    return list(dict.fromkeys([*chosen, *(f for f in sources if f is not None)]))


def reduction_of(metric: str) -> Reduction:
    """How summaries reduce `metric` over permutations; the worst value for a name the registry does not hold."""
    return METRICS.get(metric).reduction if metric in METRICS else "max"


def per_permutation_mean(metric: str) -> bool:
    """Whether summaries and figures show `metric`'s mean over permutations (a mean or a rate), not its worst."""
    return reduction_of(metric) in ("mean", "rate")
