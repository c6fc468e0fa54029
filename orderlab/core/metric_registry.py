"""The metric registry: every metric a run writes to a CSV, and the families a spec lists under `metrics:`.

This is the only place a metric or family name is spelled; the code that computes, judges,
counts, orders and documents metrics refers to the constants and records here. Each row metric
says which family produces it, which models write it, the sentence vector it compares (its pooling:
a model writes it only if it defines that pooling), whether it has one row per head, how
summaries reduce it, the word its verdict gives within the measured round-off (and whose
round-off that is: see orderlab/measure/verdicts.py) and its definition in one line. How its value
is computed (torch) lives one layer up, under the same name: orderlab/measure/metric_computations.py. docs/metrics.md
holds `markdown_tables()` verbatim (a test checks it); `python -m orderlab.core.metric_registry`
prints them. Must not import torch, numpy or pandas: spec/schema.py reads the families here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final, Literal

from orderlab.core.registry import Registry

Model = Literal["stack", "pretrained"]  # the synthetic attention stack, or a pretrained (packaged or hf) model
Passing = Literal["equivariant", "invariant", "indistinguishable"]
# How summary.csv and the terminal's summary table reduce a metric over permutations: the worst value ("max"; with
# the mean in `rows: summary`), the mean ("mean": a typical size, whose verdict is the worst value's), the share of
# permutations a 0/1 flag marks ("rate", shown with the count), the corpus statistics ("corpus": mean, median,
# share above the threshold), or nothing ("none": one row per layer already).
Reduction = Literal["max", "mean", "rate", "corpus", "none"]
RATE_COUNT: Final = "permutations"  # summary.csv's column: on a rate's row, how many permutations it is over
# A sentence vector: the mean, element-wise max, first or last of the states over a sentence, or an encoder's [CLS].
Pooling = Literal["mean", "max", "first", "last", "cls"]

BOTH: Final[tuple[Model, ...]] = ("stack", "pretrained")
STACK: Final[tuple[Model, ...]] = ("stack",)
PRETRAINED: Final[tuple[Model, ...]] = ("pretrained",)

# The poolings each kind of model defines (its adapter's `poolings`, read by the run-size estimate too): the stack
# pools over its words; a pretrained encoder over all its tokens (as sentence-transformers) and by its [CLS] state;
# a causal LM by the mean only, since its first token is BOS, the same in every order.
STACK_POOLINGS: Final[tuple[Pooling, ...]] = ("mean", "max", "first", "last")
ENCODER_POOLINGS: Final[tuple[Pooling, ...]] = ("mean", "cls")
CAUSAL_POOLINGS: Final[tuple[Pooling, ...]] = ("mean",)


@dataclass(frozen=True)
class Family:
    """A value of a spec's `metrics:` list: it switches on the row metrics whose `family` it is."""

    name: str
    default: bool  # measured by a spec without a `metrics` key
    doc: str


@dataclass(frozen=True)
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

    @property
    def noise_source(self) -> str:
        """The metric whose measured round-off judges this one's rows."""
        return self.noise_from or self.name


FAMILIES: Registry[Family] = Registry("metric family")
METRICS: Registry[Metric] = Registry("metric")


def _family(name: str, doc: str, default: bool = False) -> str:
    return FAMILIES.register(name, Family(name, default, doc)).name


def _metric(
    name: str, family: str | None, models: tuple[Model, ...], rows: str, doc: str, *, per_head: bool = False,
    reduction: Reduction = "max", passing: Passing | None = "invariant", noise_from: str | None = None,
    pooling: Pooling | None = None,
) -> str:  # fmt: skip
    """Register a row metric; its family and noise source must be registered already."""
    if family is not None:
        FAMILIES.get(family)
    if noise_from is not None:
        METRICS.get(noise_from)
    record = Metric(name, family, models, rows, per_head, reduction, passing, noise_from, pooling, doc)
    return METRICS.register(name, record).name


