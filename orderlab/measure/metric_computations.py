"""How each metric the loop measures is computed: one entry per registered name (core/metric_registry.py).

The registry, torch-free at the bottom layer, says what a metric is: its family, the models that write it, the
pooling it compares, whether it has a row per head. The entries here say how its value comes from passes (torch):
`ON_REORDERINGS` from f(X) and a chunk's f(PX), `ON_PROBES` from a probe's two sentences. `record_metrics` and
`record_pair` (the one place the loop's metrics are computed) write, in registration order, the rows of the
metrics that the spec asks for and that the adapter's model writes (its kind and poolings, as the registry
decides). Adding a metric: its registry entry, and its entry here with its function (measure/metrics.py).
A name here that the registry lacks fails at import; a registered metric that nothing computes fails
tests/test_metric_registry.py. The metrics of other passes are computed where those passes run: the position
probe's in measure/probing.py, a train: block's in measure/task_accuracy.py, corpus mode's in measure/corpus.py.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Literal, TypeVar

import torch

from orderlab.core.metric_registry import (
    ATTENTION_EQUIVARIANCE,
    COSINE_CLS,
    COSINE_MEAN,
    EQUIVARIANCE,
    INVARIANCE_CLS,
    INVARIANCE_FIRST,
    INVARIANCE_LAST,
    INVARIANCE_MAX,
    INVARIANCE_MEAN,
    LOGPROB_CHANGE,
    METRIC_NAMES,
    METRICS,
    PAIR_COSINE,
    PAIR_COSINE_CLS,
    PAIR_L2,
    PERMUTATION_PREFERRED,
    PREFIX_INVARIANCE,
    REPEAT_COSINE,
    REPEAT_DISTANCE,
    TOKEN_SHIFT,
    Metric,
    Model,
    Pooling,
    written_by,
)
from orderlab.core.text import repeated_pairs
from orderlab.measure import metrics as M
from orderlab.measure.rows import Collector
from orderlab.spec.schema import Spec

if TYPE_CHECKING:
    from orderlab.models.adapter_protocol import Adapter, Pass

D = TypeVar("D")
Layers = Literal["states", "maps", "last"]  # layers 0..L of the states, 1..L of the attention maps, or L alone


@dataclass(frozen=True)
class Reorderings:
    """What one chunk's per-permutation metrics compare: f(X) (a batch of 1) and f(PX) for B reorderings."""

    reference: Pass
    output: Pass
    slots: torch.Tensor  # (B, n): the reorderings
    matching: torch.Tensor  # (B, n): the word occurrence at each slot
    repeats: torch.Tensor | None  # (B, m, 2): where each pair of same-word occurrences sits; None: no repeated word
    model_slots: torch.Tensor | None  # (B, T): the reorderings on the model's own slots; None: no attention maps


@dataclass(frozen=True)
class ProbePair:
    """What a probe's metrics compare: the single-sentence passes of a and b."""

    a: Pass
    b: Pass
    matching: torch.Tensor | None  # (1, n): b's slots to a's word occurrences, if b reorders a; else None


@dataclass(frozen=True)
class Computation(Generic[D]):
    """How a metric's rows come from what its passes compare (D): its value at one layer, and which rows it writes."""

    value: Callable[[D, int, Pooling | None], torch.Tensor]  # (what, layer, pooling) -> (B,), or (B, h) per head
    layers: Layers = "states"
    applies: Callable[[D], bool] | None = None  # None: always; else whether `what` has what it compares
    rows_where: Callable[[D], torch.Tensor] | None = None  # (B,) bool: rows only for these permutations; None: all


Chosen = list[tuple[Metric, Computation[D]]]


