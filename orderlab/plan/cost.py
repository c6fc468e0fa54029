"""What an estimate is made of: a Cost names the spec field that drives it, so a refusal says what to change; an
Estimate is one sweep combination's memory, sequences, time and output. Both cost models (stack_cost.py,
pretrained_cost.py) fill them; limits.py refuses by them; report/plan_table.py shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orderlab.metrics import Model
from orderlab.plan.device import WALK_SHARE, Device
from orderlab.plan.rates import BASE_BYTES, START_SECONDS
from orderlab.spec.sweep import SweptValue

if TYPE_CHECKING:
    from orderlab.spec.yamlsource import FieldPath

ESCALATE: FieldPath = ("escalate",)  # the field of escalation's cost (plan/escalation_cost.py)
# What escalation pays once per model, whatever share of the orders it re-measures: the finer model and its twin built
FINER_BUILD = "building the finer model (once, if any order is re-measured)"
DEVICE_START = "starting the GPU (its context and libraries, once a run)"  # plan/device.py START_SECONDS_ON


@dataclass(frozen=True)
class Cost:
    """One figure of an estimate and the spec field that drives it, so that a refusal names what to change."""

    amount: float  # bytes or seconds
    what: str  # e.g. "weights"
    field: FieldPath  # e.g. ("model", "d_model")
    subject: str  # how the message starts: the field's value, e.g. "1,000,000,000" or "300 words"
    expected: str  # e.g. "a smaller d_model"


@dataclass(frozen=True)
class Estimate:
    """What one sweep combination (or a pretrained-model spec) costs: memory, sequences, time, output."""

    columns: dict[str, SweptValue]  # the combination's swept fields, e.g. {"n_layers": 2}; {} when nothing is swept
    name: str  # how a plan names it: the combination, "" without a sweep, or the pretrained model
    weights: Cost  # bytes held for the whole run
    working: Cost  # bytes of the largest working set beside the weights (a chunk, the probe, the maps)
    chunk_bytes: float  # one chunk's activations at the longest sentence
    sequences: int  # forward passes, every encoding included
    seconds: list[Cost]  # parts that add up, START_SECONDS aside
    metrics_rows: float  # expected: a random rule's draws decide how many keep the last word (prefix_invariance)
    least_rows: float  # however the draws fall
    metrics_bytes: Cost
    attention_rows: float
    attention_bytes: Cost

    @property
    def peak_bytes(self) -> float:
        return BASE_BYTES + self.weights.amount + self.working.amount

    @property
    def total_seconds(self) -> float:
        """At most: escalation priced as if every order were measured again (plan/escalation_cost.py)."""
        return sum(cost.amount for cost in self.seconds)

    @property
    def escalation_seconds(self) -> float:
        """The part of total_seconds that re-measures orders in the twin's precision: a run pays the finer model's
        build if any order needs it and the share of the rest that its orders within round-off need (none where every
        verdict resolves)."""
        return sum(cost.amount for cost in self.seconds if cost.field == ESCALATE)

    def escalation_paid(self, remeasured: float) -> float:
        """What escalation costs at `remeasured` (0 to 1) of the orders measured again."""
        if remeasured <= 0.0:
            return 0.0
        once = sum(cost.amount for cost in self.seconds if cost.field == ESCALATE and cost.what == FINER_BUILD)
        return once + remeasured * (self.escalation_seconds - once)


def run_seconds(estimates: list[Estimate], remeasured: float = 1.0) -> float:
    """The whole run: start-up once, then every combination, with `remeasured` (0 to 1) of the orders measured again
    in the twin's precision (1: at most; 0: where every verdict resolves in the run's own)."""
    return START_SECONDS + sum(
        e.total_seconds - e.escalation_seconds + e.escalation_paid(remeasured) for e in estimates
    )


def forward_seconds(device: Device, model: Model, dtype: str, flops: float, calls: float, layers: int, rate: float,
                    walk: bool = False) -> float:  # fmt: skip
    """Forward passes at the device's measured rate for `dtype`, else at the conservative built-in `rate`; walk: a
    causal LM's prefix walk, which reaches a share of the rate dense passes reach (plan/device.WALK_SHARE)."""
    priced = device.forward_seconds(model, dtype, flops, calls, layers, walk)
    return flops / (rate * (WALK_SHARE if walk else 1.0)) if priced is None else priced
