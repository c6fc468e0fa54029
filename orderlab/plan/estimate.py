"""What a run will cost, worked out before it starts: one Estimate per sweep combination, from the cost model of
its kind (stack_cost.py for the attention stack, pretrained_cost.py for pretrained models and corpora).

limits.py refuses by these estimates; `orderlab validate --plan` shows them (report/plan_table.py) on a priced
device (`PricedPlan`). Pure and torch-free: must not import torch, numpy or pandas.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from orderlab.plan.cost import DEVICE_START, Cost, Estimate
from orderlab.plan.device import Device, available_memory
from orderlab.plan.patching_cost import PatchingCost
from orderlab.plan.prefix_walk import prefix_walk_pays
from orderlab.plan.pretrained_cost import pretrained_estimate
from orderlab.plan.rates import MEMORY_SHARE
from orderlab.plan.stack_cost import stack_estimate
from orderlab.spec.schema import uses_backend
from orderlab.spec.sweep import plan

if TYPE_CHECKING:
    from orderlab.spec.schema import Spec


def estimate(spec: Spec, spec_file: str | Path, device: Device | None = None) -> list[Estimate]:
    """One estimate per sweep combination (a packaged model's spec is one) on `device` (plan/device.py; None: this
    machine's CPU at the conservative rates); the spec is validated. A causal model's prefix walk is priced once for
    the run (prefix_walk.prefix_walk_pays), as the run decides it (plan/decisions.py)."""
    device = device or Device("cpu", "cpu", available_memory())  # no rates: the name is not read
    if uses_backend(spec):
        walk = prefix_walk_pays(spec, spec_file, device)
        estimates = [pretrained_estimate(configuration.spec, configuration.columns, Path(spec_file), device, walk,
                                         first=index == 0)
                     for index, configuration in enumerate(plan(spec))]  # fmt: skip
    else:
        estimates = [stack_estimate(configuration.spec, configuration.columns, device) for configuration in plan(spec)]
    return with_device_start(estimates, device)


def with_device_start(estimates: list[Estimate], device: Device) -> list[Estimate]:
    """The first combination pays, once a run, for bringing the device up (a GPU's context and libraries)."""
    if not device.start_seconds or not estimates:
        return estimates
    start = Cost(device.start_seconds, DEVICE_START, ("model",), device.name, "a run on the CPU (--device cpu)")
    return [replace(estimates[0], seconds=[start, *estimates[0].seconds]), *estimates[1:]]


@dataclass(frozen=True)
class PricedPlan:
    """`validate --plan`'s data: the run's estimates on a device priced at its measured rate in the spec's dtype."""

    device: Device
    dtype: str
    rates_file: Path  # where the device's rates are cached
    estimates: list[Estimate]
    patching: PatchingCost | None = None  # the spec's patching block (orderlab.api.patch), priced beside the run

    @property
    def on_card(self) -> float:
        """Bytes the run holds on the device: the weights and the largest working set (Python and torch stay on the
        host)."""
        return max(e.weights.amount + e.working.amount for e in self.estimates)

    @property
    def fits(self) -> bool:
        """Whether the run fits the memory free on the device (the host's own check is limits.validate_limits')."""
        return self.device.kind == "cpu" or self.on_card <= MEMORY_SHARE * self.device.memory