class Table(Generic[D]):
    """The metrics computed from one kind of comparison, in registration order (the order their rows are recorded
    in; the CSVs sort rows by their keys)."""

    def __init__(self, computations: Mapping[str, Computation[D]]):
        for name in computations:
            METRICS.get(name)  # a name the registry lacks fails here, at import
        self.entries = [(METRICS.get(name), computations[name]) for name in METRIC_NAMES if name in computations]
        self._chosen: dict[tuple[frozenset[str], Model, tuple[Pooling, ...]], Chosen[D]] = {}

    def chosen(self, families: Collection[str], model: Model, poolings: tuple[Pooling, ...]) -> Chosen[D]:
        """The entries of `families` that a `model` defining `poolings` writes (worked out once per combination)."""
        key = (frozenset(families), model, poolings)
        chosen = self._chosen.get(key)
        if chosen is None:
            chosen = [(m, c) for m, c in self.entries if m.family in key[0] and written_by(m, model, poolings)]
            self._chosen[key] = chosen
        return chosen

    def record(self, spec: Spec, adapter: Adapter, rows: Collector, what: D, walked: Pass) -> None:
        """The rows of the chosen metrics of `what`, layer by layer of `walked` (the pass whose layers they have)."""
        for metric, computation in self.chosen(spec.metrics, adapter.model, adapter.poolings):
            if computation.applies is not None and not computation.applies(what):
                continue
            keep = computation.rows_where(what) if computation.rows_where is not None else None
            for layer in layers(computation.layers, walked):
                values = computation.value(what, layer, metric.pooling)
                if metric.per_head:
                    for head in range(values.shape[1]):  # values: (B, h)
                        rows.add(metric.name, layer, values[:, head], head)
                elif keep is not None:
                    rows.add_where(keep, metric.name, layer, values)
                else:
                    rows.add(metric.name, layer, values)


def layers(which: Layers, walked: Pass) -> range:
    """The layers a metric has rows for in a pass with L + 1 states (and L attention maps, when asked for)."""
    if which == "maps":
        return range(1, len(walked.attention) + 1)
    states = len(walked.hidden)
    return range(states - 1, states) if which == "last" else range(states)


def vectors(passed: Pass, pooling: Pooling | None, layer: int) -> torch.Tensor:
    """A pass's sentence vectors (B, d) at one layer, pooled as the metric's registry entry says."""
    if pooling is None:
        raise ValueError("a metric of sentence vectors needs a pooling in its registry entry")
    return passed.pooled[pooling][layer]


# --- per permutation ----------------------------------------------------------------------------------


