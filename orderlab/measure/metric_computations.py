"""The one place the loop's metrics are computed: every registered metric with a computation on what a chunk or a
probe compares (orderlab/metrics: one decorated function each), whose family the spec asks for and which the
adapter's model writes (its kind and poolings, as the registry decides), in row order.

The metrics of other passes are computed where those passes run: the position probe's in measure/probing.py, a
train: block's in measure/task_accuracy.py, corpus mode's in measure/corpus.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from orderlab.core.text import repeated_pairs
from orderlab.errors import OrderlabError
from orderlab.metrics import Compares, Computation, Keep, Metric, Needs, computed_on
from orderlab.metrics.inputs import ProbePasses, Reorderings
from orderlab.spec.schema import Spec

if TYPE_CHECKING:
    from orderlab.measure.rows import Collector
    from orderlab.models.adapter_protocol import Adapter, Pass


def has(what: Reorderings | ProbePasses, needs: Needs) -> bool:
    """Whether a chunk (or a probe pair) holds what a computation needs beside its passes."""
    if isinstance(what, ProbePasses):
        if needs == "log-probabilities":
            return what.a.logprob is not None and what.b.logprob is not None
        return needs == "a reordering" and what.matching is not None
    if needs == "repeated words":
        return what.repeats is not None
    if needs == "attention maps":
        return what.model_slots is not None
    return needs == "log-probabilities" and what.output.logprob is not None and what.reference.logprob is not None


def kept_rows(what: Reorderings, keep: Keep) -> torch.Tensor | None:
    """(B,) bool: the reorderings that write rows when only some do (those that keep the last word); None: all."""
    if keep == "every reordering":
        return None
    return what.slots[:, -1] == what.slots.shape[1] - 1


def record(compares: Compares, spec: Spec, adapter: Adapter, rows: Collector, what: Any, walked: Pass) -> None:
    """The rows of the chosen metrics of `what`, layer by layer of `walked` (the pass whose layers they have)."""
    for metric, computation in computed_on(compares, spec.metrics, adapter.model, adapter.poolings):
        if computation.needs is not None and not has(what, computation.needs):
            continue
        keep = kept_rows(what, computation.keep)
        for layer in layers(computation, walked, adapter.n_layers):
            values = checked(metric, layer, computation.value(what, layer, metric.pooling), what)
            if metric.per_head:
                for head in range(values.shape[1]):  # values: (B, h)
                    rows.add(metric.name, layer, values[:, head], head)
            elif keep is not None:
                rows.add_where(keep, metric.name, layer, values)
            else:
                rows.add(metric.name, layer, values)


def checked(metric: Metric, layer: int, values: object, what: Reorderings | ProbePasses) -> torch.Tensor:
    """A computation's values as rows take them: a floating tensor of one value per reordering of the chunk (one for a
    probe pair), per head when the metric is; a plug-in's that are not (a list, ints, one value too few) are one line
    naming the metric, not a traceback from the collectors or rows written against the wrong permutations.
    Non-finite values pass: verdicts count them as non-finite, never as a verdict."""
    rows = 1 if isinstance(what, ProbePasses) else int(what.slots.shape[0])
    noun = "probe pair" if isinstance(what, ProbePasses) else "reordering" if rows == 1 else "reorderings"
    shape = f"({rows}, heads)" if metric.per_head else f"({rows},)"
    where, wanted = f"metric {metric.name!r} at layer {layer}", f"expected a floating-point torch tensor shaped {shape}"
    if not isinstance(values, torch.Tensor) or not values.is_floating_point():
        got = f"a {values.dtype} tensor" if isinstance(values, torch.Tensor) else f"a {type(values).__name__}"
        raise OrderlabError(f"{where} returned {got}; {wanted}")
    if values.dim() != (2 if metric.per_head else 1) or values.shape[0] != rows:
        raise OrderlabError(f"{where} returned values shaped {tuple(values.shape)} for {rows} {noun}; {wanted}")
    return values


def layers(computation: Computation, walked: Pass, n_layers: int) -> range:
    """The layers a metric has rows for in a pass of a model of L = n_layers layers: its L + 1 states, its L attention
    maps (when asked for), or layer L alone (a pass of log-probabilities alone has no states)."""
    if computation.layers == "maps":
        return range(1, len(walked.patterns()) + 1)
    return range(n_layers, n_layers + 1) if computation.layers == "last" else range(len(walked.hidden))


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
    record("reorderings", spec, adapter, rows, chunk, output)


def repeat_slots(words: list[str], matching: torch.Tensor) -> torch.Tensor | None:
    """Where each pair of same-word occurrences of `words` sits in every reordering: (B, m, 2), or None."""
    pairs = repeated_pairs(words)
    if not pairs:
        return None
    where = matching.argsort(dim=1)  # (B, n): where[b, s] = slot that X's occurrence s moved to
    return where[:, torch.tensor(pairs, device=matching.device)]  # (B, m, 2)


def record_pair(
    spec: Spec, rows: Collector, adapter: Adapter, out_a: Pass, out_b: Pass, matching: list[int] | None
) -> None:
    """Probe metrics of two single-sentence passes; matching maps b's slots to a's word occurrences, if b reorders a."""
    index = None if matching is None else torch.tensor([matching], device=adapter.device)
    record("probes", spec, adapter, rows, ProbePasses(out_a, out_b, index), out_a)