EQUIVARIANCE_FAMILY: Final = _family("equivariance", "how far the hidden states are from following the words", True)
INVARIANCE_FAMILY: Final = _family("invariance", "how far pooled sentence vectors move when the words move", True)
ATTENTION_FAMILY: Final = _family("attention", "how far each head's attention map is from following the words", True)
TOKEN_SHIFT_FAMILY: Final = _family("token_shift", "how far each word's state moves, words matched by occurrence", True)
PAIR_DISTANCE_FAMILY: Final = _family("pair_distance", "how far apart a probe's two sentences end up", True)
PREFIX_INVARIANCE_FAMILY: Final = _family("prefix_invariance", "whether the last word sees the order before it")
REPEATED_WORDS_FAMILY: Final = _family("repeated_words", "whether two copies of one word can be told apart")
DECODABILITY_FAMILY: Final = _family("decodability", "whether a linear probe can read a token's slot off its state")
LM_LOGPROB_FAMILY: Final = _family("lm_logprob", "whether a causal LM scores a reordering below the original")

# Registration order is the row order of the terminal's summary tables (report.summary_table) and of the docs:
# the default families' stack rows, the other stack rows, the pretrained-only rows, then those never summarised.
EQUIVARIANCE: Final = _metric(
    "equivariance", EQUIVARIANCE_FAMILY, BOTH, "permutation × layer 0..L",
    "`‖H_l(PX) − P H_l(X)‖ / ‖H_l(X)‖`; pretrained: on word states (each word's sub-token states averaged)",
    passing="equivariant",
)  # fmt: skip
INVARIANCE_MEAN: Final = _metric(
    "invariance_mean", INVARIANCE_FAMILY, BOTH, "permutation × layer",
    "`‖pool H_l(PX) − pool H_l(X)‖ / ‖pool H_l(X)‖`, pool = mean over slots (pretrained: over all tokens)",
    pooling="mean",
)  # fmt: skip
INVARIANCE_MAX: Final = _metric(
    "invariance_max", INVARIANCE_FAMILY, STACK, "permutation × layer",
    "as `invariance_mean`, pool = element-wise max over slots", pooling="max",
)  # fmt: skip
INVARIANCE_FIRST: Final = _metric(
    "invariance_first", INVARIANCE_FAMILY, STACK, "permutation × layer", "as `invariance_mean`, pool = the first slot",
    pooling="first",
)  # fmt: skip
INVARIANCE_LAST: Final = _metric(
    "invariance_last", INVARIANCE_FAMILY, STACK, "permutation × layer", "as `invariance_mean`, pool = the last slot",
    pooling="last",
)  # fmt: skip
ATTENTION_EQUIVARIANCE: Final = _metric(
    "attention_equivariance", ATTENTION_FAMILY, BOTH, "permutation × layer 1..L × head",
    "`‖A_l,h(PX) − P A_l,h(X) Pᵀ‖ / ‖A_l,h(X)‖`; pretrained: on sub-token slots (whole words moved)",
    per_head=True, passing="equivariant",
)  # fmt: skip
TOKEN_SHIFT: Final = _metric(
    "token_shift", TOKEN_SHIFT_FAMILY, BOTH, "permutation or probe × layer",
    "mean over slots i of `‖H_l(PX)[i] − H_l(X)[m(i)]‖ / ‖H_l(X)[m(i)]‖`, m matching word occurrences "
    '(the k-th "the" with the k-th "the"); pretrained: on word states',
)  # fmt: skip
PAIR_COSINE: Final = _metric(
    "pair_cosine", PAIR_DISTANCE_FAMILY, BOTH, "probe × layer",
    "`1 − cos(mean H_l(a), mean H_l(b))` for a probe pair (a, b)", pooling="mean",
)  # fmt: skip
PAIR_L2: Final = _metric(
    "pair_l2", PAIR_DISTANCE_FAMILY, BOTH, "probe × layer", "`‖mean H_l(b) − mean H_l(a)‖ / ‖mean H_l(a)‖`",
    pooling="mean",
)  # fmt: skip
PREFIX_INVARIANCE: Final = _metric(
    "prefix_invariance", PREFIX_INVARIANCE_FAMILY, BOTH, "permutation keeping the last word × layer",
    "`‖H_l(PX)[n] − H_l(X)[n]‖ / ‖H_l(X)[n]‖` at the last slot n, for the permutations that keep the last word",
)  # fmt: skip
REPEAT_COSINE: Final = _metric(
    "repeat_cosine", REPEATED_WORDS_FAMILY, BOTH, "permutation × layer, sentences repeating a word",
    "mean over the slot pairs (i, j) holding the same word of `1 − cos(H_l(PX)[i], H_l(PX)[j])`",
    passing="indistinguishable", noise_from=TOKEN_SHIFT,
)  # fmt: skip
REPEAT_DISTANCE: Final = _metric(
    "repeat_distance", REPEATED_WORDS_FAMILY, BOTH, "permutation × layer, sentences repeating a word",
    "mean over the slot pairs (i, j) holding the same word of `‖H_l(PX)[i] − H_l(PX)[j]‖ / ‖H_l(PX)[i]‖`",
    passing="indistinguishable", noise_from=TOKEN_SHIFT,
)  # fmt: skip
COSINE_CLS: Final = _metric(
    "cosine_cls", INVARIANCE_FAMILY, PRETRAINED, "permutation × layer", "`1 − cos(H_l(PX)[CLS], H_l(X)[CLS])`",
    pooling="cls",
)  # fmt: skip
COSINE_MEAN: Final = _metric(
    "cosine_mean", INVARIANCE_FAMILY, PRETRAINED, "permutation × layer",
    "`1 − cos(mean H_l(PX), mean H_l(X))`, means over all tokens", pooling="mean",
)  # fmt: skip
INVARIANCE_CLS: Final = _metric(
    "invariance_cls", INVARIANCE_FAMILY, PRETRAINED, "permutation × layer", "as `invariance_mean`, pool = [CLS]",
    pooling="cls",
)  # fmt: skip
PAIR_COSINE_CLS: Final = _metric(
    "pair_cosine_cls", PAIR_DISTANCE_FAMILY, PRETRAINED, "probe × layer", "`1 − cos(H_l(a)[CLS], H_l(b)[CLS])`",
    pooling="cls",
)  # fmt: skip
LOGPROB_CHANGE: Final = _metric(
    "logprob_change", LM_LOGPROB_FAMILY, PRETRAINED, "permutation × last layer L, causal LMs",
    "`|log P(PX) − log P(X)| / |log P(X)|`, log P the sum of each token's log-probability given the ones before "
    "(after BOS)", reduction="mean",
)  # fmt: skip
PERMUTATION_PREFERRED: Final = _metric(
    "permutation_preferred", LM_LOGPROB_FAMILY, PRETRAINED, "permutation × last layer L, causal LMs",
    "1 when `log P(PX) > log P(X)`, else 0; its mean over permutations, the summary's rate, is the permutation "
    "acceptance of Sinha et al. 2021", reduction="rate", noise_from=LOGPROB_CHANGE,
)  # fmt: skip
POSITION_ACCURACY: Final = _metric(
    "position_accuracy", DECODABILITY_FAMILY, BOTH, "encoding × layer",
    "held-out accuracy of a ridge least-squares probe reading each token's slot off H_l, on seeded random "
    "sentences (the train: task's with `decodability.from_task`); verdict `above chance` when over 3 binomial "
    "standard deviations above chance, else `at chance`",
    reduction="none", passing=None,
)  # fmt: skip
POSITION_CHANCE: Final = _metric(
    "position_chance", DECODABILITY_FAMILY, BOTH, "encoding × layer",
    "1 / length, the probe's chance accuracy; verdict `chance level`", reduction="none", passing=None,
)  # fmt: skip
POSITION_SLOT_ACCURACY: Final = _metric(
    "position_slot_accuracy", DECODABILITY_FAMILY, BOTH, "encoding × layer × slot (column `slot`)",
    "`position_accuracy` over the held-out tokens at one slot; verdict `above chance` when over 3 binomial standard "
    "deviations above 1 / length, else `at chance`", reduction="none", passing=None,
)  # fmt: skip
TASK_ACCURACY: Final = _metric(
    "task_accuracy", None, STACK, "trained encoding × test length",
    "a trained stack's accuracy on its `train:` task over held-out sentences of one length (column `length`); "
    "column `chance`: the task's best order-blind accuracy; verdict `trained length` or `untrained length` "
    "(length generalisation)", reduction="none", passing=None,
)  # fmt: skip
SIMILARITY_MEAN: Final = _metric(
    "similarity_mean", None, PRETRAINED, "corpus sentence × shuffle",
    "`cos(mean H_L(shuffle), mean H_L(sentence))` at the last layer L, attention-masked means over tokens",
    reduction="corpus", passing=None, pooling="mean",
)  # fmt: skip
SIMILARITY_CLS: Final = _metric(
    "similarity_cls", None, PRETRAINED, "corpus sentence × shuffle",
    "`cos(H_L(shuffle)[CLS], H_L(sentence)[CLS])` at the last layer L", reduction="corpus", passing=None,
    pooling="cls",
)  # fmt: skip