def equivariance(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    return M.equivariance_error(c.output.hidden[layer], c.reference.hidden[layer][0], c.slots)


def pooled_change(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    """Relative L2 change of the pooled sentence vector."""
    return M.relative_l2(vectors(c.reference, pooling, layer)[0], vectors(c.output, pooling, layer))


def pooled_cosine(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    """1 - cos of the pooled sentence vectors."""
    return M.cosine_distance(vectors(c.output, pooling, layer), vectors(c.reference, pooling, layer))


def token_shift(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    return M.token_shift(c.output.hidden[layer], c.reference.hidden[layer][0], c.matching)


def prefix_invariance(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    return M.prefix_invariance_error(c.output.hidden[layer], c.reference.hidden[layer][0])


def keeps_last(c: Reorderings) -> torch.Tensor:
    """(B,): the reorderings that move only the words before the last one."""
    return c.slots[:, -1] == c.slots.shape[1] - 1


def repeat_distance(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    assert c.repeats is not None
    return M.repeated_word_distance(c.output.hidden[layer], c.repeats)


def repeat_cosine(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    assert c.repeats is not None
    return M.repeated_word_distance(c.output.hidden[layer], c.repeats, cosine=True)


def has_repeats(c: Reorderings) -> bool:
    return c.repeats is not None


def logprobs(c: Reorderings) -> tuple[torch.Tensor, torch.Tensor]:
    """log P(PX) (B,) and log P(X) (a scalar)."""
    assert c.output.logprob is not None and c.reference.logprob is not None
    return c.output.logprob, c.reference.logprob[0]


def logprob_change(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    permuted, original = logprobs(c)
    return M.ratio((permuted - original).abs(), original.abs().expand_as(permuted))


def permutation_preferred(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    permuted, original = logprobs(c)
    return (permuted > original).to(permuted.dtype)


def has_logprobs(c: Reorderings) -> bool:
    return c.output.logprob is not None and c.reference.logprob is not None


def attention_equivariance(c: Reorderings, layer: int, pooling: Pooling | None) -> torch.Tensor:
    assert c.model_slots is not None
    return M.attention_equivariance_error(c.output.attention[layer - 1], c.reference.attention[layer - 1][0],
                                          c.model_slots)  # fmt: skip


def has_maps(c: Reorderings) -> bool:
    return c.model_slots is not None


ON_REORDERINGS: Table[Reorderings] = Table({
    EQUIVARIANCE: Computation(equivariance),
    INVARIANCE_MEAN: Computation(pooled_change),
    INVARIANCE_MAX: Computation(pooled_change),
    INVARIANCE_FIRST: Computation(pooled_change),
    INVARIANCE_LAST: Computation(pooled_change),
    INVARIANCE_CLS: Computation(pooled_change),
    COSINE_MEAN: Computation(pooled_cosine),
    COSINE_CLS: Computation(pooled_cosine),
    TOKEN_SHIFT: Computation(token_shift),
    PREFIX_INVARIANCE: Computation(prefix_invariance, rows_where=keeps_last),
    REPEAT_DISTANCE: Computation(repeat_distance, applies=has_repeats),
    REPEAT_COSINE: Computation(repeat_cosine, applies=has_repeats),
    LOGPROB_CHANGE: Computation(logprob_change, "last", has_logprobs),
    PERMUTATION_PREFERRED: Computation(permutation_preferred, "last", has_logprobs),
    ATTENTION_EQUIVARIANCE: Computation(attention_equivariance, "maps", has_maps),
})  # fmt: skip


def record_metrics(
    spec: Spec,
    rows: Collector,
    adapter: Adapter,
    reference: Pass,
    output: Pass,
    slots: torch.Tensor,
    matching: torch.Tensor,
    words: list[str],
    model_slots: torch.Tensor | None,
) -> None:
    """Per-permutation metrics of one chunk: reference is f(X) (batch of 1), output f(PX) for the chunk.

    slots (B, n): the reorderings; matching (B, n): the word occurrence at each slot; words: the sentence's;
    model_slots (B, T): the reorderings on the model's own slots, for attention maps (None without maps).
    """
    chunk = Reorderings(reference, output, slots, matching, repeat_slots(words, matching), model_slots)
    ON_REORDERINGS.record(spec, adapter, rows, chunk, output)


def repeat_slots(words: list[str], matching: torch.Tensor) -> torch.Tensor | None:
    """Where each pair of same-word occurrences of `words` sits in every reordering: (B, m, 2), or None."""
    pairs = repeated_pairs(words)
    if not pairs:
        return None
    where = matching.argsort(dim=1)  # (B, n): where[b, s] = slot that X's occurrence s moved to
    return where[:, torch.tensor(pairs, device=matching.device)]  # (B, m, 2)


# --- per probe pair -----------------------------------------------------------------------------------


def pair_cosine(p: ProbePair, layer: int, pooling: Pooling | None) -> torch.Tensor:
    """1 - cos of a's and b's pooled sentence vectors."""
    return M.cosine_distance(vectors(p.a, pooling, layer), vectors(p.b, pooling, layer))


def pair_l2(p: ProbePair, layer: int, pooling: Pooling | None) -> torch.Tensor:
    """Relative L2 distance of b's pooled sentence vector from a's."""
    return M.relative_l2(vectors(p.a, pooling, layer), vectors(p.b, pooling, layer))


def pair_token_shift(p: ProbePair, layer: int, pooling: Pooling | None) -> torch.Tensor:
    assert p.matching is not None
    return M.token_shift(p.b.hidden[layer], p.a.hidden[layer][0], p.matching)


def reorders(p: ProbePair) -> bool:
    return p.matching is not None


ON_PROBES: Table[ProbePair] = Table({
    PAIR_COSINE: Computation(pair_cosine),
    PAIR_COSINE_CLS: Computation(pair_cosine),
    PAIR_L2: Computation(pair_l2),
    TOKEN_SHIFT: Computation(pair_token_shift, applies=reorders),
})  # fmt: skip


def record_pair(
    spec: Spec, rows: Collector, adapter: Adapter, out_a: Pass, out_b: Pass, matching: list[int] | None
) -> None:
    """Probe metrics of two single-sentence passes; matching maps b's slots to a's word occurrences, if b reorders a."""
    index = None if matching is None else torch.tensor([matching], device=out_a.hidden[0].device)
    ON_PROBES.record(spec, adapter, rows, ProbePair(out_a, out_b, index), out_a)
