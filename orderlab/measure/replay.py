"""A chunk's metric values held back, so that only some of its orders go on: escalation per order.

Where an input's round-off line is wider than the resolution somewhere (measure/escalation.py), the loop measures a
chunk in the run's precision into a ChunkRecord instead of its collectors, asks it which orders have a judged value
within such a line (`unresolved`), and replays the others into the rows and the running summary; the unresolved ones
are measured again in the twin's precision. A chunk's values are (B,) tensors, so holding them costs one chunk's
metrics, never its activations. Never prints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

from orderlab.measure.rows import Collector
from orderlab.metrics import METRICS
from orderlab.vocabulary.digest import NoiseKey


@dataclass(frozen=True)
class Call:
    """One `add` (keep None) or `add_where` of a chunk."""

    metric: str
    layer: int
    values: torch.Tensor  # (B,)
    head: int | None = None
    keep: torch.Tensor | None = None  # (B,) bool: the orders add_where gave a value


class ChunkRecord:
    """A Collector that keeps a chunk's calls, to tell its unresolved orders and replay the others elsewhere."""

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.tied: torch.Tensor | None = None

    def add(self, metric: str, layer: int, values: torch.Tensor, head: int | None = None) -> None:
        self.calls.append(Call(metric, layer, values, head))

    def add_where(self, keep: torch.Tensor, metric: str, layer: int, values: torch.Tensor) -> None:
        self.calls.append(Call(metric, layer, values, keep=keep))

    def mark_ties(self, tied: torch.Tensor | None) -> None:
        self.tied = tied

    def unresolved(self, lines: Mapping[NoiseKey, float], size: int) -> torch.Tensor:
        """(B,) bool: the orders with some judged value (a metric with a passing word) within one of `lines`, the
        judged lines wider than the resolution (escalation.unresolvable), keyed by layer, head and noise source.
        A NaN value is non-finite, not unresolved: measuring it again would not resolve it."""
        within = torch.zeros(size, dtype=torch.bool)
        for call in self.calls:
            record = METRICS.get(call.metric)
            if record.passing is None or record.flag is not None:
                continue
            line = lines.get((call.layer, call.head, record.noise_source))
            if line is None:
                continue
            close = (call.values.double() <= line).cpu()
            within |= close if call.keep is None else close & call.keep.cpu()
        return within

    def replay(self, collector: Collector, chosen: torch.Tensor) -> None:
        """The calls, for the orders where chosen (B,) is True only, into `collector` (which expects that many)."""
        collector.mark_ties(None if self.tied is None else self.tied[chosen.to(self.tied.device)])
        for call in self.calls:
            values = call.values[chosen.to(call.values.device)]
            if call.keep is None:
                collector.add(call.metric, call.layer, values, call.head)
            else:
                collector.add_where(call.keep[chosen.to(call.keep.device)], call.metric, call.layer, values)