FAMILY_NAMES: Final = tuple(FAMILIES.names())
DEFAULT_FAMILIES: Final = tuple(name for name in FAMILY_NAMES if FAMILIES.get(name).default)
METRIC_NAMES: Final = tuple(METRICS.names())


def all_metrics() -> list[Metric]:
    """Every row metric, in registration order."""
    return [METRICS.get(name) for name in METRIC_NAMES]


def metrics_of(family: str, model: Model | None = None, poolings: Collection[Pooling] | None = None) -> list[Metric]:
    """The row metrics `family` switches on, in registration order: all, or those that `model` writes when it
    defines `poolings` (every pooling when None)."""
    FAMILIES.get(family)
    chosen = [m for m in all_metrics() if m.family == family]
    return chosen if model is None else [m for m in chosen if written_by(m, model, poolings)]


def written_by(metric: Metric, model: Model, poolings: Collection[Pooling] | None = None) -> bool:
    """Whether a model of kind `model` that defines `poolings` (every pooling when None) writes `metric`: the metric
    is one of its kind's, and compares its states or a sentence vector it defines."""
    return model in metric.models and (metric.pooling is None or poolings is None or metric.pooling in poolings)


def noise_families(families: Iterable[str]) -> list[str]:
    """`families`, then those whose metrics the round-off pass must also measure to judge them."""
    chosen = list(families)
    sources = [METRICS.get(m.noise_source).family for family in chosen for m in metrics_of(family)]
    return list(dict.fromkeys([*chosen, *(f for f in sources if f is not None)]))


_REDUCTIONS: Final[dict[Reduction, str]] = {
    "max": "worst (max)", "mean": "mean", "rate": "rate (count)", "corpus": "mean, median, share", "none": "none",
}  # fmt: skip


def reduction_of(metric: str) -> Reduction:
    """How summaries reduce `metric` over permutations; the worst value for a name the registry does not hold."""
    return METRICS.get(metric).reduction if metric in METRICS else "max"


def per_permutation_mean(metric: str) -> bool:
    """Whether summaries and figures show `metric`'s mean over permutations (a mean or a rate), not its worst."""
    return reduction_of(metric) in ("mean", "rate")


def markdown_tables() -> str:
    """docs/metrics.md's two reference tables: the families, then every row metric."""
    lines = [
        "| `metrics:` entry | measured by default | rows it writes | what it asks |",
        "| --- | --- | --- | --- |",
    ]
    for family in (FAMILIES.get(name) for name in FAMILY_NAMES):
        written = ", ".join(f"`{m.name}`" for m in all_metrics() if m.family == family.name)
        lines.append(f"| `{family.name}` | {'yes' if family.default else 'no'} | {written} | {family.doc} |")
    lines += [
        "",
        "| metric (CSV name) | definition | one row per | per head | models | summary | verdict |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in all_metrics():
        cells = [f"`{m.name}`", m.doc, m.rows, "yes" if m.per_head else "no", ", ".join(m.models)]
        lines.append("| " + " | ".join([*cells, _REDUCTIONS[m.reduction], _verdict_rule(m)]) + " |")
    return "\n".join(lines) + "\n"


def _verdict_rule(metric: Metric) -> str:
    if metric.passing is None:
        return "not by round-off (see definition)" if metric.family else "no verdict column"
    noise = "" if metric.noise_from is None else f" of `{metric.noise_from}`"
    return f"`{metric.passing}` within the round-off{noise}"


if __name__ == "__main__":
    print(markdown_tables(), end="")
